/* JSON -> Lua, straight from yajl's parse events onto the Lua stack: no tree in
 * between. An open container sits on the stack (with the pending key above an
 * object), so each value is stored into its parent the moment it is complete.
 *
 * Tables start at the size the last container of the same kind and depth had: the
 * events of one stream share a shape, and growing tables key by key (rehashing at
 * 1, 2, 4, 8 keys) cost about 7% of the whole orders flow. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "../common/json_text.h"
#include "flow_int.h"

/* 2^53: every integer up to this magnitude is exact in a double. */
#define EXACT_INT_MAX 9007199254740992LL

static int fail(struct gust_json_dec *d, const char *why)
{
    d->fail = why;
    return 0; /* makes yajl stop with yajl_status_client_canceled */
}

/* Stores the value on top of the stack into the open container, if any. */
static int add_value(struct gust_json_dec *d)
{
    lua_State *L = d->L;
    if (d->depth == 0) {
        d->done = 1;
    } else if (d->is_array[d->depth - 1]) {
        lua_rawseti(L, -2, ++d->count[d->depth - 1]);
    } else {
        d->count[d->depth - 1]++;
        lua_rawset(L, -3);
    }
    return 1;
}

/* A value at the top level: the first one, and an object if one is wanted. The
 * handle accepts several values (so that it can be reused), this refuses them. */
static int top_allowed(struct gust_json_dec *d, int is_object)
{
    return d->depth > 0 || (!d->done && (is_object || !d->want_object));
}

static int refuse_top(struct gust_json_dec *d)
{
    return fail(d, d->done ? "more than one value" : "expected a JSON object");
}

static int on_null(void *ctx)
{
    struct gust_json_dec *d = ctx;
    if (!top_allowed(d, 0)) {
        return refuse_top(d);
    }
    lua_pushlightuserdata(d->L, NULL);
    return add_value(d);
}

static int on_boolean(void *ctx, int v)
{
    struct gust_json_dec *d = ctx;
    if (!top_allowed(d, 0)) {
        return refuse_top(d);
    }
    lua_pushboolean(d->L, v);
    return add_value(d);
}

static void push_bignum(lua_State *L, const char *s, size_t len)
{
    char *box = lua_newuserdata(L, len + 1);
    memcpy(box, s, len);
    box[len] = '\0';
    lua_pushvalue(L, lua_upvalueindex(GUST_UV_BIGNUM));
    lua_setmetatable(L, -2);
}

/* JSON's grammar is already checked: a number without '.', 'e' or 'E' is an integer. */
static int is_integer_text(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.' || s[i] == 'e' || s[i] == 'E') {
            return 0;
        }
    }
    return 1;
}

/* Whether the mantissa of a number's text (before any exponent) has a non-zero digit. */
static int mantissa_nonzero(const char *s, size_t len)
{
    for (size_t i = 0; i < len && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] >= '1' && s[i] <= '9') {
            return 1;
        }
    }
    return 0;
}

/* Integers (the common case: ids, counts, cents) are accumulated by hand; anything
 * with a fraction or exponent goes through strtod_l in the C locale. A number keeps
 * its value (-0 included) whenever a double holds it: exactly for an integer, to the
 * nearest double otherwise. One a double cannot hold keeps its text in a bignum: an
 * integer beyond 2^53, and a number that overflows to infinity (1e400) or underflows
 * to zero (1e-400; a subnormal such as 5e-324 is a value and stays one). */
static int on_number(void *ctx, const char *s, size_t len)
{
    struct gust_json_dec *d = ctx;
    if (!top_allowed(d, 0)) {
        return refuse_top(d);
    }
    size_t i = (s[0] == '-');
    size_t digits = len - i;
    int integral = is_integer_text(s, len);
    if (integral && digits <= 18) {
        long long v = 0;
        for (; i < len; i++) {
            v = v * 10 + (s[i] - '0');
        }
        if (v <= EXACT_INT_MAX) {
            double x = (double)v;
            lua_pushnumber(d->L, s[0] == '-' ? -x : x); /* -0 stays -0 */
        } else {
            push_bignum(d->L, s, len);
        }
        return add_value(d);
    }
    char tmp[512];
    double x = HUGE_VAL;
    if (!integral && len < sizeof(tmp)) {
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        x = strtod_l(tmp, NULL, d->c_locale);
    }
    if (integral || !isfinite(x) || (x == 0 && mantissa_nonzero(s, len))) {
        push_bignum(d->L, s, len);
    } else {
        lua_pushnumber(d->L, x);
    }
    return add_value(d);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    struct gust_json_dec *d = ctx;
    if (!top_allowed(d, 0)) {
        return refuse_top(d);
    }
    lua_pushlstring(d->L, (const char *)s, len);
    return add_value(d);
}

