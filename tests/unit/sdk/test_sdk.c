/* Unit tests of libgust-sdk: the JSON check (kinds, errors, key clashes), array splitting
 * into exact element bytes, string quoting, RFC 3339 time, HTTP header lines, and the
 * publisher and source runner against a fake host API (back-pressure, max_inflight,
 * giving up, outcome callbacks, the schedule). */
#define _GNU_SOURCE /* setenv */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../check.h"

#include "gust/sdk.h"
#include "gust/source.h"


static int check(const char *s, const char *const *keys, const char **clash, char *why)
{
    return gust_json_check(s, strlen(s), keys, clash, why, 160);
}

static void test_check(void)
{
    static const char *const keys[] = {"ts", "tick", NULL};
    const char *clash;
    char why[160];

    CHECK(check(" {\"a\":1} ", NULL, NULL, why) == GUST_JSON_OBJECT, "object");
    CHECK(check("[1,2]", NULL, NULL, why) == GUST_JSON_ARRAY, "array");
    CHECK(check("42", NULL, NULL, why) == GUST_JSON_SCALAR, "number");
    CHECK(check("\"x\"", NULL, NULL, why) == GUST_JSON_SCALAR, "string");
    CHECK(check("", NULL, NULL, why) == 0 && strcmp(why, "empty") == 0, "empty: %s", why);
    CHECK(check("  \n", NULL, NULL, why) == 0, "white space only");
    CHECK(check("{\"a\":", NULL, NULL, why) == 0 && strstr(why, "premature EOF"), "truncated: %s", why);
    CHECK(check("{\"a\":1} x", NULL, NULL, why) == 0 && !strchr(why, '\n'), "trailing garbage: %s", why);
    CHECK(check("{} {}", NULL, NULL, why) == 0, "two values");
    CHECK(check("<html>", NULL, NULL, why) == 0, "html");
    CHECK(check("{\"a\":\"\xff\"}", NULL, NULL, why) == 0, "invalid UTF-8");
    /* What yajl takes and no flow decodes (found by tests/fuzz/fuzz_http_poll.c). */
    CHECK(check("\f1 ", NULL, NULL, why) == 0 && strstr(why, "form feed"), "form feed: %s", why);
    CHECK(check("[1,\v2]", NULL, NULL, why) == 0, "vertical tab");
    CHECK(check("{\"a\":\"\xed\xa0\x80\"}", NULL, NULL, why) == 0, "an encoded surrogate");
    CHECK(check("{\"a\":1} \"x", NULL, NULL, why) == 0 && strstr(why, "not closed"), "open string: %s", why);
    CHECK(check("{\"ts\":1}", keys, &clash, why) == GUST_JSON_OBJECT && clash && strcmp(clash, "ts") == 0,
          "clash ts");
    CHECK(check("{\"x\":{\"ts\":1},\"tsx\":2}", keys, &clash, why) == GUST_JSON_OBJECT && !clash,
          "nested ts is no clash");
    CHECK(check("{\"a\":[{\"tick\":1}],\"tick\":2}", keys, &clash, why) == GUST_JSON_OBJECT && clash &&
              strcmp(clash, "tick") == 0,
          "clash after nesting");
}

struct collect {
    char out[10][64];
    size_t n;
};

static int collect(void *ud, const char *e, size_t len)
{
    struct collect *c = ud;
    snprintf(c->out[c->n++], sizeof(c->out[0]), "%.*s", (int)len, e);
    return c->n == 10 ? 7 : 0;
}

