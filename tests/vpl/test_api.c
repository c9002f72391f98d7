/* API-level tests of the VPL engine: what the detect unit relies on beyond the
 * JSON-lines cases (bindings, outputs, default types, error codes, limits, stats,
 * number and string output). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#include "json.h"
#include "rfc3339.h"
#include "value.h"
#include "vpl.h"

struct sink {
    char last[1024];
    char stream[64];
    const char *topic;
    int n;
};

static void collect(void *ud, const char *stream, const char *topic, const char *json,
                    size_t len)
{
    struct sink *s = ud;
    snprintf(s->last, sizeof(s->last), "%.*s", (int)len, json);
    snprintf(s->stream, sizeof(s->stream), "%s", stream);
    s->topic = topic;
    s->n++;
}

static struct vpl_program *compile(const char *src)
{
    struct vpl_program *p = NULL;
    struct vpl_error err;
    if (vpl_program_compile(src, strlen(src), "test.vpl", &p, &err) != 0) {
        fprintf(stderr, "compile failed: %s\n", err.msg);
        check_failures++;
    }
    return p;
}

static int feed(struct vpl_engine *e, const char *json, const char *type, struct sink *s)
{
    return vpl_engine_feed_json(e, json, strlen(json), type, 1000, collect, s);
}

/* Drops the "timestamp" member so the rest can be compared exactly. */
static const char *strip_ts(char *json)
{
    char *t = strstr(json, ",\"timestamp\":\"");
    if (t != NULL) {
        char *end = strchr(t + 14, '"');
        memmove(t, end + 1, strlen(end + 1) + 1);
    }
    return json;
}

static void test_bindings_and_outputs(void)
{
    struct vpl_program *p = compile(
        "connector Bus = nats(url: \"x\")\n"
        "stream Net = Conn.from(Bus, topic: \"ev.net\")\n"
        "stream Proc = ProcStart.from(Bus, topic: \"ev.proc\")\n"
        "stream Quiet = Net.where(port == 445)\n"
        "stream Alert = Quiet.emit(host: host).to(Bus, topic: \"ev.alerts\")\n"
        "stream Other = Proc.emit(image: image)\n");
    if (p == NULL)
        return;
    const struct vpl_binding *b;
    size_t nb = vpl_program_bindings(p, &b);
    CHECK(nb == 2);
    CHECK(nb == 2 && strcmp(b[0].event_type, "Conn") == 0 && strcmp(b[0].topic, "ev.net") == 0);
    CHECK(nb == 2 && strcmp(b[1].event_type, "ProcStart") == 0 &&
          strcmp(b[1].connector, "Bus") == 0);
    const struct vpl_output *o;
    size_t no = vpl_program_outputs(p, &o);
    CHECK(no == 2);
    CHECK(no == 2 && strcmp(o[0].stream, "Alert") == 0 && strcmp(o[0].topic, "ev.alerts") == 0);
    CHECK(no == 2 && strcmp(o[1].stream, "Other") == 0 && o[1].topic == NULL);

    struct vpl_engine *e = NULL;
    CHECK(vpl_engine_create(p, NULL, &e, NULL) == 0);
    struct sink s = {0};
    /* No event_type in the payload: the binding's type given by the host applies. */
    CHECK(feed(e, "{\"port\": 445, \"host\": \"h1\"}", "Conn", &s) == 0);
    CHECK(s.n == 1 && strcmp(s.stream, "Alert") == 0 && s.topic && strcmp(s.topic, "ev.alerts") == 0);
    CHECK(strcmp(strip_ts(s.last), "{\"event_type\":\"Alert\",\"host\":\"h1\"}") == 0);
    /* The payload's event_type wins over the default. */
    CHECK(feed(e, "{\"event_type\": \"ProcStart\", \"image\": \"a.exe\"}", "Conn", &s) == 0);
    CHECK(s.n == 2 && strcmp(s.stream, "Other") == 0 && s.topic == NULL);
    CHECK(feed(e, "{\"port\": 445}", NULL, &s) == 0); /* no type at all: unrouted */
    CHECK(feed(e, "{\"port\": 445", "Conn", &s) == VPL_EJSON);
    CHECK(strstr(vpl_engine_last_error(e), "invalid JSON") != NULL);
    CHECK(feed(e, "", "Conn", &s) == VPL_EJSON);
    CHECK(feed(e, "{\"port\": 445}{}", "Conn", &s) == VPL_EJSON);
    CHECK(feed(e, "{\"a\": \"\xff\"}", "Conn", &s) == VPL_EJSON); /* invalid UTF-8 */
    struct vpl_stats st;
    vpl_engine_stats(e, &st);
    CHECK(st.events == 3 && st.events_unrouted == 1 && st.alerts == 2);
    vpl_engine_destroy(e);
    vpl_program_destroy(p);
}

