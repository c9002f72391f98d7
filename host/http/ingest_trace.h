/* The trace context of an event published by an ingest route (/ingest, /call, a
 * webhook): the request's traceparent, or a new trace when `otlp` is set and sampled.
 * The event is stored with a traceparent naming the ingest span as its parent, and
 * with the request's tracestate. A request without one, with no exporter, costs a
 * header lookup and adds nothing. */
#ifndef GUST_HTTP_INGEST_TRACE_H
#define GUST_HTTP_INGEST_TRACE_H

#ifndef H2O_USE_LIBUV
#define H2O_USE_LIBUV 0
#endif
#include <h2o.h>

#include "../trace/trace.h"
#include "gust/api.h"

struct gust_ingest_trace {
    uint8_t on;
    struct gust_trace_ctx ctx; /* the ingest span */
    uint8_t parent[8];         /* the caller's span, or zeros for a new trace */
    int64_t start_ns;
};

/* *m's headers may be replaced by a copy in the request's pool with traceparent (and
 * tracestate) added. */
void gust_ingest_trace_begin(h2o_req_t *req, struct gust_pub_msg *m, struct gust_ingest_trace *t);
/* The publish's outcome: exports the ingest span (name: "ingest", "call", "webhook"). */
void gust_ingest_trace_end(const struct gust_ingest_trace *t, const char *name, const char *subject, uint64_t seq,
                           int http_status, const char *error);

#endif