static void test_each(void)
{
    struct collect c = {0};
    const char *a = " [ {\"a\":\"x,]}\\\"\"} , [1,[2]] ,3,\"s\\\\\" ,null,{} ]";

    CHECK(gust_json_each(a, strlen(a), collect, &c) == 0, "split");
    CHECK(c.n == 6, "6 elements, got %zu", c.n);
    CHECK(strcmp(c.out[0], "{\"a\":\"x,]}\\\"\"}") == 0, "element 0: %s", c.out[0]);
    CHECK(strcmp(c.out[1], "[1,[2]]") == 0, "element 1: %s", c.out[1]);
    CHECK(strcmp(c.out[2], "3") == 0, "element 2: %s", c.out[2]);
    CHECK(strcmp(c.out[3], "\"s\\\\\"") == 0, "element 3: %s", c.out[3]);
    CHECK(strcmp(c.out[4], "null") == 0, "element 4: %s", c.out[4]);
    CHECK(strcmp(c.out[5], "{}") == 0, "element 5: %s", c.out[5]);
    memset(&c, 0, sizeof(c));
    CHECK(gust_json_each("[]", 2, collect, &c) == 0 && c.n == 0, "empty array");
    CHECK(gust_json_each(" [ ] ", 5, collect, &c) == 0 && c.n == 0, "empty array with spaces");
    CHECK(gust_json_each("{}", 2, collect, &c) == -1, "not an array");
    memset(&c, 0, sizeof(c));
    CHECK(gust_json_each("[1,2,3,4,5,6,7,8,9,10,11]", 25, collect, &c) == 7 && c.n == 10,
          "stops when fn says so");
}

static void test_quote(void)
{
    struct gust_buf b = {0};
    const char *in = "a\"b\\c\n\x01/";
    CHECK(gust_json_append_string(&b, in, strlen(in)) == 0 && gust_buf_append(&b, "", 1) == 0, "quote");
    CHECK(strcmp(b.data, "\"a\\\"b\\\\c\\n\\u0001/\"") == 0, "quote: %s", b.data);
    gust_buf_free(&b);
}

static void test_http_header(void)
{
    CHECK(gust_http_header_problem("X-Api-Key: s3cret") == NULL, "a header");
    CHECK(gust_http_header_problem("X-Empty:") == NULL, "an empty value");
    CHECK(gust_http_header_problem("NoColon") != NULL, "no colon");
    CHECK(gust_http_header_problem(": value") != NULL, "no name");
    CHECK(gust_http_header_problem("Bad Name: v") != NULL, "a space in the name");
    CHECK(gust_http_header_problem("X-A: v\r\nX-B: w") != NULL, "a line break in the value");
    CHECK(gust_http_header_problem("X-A: v\n") != NULL, "a trailing line break");
    CHECK(gust_http_header_is("content-type: text/plain", "Content-Type"), "any case");
    CHECK(!gust_http_header_is("Content-Type-X: y", "Content-Type"), "the whole name");
    CHECK(!gust_http_header_is("Content", "Content-Type"), "shorter than the name");
}

static void test_rfc3339(void)
{
    char buf[GUST_RFC3339_SIZE];

    CHECK(gust_rfc3339_ms(0, buf) == 24 && strcmp(buf, "1970-01-01T00:00:00.000Z") == 0, "epoch: %s", buf);
    gust_rfc3339_ms(1795996143123LL, buf);
    CHECK(strcmp(buf, "2026-11-29T23:49:03.123Z") == 0, "2026: %s", buf);
    gust_rfc3339_ms(-1, buf);
    CHECK(strcmp(buf, "1969-12-31T23:59:59.999Z") == 0, "before the epoch: %s", buf);
}

/* A fake host: publish refuses with GUST_EAGAIN while `busy`, else keeps the outcome
 * callback to answer later (answer_all), as the bus does. */
static struct {
    pthread_mutex_t lock;
    int busy;
    int inline_ok; /* the outcome comes inside publish, as on the edge path */
    int published;
    gust_publish_done_fn done[4096];
    void *ud[4096];
    int pending;
    char last_log[512];
} fake = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void fake_log(const struct gust_instance *inst, int level, const char *fmt, ...)
{
    (void)inst;
    (void)level;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&fake.lock);
    vsnprintf(fake.last_log, sizeof(fake.last_log), fmt, ap);
    pthread_mutex_unlock(&fake.lock);
    va_end(ap);
}

