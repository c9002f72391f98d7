/* Lua -> JSON: a hand-written encoder into a growable buffer, the hot path of every
 * emit. yajl_gen would add a state check per call and prints doubles with %.17g
 * (70.700000000000003), so numbers would need their own code anyway. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "flow_int.h"

struct enc {
    lua_State *L;
    const struct gust_json_tags *tags;
    struct gust_buf *b;
    size_t start; /* b->len before this text: max bounds what comes after */
    locale_t c_locale;
    const struct gust_json_enc *cfg;
    unsigned tables; /* encoded so far, for the deadline's checks */
};

/* Tables that share subtables encode each share again: 30 tables can make a text of
 * 2^30 values. So the text has a bound, and the time limit is checked as it grows. */
#define ENC_CHECK_TABLES 1024

static void grow(struct enc *e, size_t need)
{
    if (e->cfg->max > 0 && e->b->len - e->start + need > e->cfg->max) {
        luaL_error(e->L, "the JSON text would be over %lu bytes", (unsigned long)e->cfg->max);
    }
    if (gust_buf_reserve(e->b, need) != 0) {
        luaL_error(e->L, "not enough memory");
    }
}

/* The check is inline: it runs for every piece of every emit. */
static inline void reserve(struct enc *e, size_t need)
{
    if (e->b->cap - e->b->len < need) {
        grow(e, need);
    }
}

static inline void put(struct enc *e, const char *s, size_t n)
{
    reserve(e, n);
    memcpy(e->b->data + e->b->len, s, n);
    e->b->len += n;
}

/* Shortest fixed-point text for a non-integral double: the smallest k such that
 * m = round(|x| * 10^k) gives m / 10^k == |x|. IEEE division is correctly rounded,
 * as is strtod, so that text reads back as exactly x. Below 2^51 for |x| * 10^k the
 * rounding of the product cannot hide a shorter k; above, the check still makes the
 * result exact, only perhaps not the shortest. Returns 0 when no k <= 17 fits in
 * 2^53 (very small or very precise numbers). */
static size_t fmt_fixed(double x, char *out)
{
    double ax = fabs(x);
    double p = 1;
    for (int k = 1; k <= 17; k++) {
        p *= 10; /* powers of ten up to 1e22 are exact */
        double y = ax * p;
        if (y >= 9007199254740992.0) {
            return 0;
        }
        double m = nearbyint(y);
        if (m / p != ax) {
            continue;
        }
        char digits[24];
        size_t nd = gust_u64_dec((uint64_t)m, digits);
        size_t n = 0;
        if (x < 0) {
            out[n++] = '-';
        }
        if (nd <= (size_t)k) { /* 0.000ddd */
            out[n++] = '0';
            out[n++] = '.';
            for (size_t z = nd; z < (size_t)k; z++) {
                out[n++] = '0';
            }
            memcpy(out + n, digits, nd);
            n += nd;
        } else {
            memcpy(out + n, digits, nd - k);
            n += nd - k;
            out[n++] = '.';
            memcpy(out + n, digits + nd - k, k);
            n += k;
        }
        while (out[n - 1] == '0') { /* a larger k may carry trailing zeros */
            n--;
        }
        return n;
    }
    return 0;
}

size_t gust_json_fmt_number(double x, char *out, locale_t c_locale)
{
    if (!isfinite(x)) {
        return 0;
    }
    /* Integral values print as integers (ids, counts, cents, 1e15) up to 2^53, where
     * every integer is exact; above, the digits would be the double's noise. */
    if (x >= -9007199254740992.0 && x <= 9007199254740992.0) {
        int64_t v = (int64_t)x;
        if ((double)v == x) {
            if (v < 0 || (v == 0 && signbit(x))) { /* -0 is a value of its own */
                out[0] = '-';
                return 1 + gust_u64_dec((uint64_t)0 - (uint64_t)v, out + 1);
            }
            return gust_u64_dec((uint64_t)v, out);
        }
        size_t n = fmt_fixed(x, out);
        if (n > 0) {
            return n;
        }
    }
    /* Rare: huge, tiny or 17-digit values. The shortest %g precision from 15 up
     * that reads back exactly (%g drops trailing zeros, so below 15 digits this is
     * already the shortest, subnormals aside), in the C locale so the decimal point
     * is a '.'. */
    locale_t old = uselocale(c_locale);
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, 32, "%.*g", prec, x);
        if (strtod_l(out, NULL, c_locale) == x) {
            break;
        }
    }
    uselocale(old);
    return (size_t)n;
}

