/* http_out against real servers: the counting sink (bench/tools) for exactly-once and
 * keep-alive, and status_server.py for what each answer turns into.
 *
 *   test_http_out PLUGIN.so GUST-BENCH-SINK PYTHON3 STATUS_SERVER.py */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "fake_host.h"
#include "server_proc.h"

static const char *sink_path, *python, *status_py;
static const struct gust_plugin_type *type;
static int failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            fprintf(stderr, "%s:%d: FAIL (%s) ", __FILE__, __LINE__, #cond);                   \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* create + start, failing the whole test when either fails. */
static void *open_instance(const struct gust_cfg *cfg)
{
    struct gust_err err = {{0}};
    void *ctx = NULL;

    if (type->create(fake_instance("sink_test"), cfg, &ctx, &err) != 0 ||
        type->start(ctx, &err) != 0) {
        fprintf(stderr, "cannot open the instance: %s\n", err.msg);
        exit(1);
    }
    return ctx;
}

static void close_instance(void *ctx)
{
    type->stop(ctx);
    type->destroy(ctx);
}

static size_t append(char *data, size_t size, size_t nmemb, void *ud)
{
    char **buf = ud;
    size_t old = *buf ? strlen(*buf) : 0, len = size * nmemb;
    char *p = realloc(*buf, old + len + 1);
    if (!p) {
        return 0;
    }
    memcpy(p + old, data, len);
    p[old + len] = '\0';
    *buf = p;
    return len;
}

/* GETs url and parses the answer as JSON. */
static yajl_val get_json(const char *url)
{
    char *body = NULL, errbuf[256];
    CURL *e = curl_easy_init();

    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, append);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
    CURLcode c = curl_easy_perform(e);
    curl_easy_cleanup(e);
    yajl_val v = c == CURLE_OK && body ? yajl_tree_parse(body, errbuf, sizeof(errbuf)) : NULL;
    free(body);
    if (!v) {
        fprintf(stderr, "GET %s: no JSON answer\n", url);
        exit(1);
    }
    return v;
}

static long long json_int(yajl_val obj, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(obj, path, yajl_t_number);
    return v ? YAJL_GET_INTEGER(v) : -1;
}

static const char *json_str(yajl_val obj, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(obj, path, yajl_t_string);
    return v ? YAJL_GET_STRING(v) : "";
}

static void test_descriptor(void)
{
    int saw_url = 0, saw_header = 0;

    CHECK(type->kind == GUST_PLUGIN_SINK, "kind %d", type->kind);
    for (const struct gust_schema_key *k = type->schema; k->key; k++) {
        if (strcmp(k->key, "url") == 0) {
            saw_url = (k->flags & GUST_K_REQUIRED) != 0;
        } else if (strcmp(k->key, "header") == 0) {
            saw_header = k->type == GUST_T_LIST && (k->flags & GUST_K_SECRET);
        }
    }
    CHECK(saw_url, "url is a required key");
    CHECK(saw_header, "header is a secret list");
}

/* A bad value fails create with GUST_ECONFIG, naming where it is and the key. */
static void check_refused(const char *key, const char *value, const char *needle)
{
    int is_url = strcmp(key, "url") == 0;
    struct gust_cfg *cfg = fake_cfg_create(type->schema, key, value, is_url ? NULL : "url",
                                           "http://127.0.0.1:1/", NULL);
    struct gust_err err = {{0}};
    void *ctx = NULL;
    int rc = type->create(fake_instance("bad"), cfg, &ctx, &err);

    CHECK(rc == GUST_ECONFIG, "%s %s: create gave %d", key, value, rc);
    CHECK(strncmp(err.msg, "host.conf:2: ", 13) == 0 && strstr(err.msg, needle),
          "%s %s: message \"%s\" lacks host.conf:2 or \"%s\"", key, value, err.msg, needle);
    if (rc == 0) {
        type->destroy(ctx);
    }
    fake_cfg_destroy(cfg);
}

static void test_bad_config(void)
{
    check_refused("url", "ftp://127.0.0.1/x", "http://");
    check_refused("url", "not a url", "url");
    check_refused("method", "GET", "POST");
    check_refused("header", "NoColon", "Name: value");
    check_refused("header", "Content-Type: text/plain", "content_type");
    check_refused("max_inflight", "0", "max_inflight");
    check_refused("connections", "0", "connections");
    check_refused("timeout", "0", "timeout");
}

/* Many batches of 256 into the counting sink: each body arrives once, and the
 * connections are kept alive from batch to batch. */