static int open_container(struct gust_json_dec *d, int is_array)
{
    lua_State *L = d->L;
    if (d->depth == GUST_JSON_MAX_DEPTH) {
        return fail(d, "nested too deeply");
    }
    if (!top_allowed(d, !is_array)) {
        return refuse_top(d);
    }
    /* The table, its pending key and a metatable while it is being set. */
    if (!lua_checkstack(L, 3)) {
        return fail(d, "nested too deeply");
    }
    int hint = d->size_hint[d->depth][is_array];
    lua_createtable(L, is_array ? hint : 0, is_array ? 0 : hint);
    lua_pushvalue(L, lua_upvalueindex(is_array ? GUST_UV_ARRAY : GUST_UV_OBJECT));
    lua_setmetatable(L, -2);
    d->is_array[d->depth] = (unsigned char)is_array;
    d->count[d->depth] = 0;
    d->depth++;
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, 0);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, 1);
}

static int on_map_key(void *ctx, const unsigned char *key, size_t len)
{
    struct gust_json_dec *d = ctx;
    lua_pushlstring(d->L, (const char *)key, len);
    return 1;
}

static int on_end_container(void *ctx)
{
    struct gust_json_dec *d = ctx;
    d->depth--;
    d->size_hint[d->depth][d->is_array[d->depth]] = d->count[d->depth];
    return add_value(d);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number, /* raw text, so no integer is rounded or dropped */
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_end_container,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end_container,
};

void gust_json_dec_release(struct gust_json_dec *d)
{
    if (d->h != NULL) {
        yajl_free(d->h);
        d->h = NULL;
    }
    d->reusable = 0;
    free(d->fixed);
    d->fixed = NULL;
    d->fixed_cap = 0;
}

/* What yajl would let through (json_text.h): refused like any invalid JSON, except lone
 * surrogate escapes, which the text is valid JSON with (RFC 8259 leaves their meaning
 * open, and JavaScript or Python write them): they become U+FFFD, in a copy of the
 * text. Returns the text to parse, or NULL with d->msg set. */
static const char *checked_text(struct gust_json_dec *d, const char *s, size_t len)
{
    struct gust_json_text t;
    int rc = gust_json_text_check(s, len, &t);
    if (rc == 0) {
        return s;
    }
    if (rc < 0) {
        snprintf(d->msg, sizeof(d->msg), "invalid JSON: %s at byte %zu", t.why, t.at);
        return NULL;
    }
    if (d->fixed_cap < len) {
        char *p = realloc(d->fixed, len);
        if (p == NULL) {
            luaL_error(d->L, "not enough memory");
        }
        d->fixed = p;
        d->fixed_cap = len;
    }
    gust_json_text_fix_lone(s, len, d->fixed);
    return d->fixed;
}

/* One handle serves every decode that succeeds: yajl_alloc and yajl_free cost 2.5%
 * of the orders flow. After any failure, or a decode cut short by a Lua error, the
 * handle's state is unknown and it is replaced. */
int gust_json_decode(struct gust_json_dec *d, const char *s, size_t len, int want_object)
{
    if (!d->reusable) {
        gust_json_dec_release(d);
        d->h = yajl_alloc(&callbacks, NULL, d);
        if (d->h == NULL) {
            luaL_error(d->L, "not enough memory");
        }
        yajl_config(d->h, yajl_allow_multiple_values, 1);
    }
    const char *text = checked_text(d, s, len);
    if (text == NULL) {
        return GUST_EINVAL; /* the handle is untouched: it stays reusable */
    }
    s = text;
    d->reusable = 0;
    d->depth = 0;
    d->done = 0;
    d->want_object = want_object;
    d->fail = NULL;

    /* yajl checks UTF-8 in strings by default; comments stay refused. */
    yajl_status st = yajl_parse(d->h, (const unsigned char *)s, len);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(d->h);
    }
    if (st == yajl_status_ok && !d->done) {
        d->fail = "empty input";
        st = yajl_status_error;
    }
    if (st != yajl_status_ok) {
        if (d->fail != NULL) {
            snprintf(d->msg, sizeof(d->msg), "invalid JSON: %s", d->fail);
        } else {
            unsigned char *e = yajl_get_error(d->h, 0, (const unsigned char *)s, len);
            size_t n = strcspn((const char *)e, "\n");
            snprintf(d->msg, sizeof(d->msg), "invalid JSON: %.*s", (int)n, (const char *)e);
            yajl_free_error(d->h, e);
        }
        return GUST_EINVAL;
    }
    d->reusable = 1;
    return 0;
}

/* A bignum is a userdata holding the number's text, NUL-terminated. */
int gust_json_lua_bignum_tostring(lua_State *L)
{
    lua_pushstring(L, lua_touserdata(L, 1));
    return 1;
}

int gust_json_lua_bignum_eq(lua_State *L)
{
    lua_pushboolean(L, strcmp(lua_touserdata(L, 1), lua_touserdata(L, 2)) == 0);
    return 1;
}

/* `..` with a bignum on either side (the other side a string or number). */
int gust_json_lua_bignum_concat(lua_State *L)
{
    for (int i = 1; i <= 2; i++) {
        if (lua_type(L, i) == LUA_TUSERDATA) {
            lua_pushstring(L, lua_touserdata(L, i));
            lua_replace(L, i);
        }
    }
    lua_concat(L, 2);
    return 1;
}
