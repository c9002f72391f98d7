#include "form.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json_out.h"

struct pair {
    size_t key, klen; /* offsets into the decoded text */
    size_t val, vlen;
    size_t index; /* order in the form */
};

struct group {
    size_t first; /* the index of its first pair */
    size_t start; /* in the sorted pairs */
    size_t count;
};

static int hex(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Decodes s[0..len) ('+' and %XX) onto the end of out[*at]; returns the decoded length. */
static size_t decode(const char *s, size_t len, char *out, size_t *at)
{
    size_t start = *at, o = *at;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%' && i + 2 < len && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            out[o++] = (char)(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    *at = o;
    return o - start;
}

/* Splits and decodes every pair of the form; NULL when out of memory. */
static struct pair *split(const char *body, size_t len, char **text, size_t *npairs)
{
    size_t max = 1;
    for (size_t i = 0; i < len; i++) {
        max += body[i] == '&';
    }
    struct pair *p = calloc(max, sizeof(*p));
    *text = malloc(len > 0 ? len : 1);
    if (p == NULL || *text == NULL) {
        free(p);
        free(*text);
        *text = NULL;
        return NULL;
    }
    size_t n = 0, at = 0;
    for (size_t i = 0; i <= len;) {
        const char *amp = i < len ? memchr(body + i, '&', len - i) : NULL;
        size_t end = amp != NULL ? (size_t)(amp - body) : len;
        if (end > i) {
            const char *eq = memchr(body + i, '=', end - i);
            size_t kend = eq != NULL ? (size_t)(eq - body) : end;
            p[n].key = at;
            p[n].klen = decode(body + i, kend - i, *text, &at);
            p[n].val = at;
            p[n].vlen = eq != NULL ? decode(eq + 1, end - kend - 1, *text, &at) : 0;
            p[n].index = n;
            n++;
        }
        i = end + 1;
    }
    *npairs = n;
    return p;
}

/* The decoded text the pairs point into: qsort passes no user data. */
static _Thread_local const char *tl_text;

static int by_key(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(tl_text + x->key, tl_text + y->key, n);
    if (c != 0) {
        return c;
    }
    if (x->klen != y->klen) {
        return x->klen < y->klen ? -1 : 1;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

static int by_first(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

int gust_form_to_json(const char *body, size_t len, struct gust_buf *out, char *why, size_t size)
{
    char *text = NULL;
    size_t n = 0;
    struct pair *p = split(body, len, &text, &n);
    struct group *g = p != NULL ? calloc(n > 0 ? n : 1, sizeof(*g)) : NULL;
    int rc = -1;
    if (g == NULL) {
        snprintf(why, size, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!gust_utf8_valid(text + p[i].key, p[i].klen) || !gust_utf8_valid(text + p[i].val, p[i].vlen)) {
            snprintf(why, size, "form field %zu is not UTF-8 once decoded", i + 1);
            goto done;
        }
    }
    tl_text = text;
    qsort(p, n, sizeof(*p), by_key);
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || p[i].klen != p[i - 1].klen ||
            memcmp(text + p[i].key, text + p[i - 1].key, p[i].klen) != 0) {
            g[ng++] = (struct group){.first = p[i].index, .start = i, .count = 0};
        }
        g[ng - 1].count++;
    }
    qsort(g, ng, sizeof(*g), by_first);
    int bad = gust_buf_append(out, "{", 1);
    for (size_t k = 0; k < ng && bad == 0; k++) {
        const struct pair *q = &p[g[k].start];
        bad |= k > 0 ? gust_buf_append(out, ",", 1) : 0;
        bad |= gust_json_append_string(out, text + q->key, q->klen);
        bad |= gust_buf_append(out, g[k].count > 1 ? ":[" : ":", g[k].count > 1 ? 2 : 1);
        for (size_t j = 0; j < g[k].count && bad == 0; j++) {
            bad |= j > 0 ? gust_buf_append(out, ",", 1) : 0;
            bad |= gust_json_append_string(out, text + q[j].val, q[j].vlen);
        }
        bad |= g[k].count > 1 ? gust_buf_append(out, "]", 1) : 0;
    }
    bad |= bad == 0 ? gust_buf_append(out, "}", 1) : 0;
    if (bad != 0) {
        snprintf(why, size, "out of memory");
        goto done;
    }
    rc = 0;
done:
    free(g);
    free(p);
    free(text);
    return rc;
}

char *gust_form_payload(const char *body, size_t len, size_t *out_len)
{
    char *text = NULL;
    size_t n = 0;
    struct pair *p = split(body, len, &text, &n);
    char *v = NULL;
    if (p != NULL && n == 1 && p[0].klen == 7 && memcmp(text + p[0].key, "payload", 7) == 0) {
        v = malloc(p[0].vlen + 1);
        if (v != NULL) {
            memcpy(v, text + p[0].val, p[0].vlen);
            v[p[0].vlen] = '\0';
            *out_len = p[0].vlen;
        }
    }
    free(p);
    free(text);
    return v;
}
