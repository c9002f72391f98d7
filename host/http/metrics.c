#include "metrics.h"

#include <stdio.h>
#include <unistd.h>

#include "../trace/trace.h"

static const char *const route_names[GUST_ROUTE_COUNT] = {"ingest", "healthz", "metrics", "units",  "events",
                                                          "dlq",    "reload",  "status",  "replay", "other",
                                                          "livez",  "webhook", "call",    "topology", "secrets", "mcp"};

/* Indexed by status - 100; HTTP statuses are 100..599. */
static uint64_t requests[GUST_ROUTE_COUNT][500];

/* Publish latency, request arrival to PubAck, in seconds. */
static const double bucket_le[] = {0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01,
                                   0.025,   0.05,   0.1,   0.25,  1,     5};
#define NBUCKETS (sizeof(bucket_le) / sizeof(bucket_le[0]))
static uint64_t bucket_count[NBUCKETS + 1];
static uint64_t publish_count;
static size_t connections_open;
static uint64_t connections_refused;

void gust_metrics_set_connections(size_t open)
{
    connections_open = open;
}

void gust_metrics_count_refused(void)
{
    connections_refused++;
}
static double publish_sum;

void gust_metrics_count_request(enum gust_route route, int status)
{
    if (status >= 100 && status < 600) {
        requests[route][status - 100]++;
    }
}

void gust_metrics_observe_publish(int64_t micros)
{
    double s = (double)micros / 1e6;
    size_t i = 0;
    while (i < NBUCKETS && s > bucket_le[i]) {
        i++;
    }
    bucket_count[i]++;
    publish_count++;
    publish_sum += s;
}

long gust_metrics_rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE);
}

void gust_metrics_render(struct gust_buf *out, int bus_connected, int bus_healthy, int ingest_connected)
{
    gust_buf_printf(out, "# HELP gust_http_requests_total HTTP requests by route and status.\n"
                         "# TYPE gust_http_requests_total counter\n");
    for (int r = 0; r < GUST_ROUTE_COUNT; r++) {
        for (int s = 0; s < 500; s++) {
            if (requests[r][s] != 0) {
                gust_buf_printf(out, "gust_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                                route_names[r], s + 100, (unsigned long long)requests[r][s]);
            }
        }
    }
    gust_buf_printf(out, "# HELP gust_publish_seconds Ingest publish latency, request to PubAck.\n"
                         "# TYPE gust_publish_seconds histogram\n");
    uint64_t cumulative = 0;
    for (size_t i = 0; i < NBUCKETS; i++) {
        cumulative += bucket_count[i];
        gust_buf_printf(out, "gust_publish_seconds_bucket{le=\"%g\"} %llu\n", bucket_le[i],
                        (unsigned long long)cumulative);
    }
    cumulative += bucket_count[NBUCKETS];
    gust_buf_printf(out,
                    "gust_publish_seconds_bucket{le=\"+Inf\"} %llu\n"
                    "gust_publish_seconds_sum %.6f\n"
                    "gust_publish_seconds_count %llu\n",
                    (unsigned long long)cumulative, publish_sum, (unsigned long long)publish_count);
    gust_buf_printf(out,
                    "# HELP gust_bus_connected 1 when connected to NATS.\n"
                    "# TYPE gust_bus_connected gauge\n"
                    "gust_bus_connected %d\n"
                    "# HELP gust_bus_healthy 1 when connected and JetStream answers.\n"
                    "# TYPE gust_bus_healthy gauge\n"
                    "gust_bus_healthy %d\n"
                    "# HELP gust_ingest_bus_connected 1 when ingest's own NATS connection is up.\n"
                    "# TYPE gust_ingest_bus_connected gauge\n"
                    "gust_ingest_bus_connected %d\n"
                    "# HELP gust_http_connections Open client connections.\n"
                    "# TYPE gust_http_connections gauge\n"
                    "gust_http_connections %zu\n"
                    "# HELP gust_http_connections_refused_total Connections closed at accept (max_connections).\n"
                    "# TYPE gust_http_connections_refused_total counter\n"
                    "gust_http_connections_refused_total %llu\n"
                    "# HELP gust_process_resident_memory_bytes Resident set size.\n"
                    "# TYPE gust_process_resident_memory_bytes gauge\n"
                    "gust_process_resident_memory_bytes %ld\n",
                    bus_connected, bus_healthy, ingest_connected, connections_open,
                    (unsigned long long)connections_refused, gust_metrics_rss_bytes());
    struct gust_trace_stats ts;
    gust_trace_stats(&ts);
    gust_buf_printf(out,
                    "# HELP gust_otlp_spans_exported_total Spans the OTLP collector took.\n"
                    "# TYPE gust_otlp_spans_exported_total counter\n"
                    "gust_otlp_spans_exported_total %llu\n"
                    "# HELP gust_otlp_spans_dropped_total Spans dropped: the queue full or the collector failing.\n"
                    "# TYPE gust_otlp_spans_dropped_total counter\n"
                    "gust_otlp_spans_dropped_total %llu\n"
                    "# HELP gust_otlp_posts_failed_total Batches of spans the collector did not take.\n"
                    "# TYPE gust_otlp_posts_failed_total counter\n"
                    "gust_otlp_posts_failed_total %llu\n"
                    "# HELP gust_otlp_spans_queued Spans waiting for the exporter.\n"
                    "# TYPE gust_otlp_spans_queued gauge\n"
                    "gust_otlp_spans_queued %zu\n",
                    (unsigned long long)ts.exported, (unsigned long long)ts.dropped,
                    (unsigned long long)ts.failed_posts, ts.queued);
}
