/* GET /topology: the console's one source of data (the page at / polls it; other tools
 * may draw it too). The graph and its rates come from the unit layer's sampler
 * (unit/topology.c), run here on the loop every GUST_TOPO_INTERVAL_MS; the gauges are
 * the numbers /metrics and /units already show, read from where they live:
 *
 *   store    the streams' sizes and max_bytes (bus/retention.c), store_full
 *   dlq      the dead-letter stream's messages (the same)
 *   bus      connected, healthy (answering JetStream), ingest_link
 *   memory   the process's RSS (metrics.c) and each flow's Lua heap and memory_max
 *   cluster  the leases and the nodes, as /units shows them (with `cluster on;`)
 *
 * `?spark=0` leaves out the sparklines (a 15-minute history per node). */
#include <stdlib.h>
#include <string.h>

#include "../bus/bus.h"
#include "../bus/ingest_link.h"
#include "../common/log.h"
#include "../unit/topology.h"
#include "../unit/units.h"
#include "internal.h"
#include "webhooks.h"

#define MAX_EXTRA 257 /* ingest and up to 256 webhooks drawn */

/* The producers the front owns: the ingest route, then each webhook. */
static size_t front_producers(struct gust_http *http, struct gust_topo_extra *x, size_t max)
{
    const char *state = gust_ingest_link_connected(http->ingest_bus) ? "running" : "failing";
    size_t n = 0;
    x[n++] = (struct gust_topo_extra){
        .kind = "ingest", .name = "ingest", .state = state, .tally = &http->ingested, .only = NULL};
    const struct gust_webhooks *w = gust_http_policy(http)->webhooks;
    for (size_t i = 0; w != NULL && i < w->n && n < max; i++) {
        x[n++] = (struct gust_topo_extra){.kind = "webhook",
                                          .name = w->hooks[i].name,
                                          .state = state,
                                          .tally = &http->webhooked,
                                          .only = w->hooks[i].subject};
    }
    return n;
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    struct gust_http *http = (struct gust_http *)((char *)entry - offsetof(struct gust_http, topology_tick));
    struct gust_topo_extra x[MAX_EXTRA];
    size_t n = front_producers(http, x, MAX_EXTRA);
    gust_topology_sample(http->topology, http->units, x, n, gust_clock_mono_ms());
    h2o_timeout_link(http->ctx.loop, &http->topology_timeout, &http->topology_tick);
}

void gust_topology_init(struct gust_http *http)
{
    gust_tally_init(&http->ingested);
    gust_tally_init(&http->webhooked);
    http->topology = gust_topology_create();
    h2o_timeout_init(http->ctx.loop, &http->topology_timeout, GUST_TOPO_INTERVAL_MS);
    http->topology_tick.cb = on_tick;
    if (http->topology == NULL || http->units == NULL) {
        gust_warn("http: GET /topology has no rates: out of memory");
        return;
    }
    /* The first sample now: rates are known from the first poll on. */
    on_tick(&http->topology_tick);
}

void gust_topology_stop(struct gust_http *http)
{
    if (h2o_timeout_is_linked(&http->topology_tick)) {
        h2o_timeout_unlink(&http->topology_tick);
    }
}

static void render_gauges(struct gust_http *http, struct gust_buf *out)
{
    gust_buf_append(out, ",\"gauges\":{\"store\":{", 20);
    gust_bus_render_store_json(http->bus, out);
    gust_buf_printf(
        out, "},\"bus\":{\"connected\":%s,\"healthy\":%s,\"ingest_link\":%s},\"memory\":{\"rss_bytes\":%ld,",
        gust_bus_connected(http->bus) ? "true" : "false", gust_bus_healthy(http->bus) ? "true" : "false",
        gust_ingest_link_connected(http->ingest_bus) ? "true" : "false", gust_metrics_rss_bytes());
    gust_topology_render_flow_memory(http->units, out);
    gust_buf_append(out, "}", 1);
    gust_buf_append(out, ",\"cluster\":", 11);
    gust_http_render_cluster(http, out);
    gust_buf_append(out, "}", 1);
}

int gust_topology_json(struct gust_http *http, int spark, struct gust_buf *out)
{
    if (http->topology == NULL || http->units == NULL) {
        gust_buf_printf(out, "{\"error\":\"the topology is not available (out of memory)\"}\n");
        return 503;
    }
    struct gust_topo_extra x[MAX_EXTRA];
    size_t n = front_producers(http, x, MAX_EXTRA);
    gust_buf_append(out, "{", 1);
    gust_topology_render(http->topology, http->units, x, n, http->dlq_prefix, spark, out);
    render_gauges(http, out);
    gust_buf_append(out, "}\n", 2);
    return 200;
}

void gust_topology_handle(struct gust_http *http, h2o_req_t *req)
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("GET"));
        gust_http_send_error(req, GUST_ROUTE_TOPOLOGY, 405, "method not allowed");
        return;
    }
    char spark[8] = "1";
    gust_http_query(req, "spark", spark, sizeof(spark));
    struct gust_buf out = {0};
    int status = gust_topology_json(http, strcmp(spark, "0") != 0, &out);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    gust_http_send(req, GUST_ROUTE_TOPOLOGY, status, "application/json", out.data, out.len);
    gust_buf_free(&out);
}
