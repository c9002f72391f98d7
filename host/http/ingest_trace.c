#include "ingest_trace.h"

#include <string.h>
#include <strings.h>

#include "gust/sdk.h"

/* The single value of header name, or NULL (absent, or given twice: W3C says to
 * ignore a traceparent given twice). */
static const h2o_iovec_t *one_header(h2o_req_t *req, const char *name, size_t len)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, len, -1);
    if (i < 0 || h2o_find_header_by_str(&req->headers, name, len, i) >= 0) {
        return NULL;
    }
    return &req->headers.entries[i].value;
}

void gust_ingest_trace_begin(h2o_req_t *req, struct gust_pub_msg *m, struct gust_ingest_trace *t)
{
    t->on = 0;
    const h2o_iovec_t *tp = one_header(req, H2O_STRLIT(GUST_TRACEPARENT));
    struct gust_trace_ctx parent;
    if (tp != NULL && gust_trace_parse(tp->base, tp->len, &parent) == 0) {
        gust_trace_child(&parent, &t->ctx);
        memcpy(t->parent, parent.span_id, 8);
    } else if (gust_trace_start_root(&t->ctx)) {
        memset(t->parent, 0, 8);
    } else {
        return;
    }
    t->on = 1;
    t->start_ns = gust_clock_wall_ns();
    /* The caller's headers (a webhook's kept ones) without any trace header of theirs,
     * then ours. */
    const h2o_iovec_t *ts = tp != NULL ? one_header(req, H2O_STRLIT(GUST_TRACESTATE)) : NULL;
    struct gust_header *h = h2o_mem_alloc_pool(&req->pool, (m->nheaders + 2) * sizeof(*h));
    size_t n = 0;
    for (size_t i = 0; i < m->nheaders; i++) {
        if (strcasecmp(m->headers[i].name, GUST_TRACEPARENT) != 0 &&
            strcasecmp(m->headers[i].name, GUST_TRACESTATE) != 0) {
            h[n++] = m->headers[i];
        }
    }
    char *value = h2o_mem_alloc_pool(&req->pool, GUST_TRACEPARENT_LEN + 1);
    gust_trace_format(&t->ctx, value);
    h[n++] = (struct gust_header){GUST_TRACEPARENT, value};
    if (ts != NULL && ts->len > 0 && ts->len <= 512 && memchr(ts->base, '\n', ts->len) == NULL &&
        memchr(ts->base, '\r', ts->len) == NULL) {
        h[n++] = (struct gust_header){GUST_TRACESTATE, h2o_strdup(&req->pool, ts->base, ts->len).base};
    }
    m->headers = h;
    m->nheaders = n;
}

void gust_ingest_trace_end(const struct gust_ingest_trace *t, const char *name, const char *subject, uint64_t seq,
                           int http_status, const char *error)
{
    if (!t->on) {
        return;
    }
    struct gust_span s = {.ctx = t->ctx,
                          .kind = GUST_SPAN_SERVER,
                          .start_ns = t->start_ns,
                          .end_ns = gust_clock_wall_ns(),
                          .name = name,
                          .subject = subject,
                          .stream_seq = seq,
                          .http_status = http_status,
                          .error = error};
    memcpy(s.parent_id, t->parent, 8);
    gust_trace_export(&s);
}
