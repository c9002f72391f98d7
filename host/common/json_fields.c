/* JSON fields read in place (gust/sdk.h): is a payload one JSON object (mqtt_in, every
 * message unless non_json pass), and what are a template's fields (sink templates). yajl
 * did both before, at the price of a parser allocated per message and, for the fields, a
 * copy of the payload and a tree of it; this reads the bytes in place and allocates
 * nothing.
 *
 * It accepts what yajl accepts with its defaults: RFC 8259 values, strings without raw
 * control characters and with well-formed UTF-8 sequences (the same structural check as
 * yajl's), one value with white space around it. Compared with yajl on 3 million random
 * token strings it never accepted what yajl refuses; it refuses two things yajl lets
 * through: a value followed by an unterminated string ('{}"x', a yajl quirk), and
 * nesting deeper than MAX_NEST (no recursion here, and no unbounded stack either). */
#include <string.h>

#include "gust/sdk.h"

#define MAX_NEST 1024

static size_t ws(const unsigned char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) {
        i++;
    }
    return i;
}

static int hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* The string starting after its opening quote at i; returns the index after the closing
 * quote, or 0 when malformed. *escaped: it holds a backslash escape. */
static size_t string_end(const unsigned char *p, size_t i, size_t n, int *escaped)
{
    *escaped = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c == '"') {
            return i + 1;
        }
        if (c < 0x20) {
            return 0;
        }
        if (c == '\\') {
            *escaped = 1;
            if (i + 1 >= n) {
                return 0;
            }
            c = p[i + 1];
            if (c == 'u') {
                if (i + 5 >= n || !hex(p[i + 2]) || !hex(p[i + 3]) || !hex(p[i + 4]) || !hex(p[i + 5])) {
                    return 0;
                }
                i += 6;
            } else if (c && strchr("\"\\/bfnrt", c)) {
                i += 2;
            } else {
                return 0;
            }
            continue;
        }
        size_t more = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : 4;
        if (more == 4 || i + more >= n) {
            return 0;
        }
        for (size_t k = 1; k <= more; k++) {
            if ((p[i + k] >> 6) != 0x2) {
                return 0;
            }
        }
        i += 1 + more;
    }
    return 0;
}

static size_t digits(const unsigned char *p, size_t i, size_t n)
{
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        i++;
    }
    return i;
}

/* A number or a literal at i; returns its end, 0 when malformed. */
static size_t scalar_end(const unsigned char *p, size_t i, size_t n, int *type)
{
    static const char *const lit[] = {"true", "false", "null"};
    static const int lit_type[] = {GUST_JV_TRUE, GUST_JV_FALSE, GUST_JV_NULL};

    for (int k = 0; k < 3; k++) {
        size_t l = strlen(lit[k]);
        if (n - i >= l && memcmp(p + i, lit[k], l) == 0) {
            *type = lit_type[k];
            return i + l;
        }
    }
    *type = GUST_JV_NUMBER;
    size_t s = i + (i < n && p[i] == '-');
    if (s >= n || p[s] < '0' || p[s] > '9') {
        return 0;
    }
    size_t e = p[s] == '0' ? s + 1 : digits(p, s, n);
    if (e < n && p[e] == '.') {
        size_t f = digits(p, e + 1, n);
        if (f == e + 1) {
            return 0;
        }
        e = f;
    }
    if (e < n && (p[e] == 'e' || p[e] == 'E')) {
        size_t x = e + 1 + (e + 1 < n && (p[e + 1] == '+' || p[e + 1] == '-'));
        size_t f = digits(p, x, n);
        if (f == x) {
            return 0;
        }
        e = f;
    }
    return e;
}

/* The key equals name (decoding escapes only when there are any). */
static int key_is(const unsigned char *key, size_t len, int escaped, const char *name)
{
    size_t nl = strlen(name);
    if (!escaped) {
        return len == nl && memcmp(key, name, nl) == 0;
    }
    char buf[256];
    size_t bl;
    return nl < sizeof(buf) && gust_json_unescape((const char *)key, len, buf, sizeof(buf), &bl) == 0 && bl == nl &&
           memcmp(buf, name, nl) == 0;
}

struct key {
    const unsigned char *p;
    size_t len;
    int escaped;
};

/* The value starting at p[i], at depth d (keys[0..d) lead to it): fields it answers. */
static void match(struct gust_json_field *f, size_t nf, const struct key *keys, size_t d, int type,
                  const unsigned char *p, size_t i, size_t end, int escaped)
{
    for (size_t k = 0; k < nf; k++) {
        if (f[k].type != GUST_JV_NONE) {
            continue; /* the first one found counts, as in yajl_tree_get */
        }
        size_t j = 0;
        while (j < d && f[k].path[j] && key_is(keys[j].p, keys[j].len, keys[j].escaped, f[k].path[j])) {
            j++;
        }
        if (j == d && !f[k].path[d]) {
            f[k].type = type;
            f[k].text = type == GUST_JV_STRING ? (const char *)p + i + 1 : (const char *)p + i;
            f[k].len = type == GUST_JV_STRING ? end - i - 2 : end - i;
            f[k].escaped = escaped;
        }
    }
}

