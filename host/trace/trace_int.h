/* Inside host/trace: what its files share. */
#ifndef GUST_TRACE_INT_H
#define GUST_TRACE_INT_H

#include "../common/buf.h"
#include "trace.h"

/* The queued form of a span: fixed size, strings copied. */
struct gust_span_rec {
    struct gust_trace_ctx ctx;
    uint8_t parent_id[8];
    uint8_t kind;
    uint8_t failed;
    uint16_t http_status;
    int64_t start_ns, end_ns;
    uint64_t stream_seq;
    char name[80];
    char unit[64];
    char subject[128];
    char error[160];
};

double gust_trace_sample_ratio(void);
void gust_trace_new_span_id(uint8_t out[8]);
/* n bytes as 2n lowercase hex digits and a NUL. */
void gust_trace_hex(const uint8_t *b, size_t n, char *out);

/* The OTLP/HTTP JSON body (ExportTraceServiceRequest) of n spans. 0 or GUST_ENOMEM. */
int gust_otlp_json(struct gust_buf *out, const char *service_name, const struct gust_span_rec *v, size_t n);

/* One HTTP/1.1 POST of body to the endpoint (parsed into host, port, path), bounded by
 * timeout_ms. 0 when the collector answered 2xx, else -1 with why. */
struct gust_otlp_target {
    char host[256];
    int port;
    char path[512];
};
int gust_otlp_target_parse(const char *url, struct gust_otlp_target *out, char *why, size_t whysz);
int gust_otlp_post(const struct gust_otlp_target *t, const char *body, size_t len, int64_t timeout_ms, char *why,
                   size_t whysz);

#endif