static int fake_publish(struct gust_instance *inst, const char *subject, const void *data, size_t len,
                        gust_publish_done_fn done, void *ud)
{
    (void)inst;
    (void)subject;
    (void)data;
    (void)len;
    if (fake.inline_ok) {
        done(ud, 0, 1, NULL);
        return 0;
    }
    pthread_mutex_lock(&fake.lock);
    int rc = GUST_EAGAIN;
    if (!fake.busy && fake.pending < 4096) {
        fake.done[fake.pending] = done;
        fake.ud[fake.pending] = ud;
        fake.pending++;
        fake.published++;
        rc = 0;
    }
    pthread_mutex_unlock(&fake.lock);
    return rc;
}

static void answer_all(int status)
{
    pthread_mutex_lock(&fake.lock);
    int n = fake.pending;
    fake.pending = 0;
    pthread_mutex_unlock(&fake.lock);
    for (int i = 0; i < n; i++) {
        fake.done[i](fake.ud[i], status, (uint64_t)i + 1, status ? "refused" : NULL);
    }
}

static const struct gust_host_api fake_api = {
    .struct_size = sizeof(struct gust_host_api),
    .abi_major = 1,
    .log = fake_log,
    .publish = fake_publish,
};

static void note_outcome(void *ud, int status, uint64_t seq, const char *error)
{
    (void)seq;
    (void)error;
    *(int *)ud = status;
}

/* An outcome callback that notes what the publisher had counted when it ran. */
struct seen {
    struct gust_publisher *p;
    int calls;
    uint64_t stored_then;
    uint64_t pending_then;
};

static void note_counts(void *ud, int status, uint64_t seq, const char *error)
{
    (void)status;
    (void)seq;
    (void)error;
    struct seen *s = ud;
    s->calls++;
    s->stored_then = atomic_load(&gust_publisher_counts(s->p)->stored);
    s->pending_then = gust_publisher_wait(s->p, 0);
}

struct sender {
    struct gust_publisher *p;
    int rc[8];
    int n;
};

static void *send_many(void *arg)
{
    struct sender *s = arg;
    for (int i = 0; i < s->n; i++) {
        s->rc[i] = gust_publisher_send(s->p, "ev.x", "{}", 2, INT64_MAX);
    }
    return NULL;
}

