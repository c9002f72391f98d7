/* The ingest body check: yajl for the grammar, gust_json_text_check for what yajl lets
 * through (json_text.h), and a depth count from yajl's container events. */
#include "json_check.h"

#include <stdio.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "../common/json_text.h"

struct depth {
    size_t now, max;
};

static int on_open(void *ctx)
{
    struct depth *d = ctx;
    return d->max == 0 || ++d->now <= d->max; /* 0 stops the parse: yajl_status_client_canceled */
}

static int on_close(void *ctx)
{
    struct depth *d = ctx;
    d->now--;
    return 1;
}

static const yajl_callbacks depth_callbacks = {
    .yajl_start_map = on_open,
    .yajl_end_map = on_close,
    .yajl_start_array = on_open,
    .yajl_end_array = on_close,
};

int gust_json_object_valid(const char *body, size_t len, size_t max_depth, char *why, size_t why_size)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n')) {
        i++;
    }
    if (i == len || body[i] != '{') {
        snprintf(why, why_size, "body must be a JSON object");
        return 0;
    }
    struct gust_json_text t;
    int text = gust_json_text_check(body, len, &t);
    if (text < 0) {
        snprintf(why, why_size, "invalid JSON: %s at byte %zu", t.why, t.at);
        return 0;
    }
    if (text > 0) {
        snprintf(why, why_size,
                 "invalid JSON: a \\u escape of a lone surrogate (half of a UTF-16 pair, not a character) at byte %zu",
                 t.lone_at);
        return 0;
    }
    struct depth d = {0, max_depth};
    yajl_handle h = yajl_alloc(max_depth > 0 ? &depth_callbacks : NULL, NULL, &d);
    if (h == NULL) {
        snprintf(why, why_size, "out of memory");
        return 0;
    }
    yajl_status st = yajl_parse(h, (const unsigned char *)body, len);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(h);
    }
    int ok = st == yajl_status_ok;
    if (st == yajl_status_client_canceled) {
        snprintf(why, why_size, "JSON nested deeper than %zu arrays and objects (max_depth) at byte %zu", max_depth,
                 yajl_get_bytes_consumed(h) - 1);
    } else if (!ok) {
        unsigned char *e = yajl_get_error(h, 0, (const unsigned char *)body, len);
        size_t n = strlen((const char *)e);
        while (n > 0 && (e[n - 1] == '\n' || e[n - 1] == ' ')) {
            n--; /* yajl ends its message with a newline */
        }
        snprintf(why, why_size, "invalid JSON: %.*s", (int)n, (const char *)e);
        yajl_free_error(h, e);
    }
    yajl_free(h);
    return ok;
}