int gust_json_scan(const void *data, size_t n, struct gust_json_field *fields, size_t nfields, int *root)
{
    const unsigned char *p = data;
    unsigned char open[MAX_NEST]; /* '{' or '[' per level */
    struct key keys[GUST_JSON_FIELD_DEPTH];
    size_t depth = 0, arrays = 0, i = ws(p, 0, n);
    int type, escaped = 0;

    for (size_t k = 0; k < nfields; k++) {
        fields[k].type = GUST_JV_NONE;
    }
    *root = GUST_JV_NONE;
value:
    if (i >= n) {
        return -1;
    }
    size_t start = i;
    if (p[i] == '{' || p[i] == '[') {
        type = GUST_JV_CONTAINER;
    } else if (p[i] == '"') {
        type = GUST_JV_STRING;
        if (!(i = string_end(p, i + 1, n, &escaped))) {
            return -1;
        }
    } else if (!(i = scalar_end(p, i, n, &type))) {
        return -1;
    }
    if (depth == 0) {
        *root = p[start] == '{' ? GUST_JV_OBJECT : type;
    }
    /* Fields are paths of object keys: nothing under an array can be one. */
    if (nfields && arrays == 0 && depth <= GUST_JSON_FIELD_DEPTH) {
        match(fields, nfields, keys, depth, type, p, start, i, escaped);
    }
    if (type == GUST_JV_CONTAINER) {
        if (depth == MAX_NEST) {
            return -1;
        }
        arrays += p[i] == '[';
        open[depth++] = p[i];
        i = ws(p, i + 1, n);
        if (i < n && p[i] == (open[depth - 1] == '{' ? '}' : ']')) {
            i++;
            arrays -= open[--depth] == '[';
            goto after;
        }
        if (open[depth - 1] == '[') {
            goto value;
        }
        goto key;
    }
after:
    i = ws(p, i, n);
    if (depth == 0) {
        return i == n ? 0 : -1;
    }
    if (i < n && p[i] == ',') {
        i = ws(p, i + 1, n);
        if (open[depth - 1] == '[') {
            goto value;
        }
        goto key;
    }
    if (i < n && p[i] == (open[depth - 1] == '{' ? '}' : ']')) {
        i++;
        arrays -= open[--depth] == '[';
        goto after;
    }
    return -1;
key:
    if (i >= n || p[i] != '"') {
        return -1;
    }
    start = i;
    if (!(i = string_end(p, i + 1, n, &escaped))) {
        return -1;
    }
    if (depth <= GUST_JSON_FIELD_DEPTH) {
        keys[depth - 1] = (struct key){p + start + 1, i - start - 2, escaped};
    }
    i = ws(p, i, n);
    if (i >= n || p[i] != ':') {
        return -1;
    }
    i = ws(p, i + 1, n);
    goto value;
}

static void put_utf8(char *out, size_t *o, unsigned cp)
{
    if (cp < 0x80) {
        out[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*o)++] = (char)(0xC0 | cp >> 6);
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xE0 | cp >> 12);
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*o)++] = (char)(0xF0 | cp >> 18);
        out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static unsigned hex4(const char *s)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char c = (unsigned char)s[k];
        v = v << 4 | (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

int gust_json_unescape(const char *s, size_t len, char *out, size_t outsz, size_t *outlen)
{
    size_t o = 0;

    for (size_t i = 0; i < len;) {
        if (outsz - o < 5) {
            return -1; /* room for the longest piece and the NUL */
        }
        if (s[i] != '\\') {
            out[o++] = s[i++];
            continue;
        }
        char c = s[i + 1];
        i += 2;
        if (c != 'u') {
            out[o++] = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
            continue;
        }
        unsigned cp = hex4(s + i);
        i += 4;
        /* A surrogate pair is one code point; a lone first half becomes '?', as yajl does. */
        if ((cp & 0xFC00) == 0xD800) {
            if (i + 6 <= len && s[i] == '\\' && s[i + 1] == 'u') {
                cp = 0x10000 + ((cp & 0x3FF) << 10 | (hex4(s + i + 2) & 0x3FF));
                i += 6;
            } else {
                cp = '?';
            }
        }
        put_utf8(out, &o, cp);
    }
    out[o] = '\0';
    *outlen = o;
    return 0;
}
