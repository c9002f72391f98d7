/* Counters for /metrics. Written on the event-loop thread only, except where noted. */
#ifndef GUST_HTTP_METRICS_H
#define GUST_HTTP_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"

enum gust_route {
    GUST_ROUTE_INGEST,
    GUST_ROUTE_HEALTHZ,
    GUST_ROUTE_METRICS,
    GUST_ROUTE_UNITS,
    GUST_ROUTE_EVENTS,
    GUST_ROUTE_DLQ,
    GUST_ROUTE_RELOAD,
    GUST_ROUTE_STATUS,
    GUST_ROUTE_REPLAY,
    GUST_ROUTE_OTHER,
    GUST_ROUTE_LIVEZ,
    GUST_ROUTE_WEBHOOK,
    GUST_ROUTE_CALL,
    GUST_ROUTE_TOPOLOGY,
    GUST_ROUTE_SECRETS,
    GUST_ROUTE_MCP,
    GUST_ROUTE_COUNT
};

void gust_metrics_count_request(enum gust_route route, int status);
void gust_metrics_observe_publish(int64_t micros);
/* Connections: open now, and refused at accept because of max_connections. */
void gust_metrics_set_connections(size_t open);
void gust_metrics_count_refused(void);
/* The process's resident set (gust_process_resident_memory_bytes). */
long gust_metrics_rss_bytes(void);
/* Appends the Prometheus text of the HTTP and process metrics. */
void gust_metrics_render(struct gust_buf *out, int bus_connected, int bus_healthy, int ingest_connected);

#endif