static void test_exactly_once(void)
{
    enum { BATCHES = 20, BATCH = 256, CONNS = 4 };
    char *argv[] = {(char *)sink_path, NULL};
    static char bodies[BATCH][96];
    struct gust_msg msgs[BATCH];
    struct gust_result results[BATCH];
    struct server_proc sink;
    char url[64], stats[2048], errbuf[256];
    size_t delivered = 0;

    server_proc_start(&sink, argv);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hit", sink.port);
    struct gust_cfg *cfg = fake_cfg_create(type->schema, "url", url, "connections", "4",
                                           "max_inflight", "64", NULL);
    void *ctx = open_instance(cfg);

    for (int b = 0; b < BATCHES; b++) {
        for (int i = 0; i < BATCH; i++) {
            int len = snprintf(bodies[i], sizeof(bodies[i]), "{\"order_ref\":\"%d\",\"t\":%.3f}",
                               b * BATCH + i, now_ms());
            msgs[i] = (struct gust_msg){"ev.out", bodies[i], (size_t)len, 1, 1, 0};
        }
        memset(results, 0xff, sizeof(results));
        CHECK(type->deliver(ctx, msgs, BATCH, results) == 0, "batch %d failed", b);
        for (int i = 0; i < BATCH; i++) {
            delivered += results[i].status == GUST_DELIVERED;
        }
    }
    close_instance(ctx);
    fake_cfg_destroy(cfg);
    CHECK(delivered == BATCHES * BATCH, "%zu of %d delivered", delivered, BATCHES * BATCH);

    server_proc_stop(&sink, stats, sizeof(stats));
    yajl_val st = yajl_tree_parse(stats, errbuf, sizeof(errbuf));
    CHECK(st, "sink stats: %s", stats);
    if (st) {
        CHECK(json_int(st, "received") == BATCHES * BATCH, "%s", stats);
        CHECK(json_int(st, "unique") == BATCHES * BATCH, "%s", stats);
        CHECK(json_int(st, "duplicates") == 0, "%s", stats);
        CHECK(json_int(st, "no_id") == 0, "%s", stats);
        CHECK(json_int(st, "connections") >= 1 && json_int(st, "connections") <= CONNS,
              "kept alive on at most %d connections: %s", CONNS, stats);
        yajl_tree_free(st);
    }
}

static int expected_status(int http)
{
    if (http >= 200 && http < 300) {
        return GUST_DELIVERED;
    }
    return http >= 500 || http == 408 || http == 429 ? GUST_RETRY : GUST_REJECTED;
}

/* Every answer maps to its outcome and error text; PUT, content_type and headers are
 * sent as configured; every body arrives exactly once, the empty one too. */
static void test_statuses(void)
{
    enum { N = 100 };
    static const int codes[] = {200, 201, 204, 400, 404, 422, 500, 503, 408, 429, 301};
    char *argv[] = {(char *)python, (char *)status_py, NULL};
    static char bodies[N][64];
    struct gust_msg msgs[N + 1];
    struct gust_result results[N + 1];
    struct server_proc srv;
    char url[64], logurl[64], want[128];

    server_proc_start(&srv, argv);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/in", srv.port);
    snprintf(logurl, sizeof(logurl), "http://127.0.0.1:%d/log", srv.port);
    struct gust_cfg *cfg =
        fake_cfg_create(type->schema, "url", url, "method", "PUT", "content_type",
                        "application/x-test", "header", "X-Test: t0ken", "connections", "4", NULL);
    void *ctx = open_instance(cfg);

    for (int i = 0; i < N; i++) {
        int len = snprintf(bodies[i], sizeof(bodies[i]), "{\"id\":%d,\"status\":%d}", i,
                           codes[i % 11]);
        msgs[i] = (struct gust_msg){"ev.out", bodies[i], (size_t)len, 1, 1, 0};
    }
    msgs[N] = (struct gust_msg){"ev.out", NULL, 0, 1, 1, 0};
    CHECK(type->deliver(ctx, msgs, N + 1, results) == 0, "batch failed");

    for (int i = 0; i < N; i++) {
        int code = codes[i % 11], st = expected_status(code);
        CHECK(results[i].status == st, "http %d gave %d, not %d", code, results[i].status, st);
        snprintf(want, sizeof(want), "http %d from %s", code, url);
        if (st == GUST_DELIVERED) {
            CHECK(results[i].error[0] == '\0', "http %d: error \"%s\"", code, results[i].error);
        } else if (st == GUST_RETRY) {
            CHECK(strcmp(results[i].error, want) == 0, "\"%s\", not \"%s\"", results[i].error,
                  want);
        } else {
            /* The body's first 120 bytes come along, its newline made a space. */
            size_t prefix = strlen(want) + 2;
            strcat(want, ": refused xxx");
            CHECK(strncmp(results[i].error, want, strlen(want)) == 0 &&
                      strlen(results[i].error) == prefix + 120,
                  "\"%s\" is not \"%s\" + the first 120 bytes", results[i].error, want);
        }
    }
    CHECK(results[N].status == GUST_DELIVERED, "the empty body gave %d", results[N].status);

    yajl_val st = get_json(logurl);
    const char *path[] = {"log", NULL};
    yajl_val log = yajl_tree_get(st, path, yajl_t_array);
    int seen[N + 1] = {0};
    for (size_t i = 0; log && i < YAJL_GET_ARRAY(log)->len; i++) {
        yajl_val e = YAJL_GET_ARRAY(log)->values[i];
        const char *body = json_str(e, "body");
        int id;
        if (body[0] == '\0') {
            seen[N]++;
        } else if (sscanf(body, "{\"id\":%d,", &id) == 1 && id >= 0 && id < N &&
                   strcmp(body, bodies[id]) == 0) {
            seen[id]++;
        } else {
            CHECK(0, "a body that was not sent: %s", body);
        }
        CHECK(strcmp(json_str(e, "method"), "PUT") == 0, "method %s", json_str(e, "method"));
        CHECK(strcmp(json_str(e, "type"), "application/x-test") == 0, "type %s",
              json_str(e, "type"));
        CHECK(strcmp(json_str(e, "x_test"), "t0ken") == 0, "X-Test %s", json_str(e, "x_test"));
    }
    for (int i = 0; i <= N; i++) {
        CHECK(seen[i] == 1, "body %d arrived %d times", i, seen[i]);
    }
    /* Error answers may make libcurl drop a connection; more than a few per batch would
     * mean connections are not reused at all. */
    CHECK(json_int(st, "connections") <= 16, "%lld connections", json_int(st, "connections"));
    yajl_tree_free(st);

    close_instance(ctx);
    fake_cfg_destroy(cfg);
    server_proc_stop(&srv, NULL, 0);
}