static void test_values_out(void)
{
    struct vpl_program *p = compile(
        "stream Out = E.emit(f: to_float(n), g: x * 1.0, h: 0.1 + 0.2, i: n, big: big,\n"
        "    s: s, arr: arr, m: m, neg: -0.0, huge: 1.0e308 * 10.0, capped: 1.0e308 * 10.0 ?? -1)\n");
    if (p == NULL)
        return;
    struct vpl_engine *e = NULL;
    CHECK(vpl_engine_create(p, NULL, &e, NULL) == 0);
    struct sink s = {0};
    CHECK(feed(e, "{\"event_type\":\"E\",\"n\":347,\"x\":70.7,\"big\":18446744073709551615,"
                  "\"s\":\"tab\\t quote\\\" \\u00e9 \\ud83d\\ude00 ctl\\u0001\","
                  "\"arr\":[1,2.5,null,true],\"m\":{\"k\":\"v\",\"n\":{\"d\":1}}}",
               NULL, &s) == 0);
    CHECK(strcmp(strip_ts(s.last),
                 "{\"event_type\":\"Out\",\"f\":347.0,\"g\":70.7,\"h\":0.30000000000000004,"
                 "\"i\":347,\"big\":1.8446744073709552e+19,"
                 "\"s\":\"tab\\t quote\\\" \xc3\xa9 \xf0\x9f\x98\x80 ctl\\u0001\","
                 "\"arr\":[1,2.5,null,true],\"m\":{\"k\":\"v\",\"n\":{\"d\":1}},\"neg\":-0.0,"
                 "\"capped\":-1}") == 0); /* an overflow is missing: huge is left out */
    if (check_failures)
        fprintf(stderr, "got %s\n", s.last);
    vpl_engine_destroy(e);
    vpl_program_destroy(p);
}

static void test_limits_and_memory(void)
{
    struct vpl_program *p = compile("stream Pair = A as a -> B where id == a.id as b\n"
                                    "    .within(1h).partition_by(host)\n"
                                    "    .emit(id: a.id)\n");
    if (p == NULL)
        return;
    struct vpl_limits lim = vpl_limits_default();
    lim.max_partitions = 100;
    lim.max_runs_per_partition = 5;
    struct vpl_engine *e = NULL;
    CHECK(vpl_engine_create(p, &lim, &e, NULL) == 0);
    struct sink s = {0};
    char buf[256];
    /* 100 partitions x 5 runs fit; the rest is dropped and counted. */
    for (int i = 0; i < 1000; i++) {
        snprintf(buf, sizeof(buf),
                 "{\"event_type\":\"A\",\"ts\":%d,\"host\":\"h%d\",\"id\":%d,\"pad\":\"%0100d\"}",
                 i, i % 110, i, 0);
        CHECK(feed(e, buf, NULL, &s) == 0);
    }
    struct vpl_stats st;
    vpl_engine_stats(e, &st);
    CHECK(st.open_runs == 500);
    CHECK(st.partitions == 100);
    CHECK(st.partitions_dropped == 10 * 9); /* h100..h109 in each of 9 full rounds */
    CHECK(st.runs_dropped == 1000 - 500 - st.partitions_dropped);
    /* The unread "pad" field is not decoded, so a run costs well under 300 bytes. */
    CHECK(st.state_bytes > 0 && st.state_bytes / st.open_runs < 300);
    printf("state: %llu runs, %llu bytes, %llu bytes/run\n", (unsigned long long)st.open_runs,
           (unsigned long long)st.state_bytes,
           (unsigned long long)(st.state_bytes / st.open_runs));
    /* Completing every run frees every partition. */
    for (int i = 0; i < 1000; i++) {
        snprintf(buf, sizeof(buf), "{\"event_type\":\"B\",\"ts\":%d,\"host\":\"h%d\",\"id\":%d}",
                 2000 + i, i % 110, i);
        CHECK(feed(e, buf, NULL, &s) == 0);
    }
    vpl_engine_stats(e, &st);
    CHECK(s.n == 500);
    CHECK(st.open_runs == 0 && st.partitions == 0 && st.state_bytes == 0);
    /* Runs past their deadline are dropped by the clock. */
    for (int i = 0; i < 50; i++) {
        snprintf(buf, sizeof(buf), "{\"event_type\":\"A\",\"ts\":%d,\"host\":\"h%d\",\"id\":1}",
                 10000 + i, i);
        CHECK(feed(e, buf, NULL, &s) == 0);
    }
    CHECK(feed(e, "{\"event_type\":\"B\",\"ts\":99999999,\"host\":\"zz\"}", NULL, &s) == 0);
    vpl_engine_stats(e, &st);
    CHECK(st.open_runs == 0 && st.partitions == 0 && st.state_bytes == 0);
    vpl_engine_destroy(e);
    vpl_program_destroy(p);
}