/* 0: copy as is; 1: needs an escape; 2: first byte of a multi-byte UTF-8 sequence. */
/* clang-format off */
static const unsigned char byte_class[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* '\\' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
};
/* clang-format on */

/* Length of the well-formed UTF-8 sequence at s, or 0: no overlong form, no
 * surrogate, nothing above U+10FFFF (Unicode's table 3-7), the rule the decoder
 * applies to its input, so what goes out is always UTF-8 and what came in can go out
 * again. Only non-ASCII bytes get here. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf; /* the range of the second byte */
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (c == 0xe0) {
        lo = 0xa0;
    } else if (c == 0xed) {
        hi = 0x9f;
    } else if (c == 0xf0) {
        lo = 0x90;
    } else if (c == 0xf4) {
        hi = 0x8f;
    }
    if (n == 0 || n > avail || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < n; i++) {
        if ((s[i] >> 6) != 0x2) {
            return 0;
        }
    }
    return n;
}

static void put_string(struct enc *e, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    struct gust_buf *b = e->b;
    /* Invariant: before byte i, the buffer has room for the rest of the input plus
     * the closing quote; only escapes need more. */
    reserve(e, len + 2);
    b->data[b->len++] = '"';
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        while (i < len && byte_class[s[i]] == 0) {
            i++;
        }
        memcpy(b->data + b->len, s + start, i - start);
        b->len += i - start;
        if (i == len) {
            break;
        }
        if (byte_class[s[i]] == 2) {
            size_t n = utf8_seq_len(s + i, len - i);
            if (n == 0) {
                luaL_error(e->L, "cannot encode a string that is not valid UTF-8");
            }
            memcpy(b->data + b->len, s + i, n);
            b->len += n;
            i += n;
            continue;
        }
        reserve(e, 6 + (len - i));
        unsigned char c = s[i++];
        char *o = b->data + b->len;
        o[0] = '\\';
        /* Pairs of (character, escape letter); only '"', '\\' and control characters
         * get here, and each first occurs at the start of its pair. */
        const char *pair = strchr("\"\"\\\\\nn\rr\tt\bb\ff", c);
        if (pair != NULL && c != '\0') {
            o[1] = pair[1];
            b->len += 2;
        } else {
            o[1] = 'u';
            o[2] = '0';
            o[3] = '0';
            o[4] = "0123456789abcdef"[c >> 4];
            o[5] = "0123456789abcdef"[c & 0xf];
            b->len += 6;
        }
    }
    b->data[b->len++] = '"';
}

static void put_number(struct enc *e, double x)
{
    reserve(e, 32);
    size_t n = gust_json_fmt_number(x, e->b->data + e->b->len, e->c_locale);
    if (n == 0) {
        luaL_error(e->L, "cannot encode NaN or infinity");
    }
    e->b->len += n;
}

static void encode_value(struct enc *e, int idx, int depth);

static void encode_array(struct enc *e, int idx, size_t n, int depth)
{
    put(e, "[", 1);
    for (size_t i = 1; i <= n; i++) {
        if (i > 1) {
            put(e, ",", 1);
        }
        lua_rawgeti(e->L, idx, (int)i);
        encode_value(e, lua_gettop(e->L), depth + 1); /* a hole encodes as null */
        lua_pop(e->L, 1);
    }
    put(e, "]", 1);
}