/* A request the server never answers is a RETRY after about the timeout, and does not
 * hold up the rest of its batch. */
static void test_timeout(void)
{
    char *argv[] = {(char *)python, (char *)status_py, NULL};
    const char *bodies[] = {"{\"slow\":true}", "{}", "{\"status\":201}"};
    struct gust_msg msgs[3];
    struct gust_result results[3];
    struct server_proc srv;
    char url[64];

    server_proc_start(&srv, argv);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/in", srv.port);
    struct gust_cfg *cfg = fake_cfg_create(type->schema, "url", url, "timeout", "300", NULL);
    void *ctx = open_instance(cfg);
    for (int i = 0; i < 3; i++) {
        msgs[i] = (struct gust_msg){"ev.out", bodies[i], strlen(bodies[i]), 1, 1, 0};
    }

    double t0 = mono_ms();
    CHECK(type->deliver(ctx, msgs, 3, results) == 0, "batch failed");
    double took = mono_ms() - t0;

    CHECK(results[0].status == GUST_RETRY && strcmp(results[0].error, "timeout after 300 ms") == 0,
          "slow: %d \"%s\"", results[0].status, results[0].error);
    CHECK(results[1].status == GUST_DELIVERED && results[2].status == GUST_DELIVERED,
          "the others: %d %d", results[1].status, results[2].status);
    CHECK(took >= 290 && took < 2000, "deliver took %.0f ms for a 300 ms timeout", took);

    close_instance(ctx);
    fake_cfg_destroy(cfg);
    server_proc_stop(&srv, NULL, 0);
}

static void test_refused(void)
{
    struct gust_msg msgs[2] = {{"ev.out", "{}", 2, 1, 1, 0}, {"ev.out", "{}", 2, 1, 2, 0}};
    struct gust_result results[2];
    char url[64];
    int fd;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/in", server_proc_dead_port(&fd));
    struct gust_cfg *cfg = fake_cfg_create(type->schema, "url", url, NULL);
    void *ctx = open_instance(cfg);
    CHECK(type->deliver(ctx, msgs, 2, results) == 0, "batch failed");
    for (int i = 0; i < 2; i++) {
        CHECK(results[i].status == GUST_RETRY &&
                  strcmp(results[i].error, "connect: Connection refused") == 0,
              "%d \"%s\"", results[i].status, results[i].error);
    }
    close_instance(ctx);
    fake_cfg_destroy(cfg);
    close(fd);
}

int main(int argc, char **argv)
{
    struct fake_plugin plugin;

    if (argc != 5) {
        fprintf(stderr, "usage: %s PLUGIN.so GUST-BENCH-SINK PYTHON3 STATUS_SERVER.py\n", argv[0]);
        return 2;
    }
    sink_path = argv[2];
    python = argv[3];
    status_py = argv[4];
    fake_plugin_load(&plugin, argv[1]);
    type = fake_plugin_type(&plugin, "http_out");
    if (!type) {
        fprintf(stderr, "%s has no type http_out\n", argv[1]);
        return 1;
    }

    test_descriptor();
    test_bad_config();
    test_exactly_once();
    test_statuses();
    test_timeout();
    test_refused();

    fake_plugin_unload(&plugin);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    fprintf(stderr, "all http_out checks passed\n");
    return 0;
}
