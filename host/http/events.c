/* GET /events[?unit=NAME]: the last events of each unit (host/unit/recent.c), newest
 * first, with their emits and errors. Without unit=, every running unit; with it, that
 * unit, also when a reload removed it (its ring outlives it). */
#include <stdlib.h>
#include <string.h>

#include "../common/json_out.h"
#include "../unit/recent.h"
#include "../unit/units.h"
#include "internal.h"

#define MAX_LISTED 256

static void append_unit(struct gust_buf *out, const char *name, int first)
{
    gust_buf_append(out, first ? "{\"name\":" : ",{\"name\":", first ? 8 : 9);
    gust_json_append_string(out, name, strlen(name));
    gust_buf_append(out, ",\"events\":", 10);
    gust_recent_render(gust_recent_find(name), out);
    gust_buf_append(out, "}", 1);
}

/* A name can be there twice while a reload replaces a unit. */
static int listed(char (*names)[128], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

int gust_events_json(struct gust_http *http, const char *unit, struct gust_buf *out)
{
    int one = unit[0] != '\0';
    /* The names are copied under the registry's lock: a reload may free a unit meanwhile. */
    static char names[MAX_LISTED][128];
    size_t n = 0;
    int known = 0;
    if (http->units != NULL) {
        pthread_mutex_lock(&http->units->lock);
        for (size_t i = 0; i < http->units->n; i++) {
            const char *name = gust_consumer_name(http->units->v[i]);
            if (one) {
                known |= strcmp(name, unit) == 0;
            } else if (n < MAX_LISTED && !listed(names, n, name)) {
                snprintf(names[n++], sizeof(names[0]), "%s", name);
            }
        }
        pthread_mutex_unlock(&http->units->lock);
    }
    if (one && !known && gust_recent_find(unit) == NULL) {
        gust_buf_printf(out, "{\"error\":\"no such unit\"}\n");
        return 404;
    }
    gust_buf_append(out, "{\"units\":[", 10);
    if (one) {
        append_unit(out, unit, 1);
    }
    for (size_t i = 0; i < n; i++) {
        append_unit(out, names[i], i == 0);
    }
    gust_buf_append(out, "]}\n", 3);
    return 200;
}

void gust_events_handle(struct gust_http *http, h2o_req_t *req)
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("GET"));
        gust_http_send_error(req, GUST_ROUTE_EVENTS, 405, "method not allowed");
        return;
    }
    char unit[128] = "";
    if (!gust_http_query(req, "unit", unit, sizeof(unit))) {
        unit[0] = '\0';
    }
    struct gust_buf out = {0};
    int status = gust_events_json(http, unit, &out);
    gust_http_send(req, GUST_ROUTE_EVENTS, status, "application/json", out.data, out.len);
    gust_buf_free(&out);
}
