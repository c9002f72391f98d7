/* host/trace: traceparent parsing and writing (W3C Trace Context), the sample ratio, the
 * OTLP endpoint, and the OTLP/HTTP JSON of a span. */
#include <string.h>

#include "../../../host/trace/trace_int.h"
#include "../../check.h"

static void parse_and_format(void)
{
    struct gust_trace_ctx c;
    const char *good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    CHECK(gust_trace_parse(good, strlen(good), &c) == 0);
    CHECK(c.flags == 1 && c.trace_id[0] == 0x4b && c.span_id[7] == 0xb7);
    char out[GUST_TRACEPARENT_LEN + 1];
    gust_trace_format(&c, out);
    CHECK(strcmp(out, good) == 0, "%s", out);

    struct gust_trace_ctx child;
    gust_trace_child(&c, &child);
    CHECK(memcmp(child.trace_id, c.trace_id, 16) == 0 && memcmp(child.span_id, c.span_id, 8) != 0);
    CHECK(child.flags == 1);

    /* A later version may go on after a '-'; only the known flag is kept. */
    const char *later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-more";
    CHECK(gust_trace_parse(later, strlen(later), &c) == 0 && c.flags == 1);

    static const char *const bad[] = {
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",      /* short */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",   /* 00 is exactly 55 */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     /* zero span id */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     /* upper case */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     /* version ff */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(gust_trace_parse(bad[i], strlen(bad[i]), &c) != 0, "%s", bad[i]);
    }
    /* Without an exporter, no trace is started. */
    CHECK(gust_trace_start_root(&c) == 0);
}

static void ratio_and_endpoint(void)
{
    struct gust_otlp_target t;
    char why[200];
    CHECK(gust_otlp_target_parse("http://127.0.0.1:4318/v1/traces", &t, why, sizeof(why)) == 0);
    CHECK(strcmp(t.host, "127.0.0.1") == 0 && t.port == 4318 && strcmp(t.path, "/v1/traces") == 0);
    CHECK(gust_otlp_target_parse("http://collector", &t, why, sizeof(why)) == 0 && t.port == 80 &&
          strcmp(t.path, "/v1/traces") == 0);
    CHECK(gust_otlp_target_parse("https://collector/v1/traces", &t, why, sizeof(why)) != 0);
    CHECK(gust_otlp_target_parse("http://h:99999/", &t, why, sizeof(why)) != 0);
    CHECK(gust_otlp_target_parse("http://:4318/", &t, why, sizeof(why)) != 0);
}

static void json(void)
{
    struct gust_span_rec s = {.kind = GUST_SPAN_CONSUMER, .start_ns = 1700000000000000000, .end_ns = 1700000000000001000,
                              .stream_seq = 7, .failed = 1};
    memset(s.ctx.trace_id, 0xab, 16);
    memset(s.ctx.span_id, 0x0c, 8);
    memset(s.parent_id, 0x01, 8);
    strcpy(s.name, "flow enrich");
    strcpy(s.unit, "enrich");
    strcpy(s.subject, "ev.in");
    strcpy(s.error, "bad \"input\"");
    struct gust_buf b = {0};
    CHECK(gust_otlp_json(&b, "gust", &s, 1) == 0);
    CHECK(gust_buf_append(&b, "", 1) == 0);
    const char *j = b.data;
    CHECK(strstr(j, "\"traceId\":\"abababababababababababababababab\"") != NULL, "%s", j);
    CHECK(strstr(j, "\"spanId\":\"0c0c0c0c0c0c0c0c\"") != NULL);
    CHECK(strstr(j, "\"parentSpanId\":\"0101010101010101\"") != NULL);
    CHECK(strstr(j, "\"startTimeUnixNano\":\"1700000000000000000\"") != NULL);
    CHECK(strstr(j, "\"kind\":5") != NULL);
    CHECK(strstr(j, "{\"key\":\"gust.stream_seq\",\"value\":{\"intValue\":\"7\"}}") != NULL);
    CHECK(strstr(j, "\"status\":{\"code\":2,\"message\":\"bad \\\"input\\\"\"}") != NULL, "%s", j);
    CHECK(strstr(j, "\"service.name\",\"value\":{\"stringValue\":\"gust\"}") != NULL);
    char why[200];
    CHECK(gust_json_check(b.data, b.len - 1, NULL, NULL, why, sizeof(why)) == GUST_JSON_OBJECT, "%s", why);
    gust_buf_free(&b);
}

int main(void)
{
    parse_and_format();
    ratio_and_endpoint();
    json();
    return check_result("trace");
}