static void test_publisher(void)
{
    struct gust_publisher *p = NULL;
    struct gust_publisher_conf pc = {.api = &fake_api, .max_inflight = 2};
    CHECK(gust_publisher_create(&p, &pc, NULL) == 0, "publisher");

    /* max_inflight 2: the third send waits until an outcome comes back. */
    struct sender s = {.p = p, .n = 3};
    pthread_t t;
    pthread_create(&t, NULL, send_many, &s);
    while (gust_publisher_wait(p, 0) < 2) {
        usleep(1000);
    }
    usleep(30000);
    pthread_mutex_lock(&fake.lock);
    int published = fake.published;
    pthread_mutex_unlock(&fake.lock);
    CHECK(published == 2, "held at max_inflight: %d published", published);
    answer_all(0);
    pthread_join(t, NULL);
    CHECK(s.rc[0] == 0 && s.rc[1] == 0 && s.rc[2] == 0, "all three handed over");
    answer_all(0);
    CHECK(atomic_load(&gust_publisher_counts(p)->stored) == 3, "3 stored");

    /* The bus says EAGAIN: retried until it takes it. */
    fake.busy = 1;
    s = (struct sender){.p = p, .n = 1};
    pthread_create(&t, NULL, send_many, &s);
    usleep(50000);
    fake.busy = 0;
    pthread_join(t, NULL);
    CHECK(s.rc[0] == 0, "handed over once the bus had room");
    answer_all(1);
    CHECK(atomic_load(&gust_publisher_counts(p)->failed) == 1, "a refused outcome counted failed");
    CHECK(strstr(fake.last_log, "publish failed: refused") != NULL, "the failure logged: %s", fake.last_log);

    /* One try without waiting, with the caller's own outcome callback. */
    int outcome = -99;
    CHECK(gust_publisher_send_cb(p, "ev.x", "{}", 2, 0, note_outcome, &outcome) == 0, "handed over at once");
    answer_all(0);
    CHECK(outcome == 0, "the caller's callback got the outcome: %d", outcome);
    fake.busy = 1;
    CHECK(gust_publisher_send_cb(p, "ev.x", "{}", 2, 0, note_outcome, &outcome) == GUST_EAGAIN,
          "busy: EAGAIN after one try");
    fake.busy = 0;

    /* The caller's callback runs before the outcome is counted, and while it is still in
     * flight (so the publisher outlives the callback); also inside publish itself. */
    struct seen seen = {.p = p};
    uint64_t stored = atomic_load(&gust_publisher_counts(p)->stored);
    CHECK(gust_publisher_send_cb(p, "ev.x", "{}", 2, 0, note_counts, &seen) == 0, "tracked send");
    answer_all(0);
    CHECK(seen.calls == 1 && seen.stored_then == stored && seen.pending_then == 1,
          "callback before the count: %d calls, stored %llu then (%llu before), %llu pending", seen.calls,
          (unsigned long long)seen.stored_then, (unsigned long long)stored, (unsigned long long)seen.pending_then);
    CHECK(atomic_load(&gust_publisher_counts(p)->stored) == stored + 1 && gust_publisher_wait(p, 0) == 0,
          "then counted and settled");
    fake.inline_ok = 1;
    seen = (struct seen){.p = p};
    CHECK(gust_publisher_send_cb(p, "ev.x", "{}", 2, 0, note_counts, &seen) == 0 && seen.calls == 1 &&
              gust_publisher_wait(p, 0) == 0,
          "an outcome inside publish: %d calls", seen.calls);
    fake.inline_ok = 0;
    /* Trackers are reused: rounds of tracked sends without a limit of the publisher's
     * own (mqtt_in's way; ASan sees a leak or a reuse of a freed one). */
    struct gust_publisher *q = NULL;
    CHECK(gust_publisher_create(&q, &(struct gust_publisher_conf){.api = &fake_api}, NULL) == 0, "publisher");
    int sent = 0, right = 0;
    for (int round = 0; round < 50; round++) {
        int outcomes[64];
        for (int i = 0; i < 64; i++) {
            outcomes[i] = -99;
            sent += gust_publisher_send_cb(q, "ev.x", "{}", 2, 0, note_outcome, &outcomes[i]) == 0;
        }
        answer_all(round % 2);
        for (int i = 0; i < 64; i++) {
            right += outcomes[i] == round % 2;
        }
    }
    CHECK(sent == 50 * 64 && right == 50 * 64, "%d sent, %d outcomes delivered", sent, right);
    CHECK(atomic_load(&gust_publisher_counts(q)->stored) == 25 * 64 &&
              atomic_load(&gust_publisher_counts(q)->failed) == 25 * 64 && gust_publisher_wait(q, 0) == 0,
          "all counted, nothing left in flight");
    gust_publisher_destroy(q);

    /* Giving up at the deadline, and at stop. */
    fake.busy = 1;
    CHECK(gust_publisher_send(p, "ev.x", "{}", 2, gust_clock_mono_ms() + 30) == GUST_EAGAIN,
          "gave up at the deadline");
    gust_publisher_stop(p);
    CHECK(gust_publisher_send(p, "ev.x", "{}", 2, INT64_MAX) == GUST_EAGAIN, "stopped: gives up at once");
    CHECK(atomic_load(&gust_publisher_counts(p)->failed) == 4, "every give-up counted failed");
    fake.busy = 0;
    gust_publisher_destroy(p);
}

struct ticks {
    struct gust_source_runner *r;
    atomic_int n;
};

static void tick(void *ud, uint64_t n)
{
    struct ticks *t = ud;
    atomic_store(&t->n, (int)n);
    gust_source_publish(t->r, "ev.tick", "{}", 2);
}

