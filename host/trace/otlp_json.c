/* Spans as an OTLP/HTTP JSON ExportTraceServiceRequest: ids as lowercase hex, times as
 * decimal strings of Unix ns, enums as numbers (the OTLP JSON mapping). */
#include <inttypes.h>
#include <string.h>

#include "trace_int.h"

#define LIT(out, s) gust_buf_append(out, s, sizeof(s) - 1)

static int attr_str(struct gust_buf *out, int *first, const char *key, const char *value)
{
    if (value == NULL || value[0] == '\0') {
        return 0;
    }
    int rc = gust_buf_printf(out, "%s{\"key\":\"%s\",\"value\":{\"stringValue\":", *first ? "" : ",", key);
    *first = 0;
    rc = rc ? rc : gust_json_append_string(out, value, strlen(value));
    return rc ? rc : LIT(out, "}}");
}

static int attr_int(struct gust_buf *out, int *first, const char *key, uint64_t value)
{
    int rc = gust_buf_printf(out, "%s{\"key\":\"%s\",\"value\":{\"intValue\":\"%" PRIu64 "\"}}", *first ? "" : ",",
                             key, value);
    *first = 0;
    return rc;
}

static int span(struct gust_buf *out, const struct gust_span_rec *s)
{
    char trace[33], id[17], parent[17];
    gust_trace_hex(s->ctx.trace_id, 16, trace);
    gust_trace_hex(s->ctx.span_id, 8, id);
    gust_trace_hex(s->parent_id, 8, parent);
    int root = memcmp(s->parent_id, "\0\0\0\0\0\0\0\0", 8) == 0;
    int rc = gust_buf_printf(out, "{\"traceId\":\"%s\",\"spanId\":\"%s\",%s%s%s\"name\":", trace, id,
                             root ? "" : "\"parentSpanId\":\"", root ? "" : parent, root ? "" : "\",");
    rc = rc ? rc : gust_json_append_string(out, s->name, strlen(s->name));
    rc = rc ? rc
            : gust_buf_printf(out,
                              ",\"kind\":%d,\"startTimeUnixNano\":\"%" PRId64 "\",\"endTimeUnixNano\":\"%" PRId64
                              "\",\"attributes\":[",
                              s->kind, s->start_ns, s->end_ns);
    int first = 1;
    rc = rc ? rc : attr_str(out, &first, "gust.unit", s->unit);
    rc = rc ? rc : attr_str(out, &first, "messaging.destination.name", s->subject);
    if (s->stream_seq != 0) {
        rc = rc ? rc : attr_int(out, &first, "gust.stream_seq", s->stream_seq);
    }
    if (s->http_status != 0) {
        rc = rc ? rc : attr_int(out, &first, "http.response.status_code", s->http_status);
    }
    rc = rc ? rc : LIT(out, "],\"status\":{");
    if (s->failed) {
        rc = rc ? rc : LIT(out, "\"code\":2,\"message\":");
        rc = rc ? rc : gust_json_append_string(out, s->error, strlen(s->error));
    } else {
        rc = rc ? rc : LIT(out, "\"code\":1");
    }
    return rc ? rc : LIT(out, "}}");
}

int gust_otlp_json(struct gust_buf *out, const char *service_name, const struct gust_span_rec *v, size_t n)
{
    int rc = gust_buf_printf(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
                                  "\"value\":{\"stringValue\":");
    rc = rc ? rc : gust_json_append_string(out, service_name, strlen(service_name));
    rc = rc ? rc : gust_buf_printf(out, "}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"gust\"},\"spans\":[");
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = i > 0 ? LIT(out, ",") : 0;
        rc = rc ? rc : span(out, &v[i]);
    }
    return rc ? rc : LIT(out, "]}]}]}");
}
