#include "trace_hops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../bus/delivery.h" /* GUST_DELIVERY_HEADERS_MAX */
#include "gust/err.h"
#include "recent.h"

#define IN_SLOT (GUST_DELIVERY_HEADERS_MAX + 2)

static int is_trace_header(const char *name)
{
    return strcasecmp(name, GUST_TRACEPARENT) == 0 || strcasecmp(name, GUST_TRACESTATE) == 0;
}

int gust_trace_hops_begin(struct gust_trace_hops *h, const struct gust_in *in, struct gust_msg *msgs, size_t n)
{
    h->ntraced = 0;
    size_t first = n;
    for (size_t i = 0; i < n; i++) {
        if (in[i].traceparent != NULL) {
            first = i;
            break;
        }
    }
    if (first == n) {
        return 0;
    }
    if (n > h->cap) {
        struct gust_trace_hop *v = realloc(h->v, n * sizeof(*v));
        struct gust_header *hd = realloc(h->in_hdrs, n * IN_SLOT * sizeof(*hd));
        h->v = v != NULL ? v : h->v;
        h->in_hdrs = hd != NULL ? hd : h->in_hdrs;
        if (v == NULL || hd == NULL) {
            return GUST_ENOMEM;
        }
        h->cap = n;
    }
    h->start_ns = gust_clock_wall_ns();
    for (size_t i = 0; i < n; i++) {
        struct gust_trace_hop *hop = &h->v[i];
        struct gust_trace_ctx parent;
        hop->on = i >= first && in[i].traceparent != NULL &&
                  gust_trace_parse(in[i].traceparent, strlen(in[i].traceparent), &parent) == 0;
        if (!hop->on) {
            continue;
        }
        h->ntraced++;
        gust_trace_child(&parent, &hop->ctx);
        memcpy(hop->parent, parent.span_id, 8);
        gust_trace_format(&hop->ctx, hop->traceparent);
        hop->tracestate = in[i].tracestate;
        /* Its headers as read, but with the unit's own span as the parent of what
         * the handler calls (a sink's request). */
        struct gust_header *out = h->in_hdrs + i * IN_SLOT;
        size_t k = 0;
        for (size_t j = 0; j < msgs[i].nheaders && k < GUST_DELIVERY_HEADERS_MAX; j++) {
            if (!is_trace_header(msgs[i].headers[j].name)) {
                out[k++] = msgs[i].headers[j];
            }
        }
        out[k++] = (struct gust_header){GUST_TRACEPARENT, hop->traceparent};
        if (hop->tracestate != NULL) {
            out[k++] = (struct gust_header){GUST_TRACESTATE, hop->tracestate};
        }
        msgs[i].headers = out;
        msgs[i].nheaders = k;
    }
    return 0;
}

int gust_trace_hops_reserve(struct gust_trace_hops *h, const struct gust_emits *emits, const size_t *emit_end,
                            size_t n)
{
    h->out_used = 0;
    if (h->ntraced == 0) {
        return 0;
    }
    size_t need = 0;
    for (size_t i = 0; i < n; i++) {
        if (h->v[i].on) {
            for (size_t e = i > 0 ? emit_end[i - 1] : 0; e < emit_end[i]; e++) {
                need += emits->v[e].nheaders + 2;
            }
        }
    }
    if (need > h->out_cap) {
        struct gust_header *p = realloc(h->out_hdrs, need * sizeof(*p));
        if (p == NULL) {
            return GUST_ENOMEM;
        }
        h->out_hdrs = p;
        h->out_cap = need;
    }
    return 0;
}

void gust_trace_hops_emit_headers(struct gust_trace_hops *h, size_t i, const struct gust_header **hdrs,
                                  size_t *nhdrs)
{
    if (h->ntraced == 0 || !h->v[i].on || h->out_used + *nhdrs + 2 > h->out_cap) {
        return;
    }
    const struct gust_trace_hop *hop = &h->v[i];
    struct gust_header *out = h->out_hdrs + h->out_used;
    size_t k = 0;
    for (size_t j = 0; j < *nhdrs; j++) {
        if (!is_trace_header((*hdrs)[j].name)) {
            out[k++] = (*hdrs)[j];
        }
    }
    out[k++] = (struct gust_header){GUST_TRACEPARENT, hop->traceparent};
    if (hop->tracestate != NULL) {
        out[k++] = (struct gust_header){GUST_TRACESTATE, hop->tracestate};
    }
    h->out_used += k;
    *hdrs = out;
    *nhdrs = k;
}

void gust_trace_hops_end(struct gust_trace_hops *h, const char *kind, const char *unit, const struct gust_msg *msgs,
                         size_t n, const uint8_t *fate, const char (*error)[GUST_ERROR_MAX])
{
    if (h->ntraced == 0 || !gust_trace_exporting()) {
        return;
    }
    char name[160];
    snprintf(name, sizeof(name), "%s %s", kind, unit);
    int64_t end = gust_clock_wall_ns();
    for (size_t i = 0; i < n; i++) {
        const struct gust_trace_hop *hop = &h->v[i];
        if (!hop->on) {
            continue;
        }
        struct gust_span s = {.ctx = hop->ctx,
                              .kind = GUST_SPAN_CONSUMER,
                              .start_ns = h->start_ns,
                              .end_ns = end,
                              .name = name,
                              .unit = unit,
                              .subject = msgs[i].subject,
                              .stream_seq = msgs[i].stream_seq,
                              .error = fate[i] == GUST_FATE_OK                ? NULL
                                        : fate[i] == GUST_FATE_PUBLISH_FAILED ? "not stored: publish failed"
                                                                              : error[i]};
        memcpy(s.parent_id, hop->parent, 8);
        gust_trace_export(&s);
    }
}

void gust_trace_hops_free(struct gust_trace_hops *h)
{
    free(h->v);
    free(h->in_hdrs);
    free(h->out_hdrs);
    *h = (struct gust_trace_hops){0};
}
