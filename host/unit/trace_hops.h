/* A unit's spans: for each message of a batch that carries a traceparent, a child span
 * of the unit (its id what the message's handler and emits see as traceparent), ended
 * and exported once the message is settled. A batch without trace context costs one
 * pointer test per message. */
#ifndef GUST_UNIT_TRACE_HOPS_H
#define GUST_UNIT_TRACE_HOPS_H

#include <stddef.h>
#include <stdint.h>

#include "../bus/port.h"
#include "../common/emits.h"
#include "../trace/trace.h"
#include "unit.h"

struct gust_trace_hop {
    uint8_t on;
    struct gust_trace_ctx ctx; /* the unit's span */
    uint8_t parent[8];
    char traceparent[GUST_TRACEPARENT_LEN + 1];
    const char *tracestate;
};

struct gust_trace_hops {
    struct gust_trace_hop *v;
    size_t cap, ntraced;
    struct gust_header *in_hdrs; /* per traced message: its headers, traceparent made the unit's */
    size_t in_cap;
    struct gust_header *out_hdrs; /* the traced messages' emits' headers, with traceparent */
    size_t out_cap, out_used;
    int64_t start_ns;
};

/* After the feed handed out in[0..n) and msgs[i] = in[i].msg: starts the spans, and
 * gives each traced message's msgs[i].headers its traceparent (the unit's span), even
 * for a handler that asked for no headers (a sink passes it on). 0 or GUST_ENOMEM (the
 * batch then goes on untraced). */
int gust_trace_hops_begin(struct gust_trace_hops *h, const struct gust_in *in, struct gust_msg *msgs, size_t n);
/* Before the publishes are built: room for the headers of every traced message's emits
 * (they must not move while publishes are in flight). 0 or GUST_ENOMEM. */
int gust_trace_hops_reserve(struct gust_trace_hops *h, const struct gust_emits *emits, const size_t *emit_end,
                            size_t n);
/* Emit em of message i: the headers to publish it with (*hdrs, *nhdrs in and out). */
void gust_trace_hops_emit_headers(struct gust_trace_hops *h, size_t i, const struct gust_header **hdrs,
                                  size_t *nhdrs);
/* The batch is settled: exports each traced message's span, with its fate
 * (enum gust_fate) and, when it failed, its error. */
void gust_trace_hops_end(struct gust_trace_hops *h, const char *kind, const char *unit, const struct gust_msg *msgs,
                         size_t n, const uint8_t *fate, const char (*error)[GUST_ERROR_MAX]);
void gust_trace_hops_free(struct gust_trace_hops *h);

#endif
