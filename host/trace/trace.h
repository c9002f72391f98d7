/* Trace context (W3C traceparent) and the spans Gust exports over OTLP/HTTP JSON.
 *
 * One process-wide exporter: spans are copied into a bounded queue (never blocking: a
 * full queue drops and counts) and one thread of its own sends them in batches to the
 * `otlp { endpoint }`, at least every second. Without an `otlp` block nothing is
 * queued, but trace context still propagates: a traceparent that came in is carried on. */
#ifndef GUST_TRACE_TRACE_H
#define GUST_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"

#define GUST_TRACEPARENT "traceparent"
#define GUST_TRACESTATE "tracestate"
#define GUST_TRACEPARENT_LEN 55 /* "00-" 32 hex "-" 16 hex "-" 2 hex */

struct gust_trace_ctx {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t flags; /* bit 0: sampled */
};

/* 0 when s (len bytes) is a valid version-00 traceparent (or a later version's first
 * 55 characters, as the spec says), else -1. All-zero ids are invalid. */
int gust_trace_parse(const char *s, size_t len, struct gust_trace_ctx *out);
/* out: GUST_TRACEPARENT_LEN characters and a NUL. */
void gust_trace_format(const struct gust_trace_ctx *c, char out[GUST_TRACEPARENT_LEN + 1]);
/* A child of parent: the same trace and flags, a new span id. */
void gust_trace_child(const struct gust_trace_ctx *parent, struct gust_trace_ctx *out);
/* A new trace when the exporter is on and the sample ratio says so: 1 (out filled,
 * sampled), else 0. */
int gust_trace_start_root(struct gust_trace_ctx *out);

/* Whether spans are exported (an otlp block). Cheap: one relaxed load. */
int gust_trace_exporting(void);

enum gust_span_kind { GUST_SPAN_INTERNAL = 1, GUST_SPAN_SERVER = 2, GUST_SPAN_CONSUMER = 5 };

/* One finished span. Strings are copied (cut at their field's size). */
struct gust_span {
    struct gust_trace_ctx ctx; /* its trace, its own span id */
    uint8_t parent_id[8];      /* all zero: a root */
    int kind;                  /* enum gust_span_kind */
    int64_t start_ns, end_ns;  /* Unix ns */
    const char *name;
    const char *unit;    /* NULL for ingest */
    const char *subject;
    uint64_t stream_seq; /* 0: none */
    int http_status;     /* 0: none */
    const char *error;   /* NULL: ok */
};

/* Queues s for export when it is sampled and the exporter runs; drops (and counts) it
 * when the queue is full. Any thread; never blocks on the network. */
void gust_trace_export(const struct gust_span *s);

struct gust_trace_conf {
    const char *endpoint; /* http://host:port/path; NULL: no exporter */
    double sample;        /* 0..1, new traces started at ingest */
    const char *service_name;
};

/* Parses an endpoint (http:// only): 0, or GUST_ECONFIG with err saying why. */
int gust_trace_endpoint_check(const char *url, struct gust_err *err);

/* Starts the exporter thread (once per process). */
int gust_trace_start(const struct gust_trace_conf *conf, struct gust_err *err);
/* Sends what is queued (bounded by a short wait) and stops the thread. */
void gust_trace_stop(void);

struct gust_trace_stats {
    uint64_t exported, dropped, failed_posts;
    size_t queued;
};
void gust_trace_stats(struct gust_trace_stats *out);

#endif
