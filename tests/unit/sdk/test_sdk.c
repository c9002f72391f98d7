/* Unit tests of libgust-sdk: the JSON check (kinds, errors, key clashes), array splitting
 * into exact element bytes, string quoting, RFC 3339 time, and the publisher and source
 * runner against a fake host API (back-pressure, max_inflight, giving up, the schedule). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gust/sdk.h"
#include "gust/source.h"

static int failed, passed;

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (cond) {                                                                                          \
            passed++;                                                                                        \
        } else {                                                                                             \
            failed++;                                                                                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                      \
            printf(__VA_ARGS__);                                                                             \
            printf("\n");                                                                                    \
        }                                                                                                    \
    } while (0)

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

int main(void)
{
    test_check();
    test_each();
    test_quote();
    test_rfc3339();
    test_publisher();
    test_runner();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