static void test_runner(void)
{
    struct ticks t = {0};
    struct gust_source_conf sc = {.api = &fake_api, .interval_ms = 10, .run = tick, .ud = &t};
    CHECK(gust_source_create(&t.r, &sc, NULL) == 0, "runner");
    CHECK(gust_source_start(t.r, 0, NULL) == 0, "started");
    while (atomic_load(&t.n) < 5) {
        usleep(1000);
    }
    gust_source_stop(t.r);
    int n = atomic_load(&t.n);
    usleep(30000);
    CHECK(atomic_load(&t.n) == n, "no run after stop");
    CHECK(gust_source_pending(t.r) == (uint64_t)n, "%d publishes awaiting their outcome", n);
    answer_all(0);
    CHECK(atomic_load(&gust_source_counts(t.r)->stored) == (uint64_t)n, "all stored");
    gust_source_destroy(t.r);
    CHECK(gust_source_create(&t.r,
                             &(struct gust_source_conf){.api = &fake_api, .interval_ms = -1, .run = tick},
                             NULL) == GUST_EINVAL,
          "a negative interval is refused");
}

static int valid(const char *s)
{
    int root;
    return gust_json_scan(s, strlen(s), NULL, 0, &root) == 0;
}

/* gust_json_scan: what yajl (the host's decoder) accepts, and nothing else. */
static void test_json(void)
{
    static const char *const good[] = {
        "{}", "[]", " 0 ", "-0.5e+10", "1E3", "\"\"", "true", "null", "{\"a\":[1,{\"b\":false},\"x\"],\"c\":{}}",
        "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"", "[\n1 ,\t2\r]",
    };
    static const char *const bad[] = {
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "-", "1e", "+1", "tru",
        "nul", "\"a", "\"\\x\"", "\"\\u12g4\"", "\"\x01\"", "\"\xff\"", "\"\xc3\"", "\"\xe2\x82\"", "1 2",
        "{} {}", "[1]]", "{\"a\":1]", "'a'", "NaN",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        CHECK(valid(good[i]), "valid JSON: %s", good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(!valid(bad[i]), "not JSON: %s", bad[i]);
    }
    char deep[3000];
    memset(deep, '[', 1500);
    memset(deep + 1500, ']', 1500);
    CHECK(gust_json_scan(deep, 2048, NULL, 0, &(int){0}) != 0, "1024 levels at most");
    CHECK(gust_json_scan(deep + 1500 - 1000, 2000, NULL, 0, &(int){0}) == 0, "1000 levels");

    const char *a[] = {"a", NULL}, *ab[] = {"a", "b", NULL}, *k[] = {"k\xc3\xa9y", NULL}, *s[] = {"s", NULL};
    struct gust_json_field f[] = {{.path = a}, {.path = ab}, {.path = k}, {.path = s}};
    const char *doc = "{\"x\":[{\"a\":9}],\"a\":{\"b\":-1.50},\"k\\u00e9y\":true,\"s\":\"v\\/w\",\"s\":\"2nd\"}";
    int root;
    CHECK(gust_json_scan(doc, strlen(doc), f, 4, &root) == 0 && root == GUST_JV_OBJECT, "fields: scan");
    CHECK(f[0].type == GUST_JV_CONTAINER, "a is an object (not the a inside the array)");
    CHECK(f[1].type == GUST_JV_NUMBER && f[1].len == 5 && memcmp(f[1].text, "-1.50", 5) == 0, "a.b as written");
    CHECK(f[2].type == GUST_JV_TRUE, "a key with an escape matches");
    char out[16];
    size_t n;
    CHECK(f[3].type == GUST_JV_STRING && f[3].escaped &&
              gust_json_unescape(f[3].text, f[3].len, out, sizeof(out), &n) == 0 && n == 3 && strcmp(out, "v/w") == 0,
          "the first of two equal keys, unescaped");
    CHECK(gust_json_unescape("\\uD83D\\uDE00\\u00e9\\uD800x", 25, out, sizeof(out), &n) == 0 &&
              strcmp(out, "\xf0\x9f\x98\x80\xc3\xa9?x") == 0,
          "surrogate pair, two-byte, lone surrogate as ?");
    CHECK(gust_json_unescape("abcdefgh", 8, out, 8, &n) != 0, "unescape: no room");
}

/* A sink's own {subject}: the last token. */
static int last_token(void *ud, const char *subject, char *out, size_t outsz)
{
    (void)ud;
    const char *dot = strrchr(subject, '.');
    return snprintf(out, outsz, "%s", dot ? dot + 1 : subject) < (int)outsz ? (int)strlen(out) : -1;
}

static void tpl_case(const char *spec, gust_tpl_subject_fn subject_fn, const char *subject, const char *payload,
                     const char *want)
{
    struct gust_tpl *t = NULL;
    char why[200] = "", out[256] = "";
    struct gust_msg m = {.subject = subject, .data = payload, .len = strlen(payload)};
    int rc = gust_tpl_compile(spec, &t, why, sizeof(why));
    CHECK(rc == 0, "compile %s: %s", spec, why);
    if (rc == 0) {
        rc = gust_tpl_render(t, &m, subject_fn, NULL, out, sizeof(out), why, sizeof(why));
        CHECK(rc == 0 ? strcmp(out, want) == 0 : strstr(why, want) != NULL, "%s on %s: got %s (%s), want %s", spec,
              payload, rc == 0 ? out : "error", why, want);
    }
    gust_tpl_free(t);
}

/* gust_tpl_render_as: values percent-encoded for a URL (the literal text is not), and
 * refused in a header when they would end its line. */
static void test_template_flags(void)
{
    struct gust_tpl *t = NULL;
    char why[200] = "", out[256] = "";
    const char *payload = "{\"c\":\"a b/c?d&e=\\u00e9\",\"id\":\"x\\r\\nX-Evil: 1\",\"n\":5}";
    struct gust_msg m = {.subject = "ev.tpl", .data = payload, .len = strlen(payload)};

    CHECK(gust_tpl_compile("/orders/{payload.c}?n={payload.n}&s={subject}", &t, why, sizeof(why)) == 0, "%s", why);
    CHECK(gust_tpl_render_as(t, &m, GUST_TPL_URL, NULL, NULL, out, sizeof(out), why, sizeof(why)) == 0 &&
              strcmp(out, "/orders/a%20b%2Fc%3Fd%26e%3D%C3%A9?n=5&s=ev.tpl") == 0,
          "percent-encoded values: %s", out);
    CHECK(gust_tpl_render_as(t, &m, 0, NULL, NULL, out, sizeof(out), why, sizeof(why)) == 0 &&
              strcmp(out, "/orders/a b/c?d&e=\xc3\xa9?n=5&s=ev.tpl") == 0,
          "as they are without the flag: %s", out);
    gust_tpl_free(t);
    CHECK(gust_tpl_compile("{payload.id}", &t, why, sizeof(why)) == 0, "%s", why);
    CHECK(gust_tpl_render_as(t, &m, GUST_TPL_HEADER, NULL, NULL, out, sizeof(out), why, sizeof(why)) != 0 &&
              strstr(why, "{payload.id}: the value holds a line break"),
          "a header line break refused: %s", why);
    CHECK(gust_tpl_render_as(t, &m, GUST_TPL_URL, NULL, NULL, out, sizeof(out), why, sizeof(why)) == 0 &&
              strcmp(out, "x%0D%0AX-Evil%3A%201") == 0,
          "encoded in a URL: %s", out);
    gust_tpl_free(t);
    t = NULL;
    CHECK(gust_tpl_compile("{env.GUST_TPL_NEVER_SET}", &t, why, sizeof(why)) != 0 && !t &&
              strstr(why, "GUST_TPL_NEVER_SET is not set"),
          "an unset variable without a default: %s", why);
    CHECK(gust_tpl_compile("{subject.x}", &t, why, sizeof(why)) != 0 && !t && strstr(why, "a number"),
          "{subject.x} refused: %s", why);
    /* Secrets: PATH#KEY, no default (fail-closed); in a process without the host's store
     * (this test) the render fails naming the reference. */
    CHECK(gust_tpl_compile("{secret:crm/api#token:-x}", &t, why, sizeof(why)) != 0 && !t &&
              strstr(why, "without a default"),
          "a secret with a default refused: %s", why);
    CHECK(gust_tpl_compile("{secret:crm/api}", &t, why, sizeof(why)) != 0 && !t && strstr(why, "PATH#KEY"),
          "a secret without #KEY refused: %s", why);
    CHECK(gust_tpl_compile("Bearer {secret:crm/api#token}", &t, why, sizeof(why)) == 0, "%s", why);
    struct gust_msg empty = {.subject = "ev.tpl", .data = "{}", .len = 2};
    CHECK(gust_tpl_render(t, &empty, NULL, NULL, out, sizeof(out), why, sizeof(why)) != 0 &&
              strstr(why, "{secret:crm/api#token}: no secret store"),
          "no store: %s", why);
    gust_tpl_free(t);
}

static void test_templates(void)
{
    tpl_case("dev/{payload.device}/cmd", NULL, "ev.out.x", "{\"device\":\"d7\"}", "dev/d7/cmd");
    tpl_case("{payload.site.id}/{payload.n}/{payload.ok}", NULL, "ev.out.x", "{\"site\":{\"id\":\"s1\"},\"n\":1.50,\"ok\":true}",
             "s1/1.50/true");
    tpl_case("gust/{subject}", NULL, "ev.out.a", "{}", "gust/ev.out.a");
    tpl_case("gust/{subject}", last_token, "ev.out.a", "{}", "gust/a");
    tpl_case("{payload.s}", NULL, "ev.x", "{\"s\":\"a\\\"b\"}", "a\"b");
    tpl_case("dev/{payload.device}", NULL, "ev.out.x", "{\"id\":1}", "{payload.device}: the payload has no such field");
    /* Objects and arrays as compact JSON, null as null, numbers as written. */
    tpl_case("{payload.o}", NULL, "ev.x", "{\"o\": {\"a\": [1, 2], \"b\": \"x y\", \"c\": \"q\\\" }\"}}",
             "{\"a\":[1,2],\"b\":\"x y\",\"c\":\"q\\\" }\"}");
    tpl_case("dev/{payload.device}", NULL, "ev.out.x", "{\"device\":[1]}", "dev/[1]");
    tpl_case("dev/{payload.device}", NULL, "ev.out.x", "{\"device\":null}", "dev/null");
    tpl_case("{payload.n}", NULL, "ev.x", "{\"n\":7}", "7");
    /* Defaults: for a missing field, or a null one. */
    tpl_case("{payload.x:-none}/{payload.y:-}", NULL, "ev.x", "{\"x\":null}", "none/");
    tpl_case("{payload.x:-none}", NULL, "ev.x", "{\"x\":\"set\"}", "set");
    /* Subject tokens, from 0. */
    tpl_case("{subject.1}/{subject.2}", NULL, "ev.orders.fr", "{}", "orders/fr");
    tpl_case("{subject.3}", NULL, "ev.orders.fr", "{}", "the subject ev.orders.fr has no token 3");
    tpl_case("{subject.3:-all}", NULL, "ev.orders.fr", "{}", "all");
    /* The environment, read when compiled. */
    setenv("GUST_TPL_TEST", "from env", 1);
    tpl_case("{env.GUST_TPL_TEST}/{env.GUST_TPL_UNSET:-dflt}", NULL, "ev.x", "{}", "from env/dflt");
    unsetenv("GUST_TPL_TEST");
    tpl_case("dev/{payload.device}", NULL, "ev.out.x", "not json", "the payload is not JSON");
    static const char *const bad[][2] = {{"a/{payload.x", "is not closed"}, {"a/{foo}", "unknown placeholder {foo}"},
                                                                                  {"a}/{subject}", "'}' without '{'"}, {"{payload.a..b}", "empty field name"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gust_tpl *t = NULL;
        char why[200] = "";
        CHECK(gust_tpl_compile(bad[i][0], &t, why, sizeof(why)) != 0 && strstr(why, bad[i][1]) && !t,
              "%s refused with %s (got %s)", bad[i][0], bad[i][1], why);
    }
}

int main(void)
{
    test_check();
    test_each();
    test_quote();
    test_rfc3339();
    test_http_header();
    test_publisher();
    test_runner();
    test_json();
    test_templates();
    test_template_flags();
    return check_result("sdk");
}
