/* gust_json_check and gust_json_each (gust/sdk.h): checking with yajl's event parser,
 * splitting an array into its elements' exact bytes. */
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "gust/sdk.h"
#include "json_text.h"

struct scan {
    int depth;
    const char *const *keys;
    const char *clash;
};

static int on_open(void *ud)
{
    ((struct scan *)ud)->depth++;
    return 1;
}

static int on_close(void *ud)
{
    ((struct scan *)ud)->depth--;
    return 1;
}

static int on_key(void *ud, const unsigned char *key, size_t len)
{
    struct scan *s = ud;

    if (s->depth == 1 && s->keys && !s->clash) {
        for (const char *const *k = s->keys; *k; k++) {
            if (strlen(*k) == len && memcmp(*k, key, len) == 0) {
                s->clash = *k;
            }
        }
    }
    return 1;
}

static const yajl_callbacks scan_callbacks = {
    .yajl_start_map = on_open,
    .yajl_map_key = on_key,
    .yajl_end_map = on_close,
    .yajl_start_array = on_open,
    .yajl_end_array = on_close,
};

static size_t skip_ws(const char *d, size_t len, size_t i)
{
    while (i < len && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n')) {
        i++;
    }
    return i;
}

int gust_json_check(const char *data, size_t len, const char *const *keys, const char **clash, char *why,
                      size_t why_size)
{
    struct scan s = {.keys = keys};
    size_t i = skip_ws(data, len, 0);
    yajl_handle h;
    yajl_status st;
    int kind;

    if (clash) {
        *clash = NULL;
    }
    if (i == len) {
        snprintf(why, why_size, "empty");
        return 0;
    }
    kind = data[i] == '{' ? GUST_JSON_OBJECT : data[i] == '[' ? GUST_JSON_ARRAY : GUST_JSON_SCALAR;
    if (!(h = yajl_alloc(&scan_callbacks, NULL, &s))) {
        snprintf(why, why_size, "out of memory");
        return 0;
    }
    st = yajl_parse(h, (const unsigned char *)data, len);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(h);
    }
    /* What yajl lets through and no flow decodes: \f or \v as white space, UTF-8 that
     * is not well formed (host/common/json_text.h). */
    struct gust_json_text t;
    if (st == yajl_status_ok && gust_json_text_check(data, len, &t) < 0) {
        snprintf(why, why_size, "%s at byte %zu", t.why, t.at);
        yajl_free(h);
        return 0;
    }
    if (st != yajl_status_ok) {
        unsigned char *e = yajl_get_error(h, 0, (const unsigned char *)data, len);
        size_t n = strcspn((const char *)e, "\r\n"); /* its first line: the reason */
        snprintf(why, why_size, "%.*s", (int)n, (const char *)e);
        yajl_free_error(h, e);
        kind = 0;
    }
    yajl_free(h);
    if (kind && clash) {
        *clash = s.clash;
    }
    return kind;
}

int gust_json_each(const char *data, size_t len, int (*fn)(void *ud, const char *elem, size_t elen),
                     void *ud)
{
    size_t i = skip_ws(data, len, 0);

    if (i == len || data[i] != '[') {
        return -1;
    }
    i++;
    for (;;) {
        size_t start = skip_ws(data, len, i), end;
        int depth = 0, in_str = 0, rc;

        if (start >= len || data[start] == ']') {
            return 0; /* [] */
        }
        /* The input is valid JSON: only strings and nesting need tracking. */
        for (i = start; i < len; i++) {
            char ch = data[i];
            if (in_str) {
                if (ch == '\\') {
                    i++;
                } else if (ch == '"') {
                    in_str = 0;
                }
            } else if (ch == '"') {
                in_str = 1;
            } else if (ch == '{' || ch == '[') {
                depth++;
            } else if (ch == '}' || ch == ']') {
                if (depth == 0) {
                    break;
                }
                depth--;
            } else if (ch == ',' && depth == 0) {
                break;
            }
        }
        end = i;
        while (end > start && (data[end - 1] == ' ' || data[end - 1] == '\t' || data[end - 1] == '\r' ||
                               data[end - 1] == '\n')) {
            end--;
        }
        if ((rc = fn(ud, data + start, end - start)) != 0) {
            return rc;
        }
        if (i >= len || data[i] == ']') {
            return 0;
        }
        i++; /* the comma */
    }
}