/* A run keeps only the fields its later steps and emit read through its alias
 * (host/vpl/keep.c): the 200-byte "pad", which another stream reads (so the decoder
 * keeps it), is not in the runs of the first program. In the second, two sequences
 * and a window hold the same events, each with what it reads of them. */
static void test_capture_fields(void)
{
    const char *pair = "stream Pair = A as a -> B where id == a.id as b\n"
                       "    .within(1h).partition_by(host)\n"
                       "    .emit(id: a.id, n: a.n)\n";
    char src[1024];
    for (int round = 0; round < 2; round++) {
        snprintf(src, sizeof(src), "stream Pad = A.where(pad == \"x\").emit(pad: pad)\n%s%s", pair,
                 round == 0 ? ""
                            : "stream Other = A as a -> C as c\n"
                              "    .within(1h).partition_by(host)\n"
                              "    .emit(pad_len: len(a.pad), host: a.host)\n"
                              "stream Last = A.window(2).aggregate(pad: last(pad), n: last(n)).emit(pad: pad, n: n)\n");
        struct vpl_program *p = compile(src);
        if (p == NULL)
            return;
        struct vpl_engine *e = NULL;
        CHECK(vpl_engine_create(p, NULL, &e, NULL) == 0);
        struct sink s = {0};
        char buf[512];
        for (int i = 0; i < 100; i++) {
            snprintf(buf, sizeof(buf),
                     "{\"event_type\":\"A\",\"ts\":%d,\"host\":\"h%d\",\"id\":%d,\"n\":%d,\"pad\":\"%0200d\"}", i,
                     i, i, i * 2, i);
            CHECK(feed(e, buf, NULL, &s) == 0);
        }
        struct vpl_stats st;
        vpl_engine_stats(e, &st);
        if (round == 0) {
            /* A run (64 bytes), its capture of id and n (24 + 2 x 20), its partition
             * (27): with every field the capture alone would be 307 bytes. */
            CHECK(st.open_runs == 100 && s.n == 0);
            printf("capture fields: %llu bytes per open run\n", (unsigned long long)(st.state_bytes / 100));
            CHECK(st.state_bytes / 100 < 200);
        } else {
            CHECK(st.open_runs == 200 && s.n == 50 && strcmp(s.stream, "Last") == 0);
        }
        CHECK(feed(e, "{\"event_type\":\"B\",\"ts\":200,\"host\":\"h7\",\"id\":7}", NULL, &s) == 0);
        CHECK(strcmp(s.stream, "Pair") == 0 && strcmp(strip_ts(s.last), "{\"event_type\":\"Pair\",\"id\":7,\"n\":14}") == 0);
        if (round == 1) {
            CHECK(feed(e, "{\"event_type\":\"C\",\"ts\":201,\"host\":\"h9\"}", NULL, &s) == 0);
            CHECK(s.n == 52 &&
                  strcmp(strip_ts(s.last), "{\"event_type\":\"Other\",\"pad_len\":200,\"host\":\"h9\"}") == 0);
        }
        if (check_failures)
            fprintf(stderr, "round %d: got %s\n", round, s.last);
        vpl_engine_destroy(e);
        vpl_program_destroy(p);
    }
}

static void test_errors(void)
{
    struct vpl_program *p = NULL;
    struct vpl_error err;
    CHECK(vpl_program_compile("stream S = A .where(x >", 23, NULL, &p, &err) == VPL_ESYNTAX);
    CHECK(p == NULL && err.line == 1 && err.col == 24);
    CHECK(strcmp(err.msg, "1:24: expected an expression, found end of input") == 0);
    const char *src = "event A:\n  x: int\nstream S = B";
    CHECK(vpl_program_compile(src, strlen(src), NULL, &p, &err) == VPL_ESEMANTIC);
    CHECK(strcmp(err.msg, "3:12: unknown event type 'B' (E033)") == 0);
    vpl_program_destroy(NULL);
    vpl_engine_destroy(NULL);
}