static void encode_object(struct enc *e, int idx, int depth)
{
    lua_State *L = e->L;
    int first = 1;
    put(e, "{", 1);
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        if (!first) {
            put(e, ",", 1);
        }
        first = 0;
        /* lua_tolstring would convert a number key in place and break lua_next. */
        switch (lua_type(L, -2)) {
        case LUA_TSTRING: {
            size_t len;
            const char *k = lua_tolstring(L, -2, &len);
            put_string(e, k, len);
            break;
        }
        case LUA_TNUMBER: {
            put(e, "\"", 1);
            put_number(e, lua_tonumber(L, -2));
            put(e, "\"", 1);
            break;
        }
        default:
            luaL_error(L, "cannot encode an object key of type %s", luaL_typename(L, -2));
        }
        put(e, ":", 1);
        encode_value(e, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    put(e, "}", 1);
}

/* n when the keys of the table at idx are exactly 1..n, n > 0; otherwise 0. Stops at
 * the first key that is not a positive integer, so an object costs one step. */
static size_t sequence_length(lua_State *L, int idx)
{
    size_t count = 0;
    double max = 0;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        double k;
        if (lua_type(L, -2) != LUA_TNUMBER || (k = lua_tonumber(L, -2)) < 1 || k != floor(k)) {
            lua_pop(L, 2);
            return 0;
        }
        if (k > max) {
            max = k;
        }
        count++;
        lua_pop(L, 1);
    }
    return (double)count == max ? count : 0;
}

static void encode_table(struct enc *e, int idx, int depth)
{
    lua_State *L = e->L;
    if (depth >= GUST_JSON_MAX_DEPTH) {
        luaL_error(L, "cannot encode a table nested more than %d deep (does it contain itself?)",
                   GUST_JSON_MAX_DEPTH);
    }
    luaL_checkstack(L, 4, "nested too deeply");
    if (++e->tables % ENC_CHECK_TABLES == 0 && e->cfg->check != NULL) {
        e->cfg->check(L, e->cfg->check_ud);
    }
    const void *mt = NULL;
    if (lua_getmetatable(L, idx)) {
        mt = lua_topointer(L, -1);
        lua_pop(L, 1);
    }
    if (mt == e->tags->array) {
        encode_array(e, idx, lua_objlen(L, idx), depth);
    } else if (mt == e->tags->object) {
        encode_object(e, idx, depth);
    } else {
        size_t n = sequence_length(L, idx);
        if (n > 0) {
            encode_array(e, idx, n, depth);
        } else {
            encode_object(e, idx, depth);
        }
    }
}

static void encode_value(struct enc *e, int idx, int depth)
{
    lua_State *L = e->L;
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        put(e, "null", 4);
        return;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, idx)) {
            put(e, "true", 4);
        } else {
            put(e, "false", 5);
        }
        return;
    case LUA_TNUMBER:
        put_number(e, lua_tonumber(L, idx));
        return;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        put_string(e, s, len);
        return;
    }
    case LUA_TTABLE:
        encode_table(e, idx, depth);
        return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == NULL) { /* the null sentinel */
            put(e, "null", 4);
            return;
        }
        break;
    case LUA_TUSERDATA:
        if (lua_getmetatable(L, idx)) {
            const void *mt = lua_topointer(L, -1);
            lua_pop(L, 1);
            if (mt == e->tags->bignum) {
                const char *text = lua_touserdata(L, idx);
                put(e, text, strlen(text));
                return;
            }
        }
        break;
    }
    luaL_error(L, "cannot encode a %s value", luaL_typename(L, idx));
}

void gust_json_encode_into(lua_State *L, int idx, struct gust_json_enc *enc, struct gust_buf *out)
{
    struct enc e = {
        .L = L, .tags = &enc->tags, .b = out, .start = out->len, .c_locale = enc->c_locale, .cfg = enc};
    if (idx < 0) {
        idx = lua_gettop(L) + idx + 1;
    }
    encode_value(&e, idx, 0);
}

void gust_json_encode(lua_State *L, int idx, struct gust_json_enc *enc)
{
    gust_json_encode_into(L, idx, enc, &enc->buf);
}