/* format_double's shortcuts print what the %.15g/%.16g/%.17g round-trip loop prints:
 * decimals of 1 to 6 places across magnitudes (timestamps in ms with a fraction among
 * them), near-ties at a shorter length (x.x5, x.x05), and random bit patterns. */
static void check_double(double f)
{
    char got[32], want[32];
    if (!isfinite(f))
        return; /* printed as JSON null or NaN/inf by design */
    format_double(f, got, 0);
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(want, sizeof(want), "%.*g", prec, f);
        if (strtod(want, NULL) == f)
            break;
    }
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "format_double(%.17g): %s, the round-trip loop: %s\n", f, got, want);
        check_failures++;
    }
}

static uint64_t xorshift64(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void test_format_double(void)
{
    uint64_t x = 88172645463325252ull;
#define NEXT() xorshift64(&x)
    static const double scale[] = {1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
    for (int i = 0; i < 200000; i++) {
        uint64_t r = NEXT();
        int places = 1 + (int)(r % 6);
        uint64_t mag = NEXT() % 100000000000000000ull; /* up to 17 digits */
        mag /= (uint64_t)scale[NEXT() % 6] * (NEXT() % 1000 + 1);
        double f = (double)mag / scale[places - 1];
        check_double(f);
        check_double(-f);
        check_double(1764400000000.0 + (double)(i % 1000) / 1000.0);
        check_double(nextafter(f, 0));
        uint64_t bits = NEXT();
        double g;
        memcpy(&g, &bits, sizeof(g));
        check_double(g);
    }
#undef NEXT
    for (int i = 0; i < 1000; i++) {
        check_double(i + 0.05);
        check_double(i + 0.005);
        check_double(i * 10 + 0.45);
        check_double(1e12 + i + 0.5);
    }
}

/* decimal_to_double, when it answers, answers what strtod does (bit for bit): random
 * decimals with a sign, leading zeros, up to 21 integer and fraction digits and an
 * exponent; and it does answer for the short decimals payloads carry. */
static void test_decimal_to_double(void)
{
    uint64_t x = 2463534242ull;
    char s[64];
    int answered = 0;
    for (int i = 0; i < 300000; i++) {
        uint64_t r = xorshift64(&x);
        size_t n = 0;
        if (r & 1)
            s[n++] = (r & 2) ? '-' : '+';
        for (int z = (int)((r >> 2) % 4) - 2; z > 0; z--)
            s[n++] = '0';
        for (int d = (int)((r >> 4) % 22); d > 0; d--)
            s[n++] = (char)('0' + xorshift64(&x) % 10);
        if (r & 0x40000) {
            s[n++] = '.';
            for (int d = (int)((r >> 9) % 22); d > 0; d--)
                s[n++] = (char)('0' + xorshift64(&x) % 10);
        }
        if ((r >> 14) % 4 == 0)
            n += (size_t)snprintf(s + n, sizeof(s) - n, "e%d", (int)((r >> 16) % 60) - 30);
        s[n] = '\0';
        double got, want = strtod(s, NULL);
        if (decimal_to_double(s, n, &got)) {
            answered++;
            CHECK(memcmp(&got, &want, sizeof(got)) == 0);
        }
    }
    CHECK(answered > 50000);
    static const char *const plain[] = {"347.00", "0.5", "-12", "1764400000000.123", "9900", "0"};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        double got;
        CHECK(decimal_to_double(plain[i], strlen(plain[i]), &got) && got == strtod(plain[i], NULL));
    }
    double got;
    CHECK(!decimal_to_double("", 0, &got) && !decimal_to_double(".", 1, &got) &&
          !decimal_to_double("1e", 2, &got) && !decimal_to_double("1.5x", 4, &got));
}

/* lower and upper map ASCII letters only, eight bytes a step and one at a time. */
static void test_case_map(void)
{
    struct vpl_program *p = compile("stream Out = E.emit(l: lower(s), u: upper(s))\n");
    if (p == NULL)
        return;
    struct vpl_engine *e = NULL;
    CHECK(vpl_engine_create(p, NULL, &e, NULL) == 0);
    struct sink s = {0};
    CHECK(feed(e, "{\"event_type\":\"E\",\"s\":\"Jane.Doe@ACME.com `az{AZ[@ \u00c9t\u00e9\"}", NULL, &s) == 0);
    CHECK(strcmp(strip_ts(s.last), "{\"event_type\":\"Out\",\"l\":\"jane.doe@acme.com `az{az[@ \xc3\x89t\xc3\xa9\","
                                   "\"u\":\"JANE.DOE@ACME.COM `AZ{AZ[@ \xc3\x89T\xc3\xa9\"}") == 0);
    vpl_engine_destroy(e);
    vpl_program_destroy(p);
}

/* The cached timestamp text is the uncached one, across seconds, days, 1970 and the
 * clamped years. */
static void test_rfc3339_cache(void)
{
    struct rfc3339_cache c = {0};
    static const int64_t from[] = {INT64_C(1764400000000) - 1500, -2500, INT64_C(-62167219200000) - 1500,
                                   INT64_C(253402300800000) - 1500};
    for (size_t f = 0; f < sizeof(from) / sizeof(from[0]); f++)
        for (int64_t ms = from[f]; ms < from[f] + 3000; ms += 7) {
            char got[40], want[40];
            size_t n = rfc3339_format_cached(&c, ms, got);
            CHECK(n == rfc3339_format(ms, want) && strcmp(got, want) == 0);
        }
}

/* Timer records: what the detect unit asks (when the next one is due) and the catch-up
 * bound after a long stop. */
static void test_timers(void)
{
    struct vpl_program *p = compile("stream Beat = timer(1s).emit(at: timestamp)\n"
                                    "stream Late = timer(2s, initial_delay: 500ms).emit(at: timestamp)\n");
    struct vpl_program *none = compile("stream S = E.emit(x: x)\n");
    struct vpl_engine *e = NULL, *n = NULL;
    struct sink s = {0};
    CHECK(vpl_engine_create(p, NULL, &e, NULL) == 0 && vpl_engine_create(none, NULL, &n, NULL) == 0);
    CHECK(vpl_engine_timer_due(n) == INT64_MAX);
    CHECK(vpl_engine_tick(n, VPL_TICK_TIMER, 5000, collect, &s) == 0 && s.n == 0);
    CHECK(vpl_engine_timer_due(e) == INT64_MIN); /* not started */
    CHECK(vpl_engine_tick(e, VPL_TICK_TIMER, 0, collect, &s) == 0 && s.n == 0);
    CHECK(vpl_engine_timer_due(e) == 500); /* Late's initial delay comes first */
    CHECK(vpl_engine_tick(e, VPL_TICK_TIMER, 2600, collect, &s) == 0);
    /* Late at 500, Beat at 1000 and 2000, Late at 2500, in time order. */
    CHECK(s.n == 4 && strcmp(s.stream, "Late") == 0 && strstr(s.last, "\"at\":2500") != NULL);
    CHECK(vpl_engine_timer_due(e) == 3000);
    /* 1000 s later: each timer fires its last 100 instants, no more. */
    s.n = 0;
    CHECK(vpl_engine_tick(e, VPL_TICK_TIMER, 1002600, collect, &s) == 0);
    CHECK(s.n == 200 && strstr(s.last, "\"at\":1002500") != NULL);
    CHECK(vpl_engine_tick(e, 0, 1, collect, &s) == VPL_EINVAL);
    int kind = 0;
    int64_t ms = 0;
    CHECK(vpl_tick_of("{\"@timer\": 42}\n", 15, &kind, &ms) == 1 && kind == VPL_TICK_TIMER && ms == 42);
    CHECK(vpl_tick_of("{\"@tick\":7}", 11, &kind, &ms) == 1 && kind == VPL_TICK_IDLE && ms == 7);
    CHECK(vpl_tick_of("{\"@timer\": 1, \"x\": 2}", 21, &kind, &ms) == 0);
    vpl_engine_destroy(e);
    vpl_engine_destroy(n);
    vpl_program_destroy(p);
    vpl_program_destroy(none);
}

int main(void)
{
    test_format_double();
    test_rfc3339_cache();
    test_decimal_to_double();
    test_case_map();
    test_bindings_and_outputs();
    test_values_out();
    test_limits_and_memory();
    test_capture_fields();
    test_errors();
    test_timers();
    return check_result("vpl api");
}
