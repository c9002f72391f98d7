/* bench-flow [N [only]]: the orders flow (scripts/bench_orders.lua) on the bench/WORKLOAD.md
 * event, N times on one core, after checking its first output. The baseline in the
 * same run is a flow that emits each event unchanged (decode + encode, no script
 * work). Each run gets the meta a running unit gives (subject, seq, stored time,
 * attempt, unit). Prints one JSON object. With `only` (orders, passthrough, or the
 * path of another script, run unchecked) just that flow runs, for instruction counts
 * under callgrind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yajl/yajl_tree.h>

#include "flow.h"

#define NUM_EVENTS 1024 /* distinct events, cycled: ids count up, countries rotate */
#define BATCH 256       /* emits are cleared per batch, as the consumer core does */

static const char *const COUNTRIES[] = {"France", "Germany", "Italy", "Spain"};

static char *events[NUM_EVENTS];
static size_t event_len[NUM_EVENTS];

static void make_events(void)
{
    for (int i = 0; i < NUM_EVENTS; i++) {
        char buf[512];
        int n =
            snprintf(buf, sizeof(buf),
                     "{\"id\": \"SO#%d\", \"email\": \"Jane.Doe@ACME.com\", \"total_price\": \"347.00\", "
                     "\"t\": 1764400000000.123, \"shipping_address\": {\"country\": \"%s\"}, "
                     "\"line_items\": [{\"sku\": \"A-12\", \"quantity\": \"2\", \"unit_price_cents\": 9900}, "
                     "{\"sku\": \"B-07\", \"quantity\": \"1\", \"unit_price_cents\": 14900}, "
                     "{\"sku\": \"C-33\", \"quantity\": \"4\", \"unit_price_cents\": 450}]}",
                     1001 + i, COUNTRIES[i % 4]);
        events[i] = strdup(buf);
        event_len[i] = (size_t)n;
        if (events[i] == NULL) {
            exit(1);
        }
    }
}

static int fail(const char *what)
{
    fprintf(stderr, "bench-flow: wrong output: %s\n", what);
    return -1;
}

static yajl_val get(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    return yajl_tree_get(v, path, yajl_t_any);
}

static int str_is(yajl_val v, const char *s)
{
    return v != NULL && YAJL_IS_STRING(v) && strcmp(v->u.string, s) == 0;
}

static int num_is(yajl_val v, const char *text)
{
    return v != NULL && YAJL_IS_NUMBER(v) && strcmp(v->u.number.r, text) == 0;
}

/* The expected emit of bench/WORKLOAD.md, with the fractional t the load generator sends. */
static int check_first(const struct gust_emits *out)
{
    static const char *const skus[] = {"A-12", "B-07", "C-33"};
    static const char *const qtys[] = {"2", "1", "4"};
    static const char *const eurs[] = {"99", "149", "4.5"};
    if (out->n != 1 || strcmp(out->v[0].subject, "ev.orders.out") != 0) {
        return fail("not one emit to ev.orders.out");
    }
    yajl_val p = yajl_tree_parse(out->v[0].payload, NULL, 0);
    int ok = p != NULL && YAJL_IS_OBJECT(p) && p->u.object.len == 6 && str_is(get(p, "order_ref"), "1001") &&
             str_is(get(p, "customer_email"), "jane.doe@acme.com") && num_is(get(p, "total_eur"), "347") &&
             str_is(get(p, "country"), "FR") && num_is(get(p, "t"), "1764400000000.123");
    yajl_val pos = ok ? get(p, "positions") : NULL;
    ok = ok && pos != NULL && YAJL_IS_ARRAY(pos) && pos->u.array.len == 3;
    for (size_t i = 0; ok && i < 3; i++) {
        yajl_val e = pos->u.array.values[i];
        ok = YAJL_IS_OBJECT(e) && e->u.object.len == 3 && str_is(get(e, "sku"), skus[i]) &&
             num_is(get(e, "qty"), qtys[i]) && num_is(get(e, "unit_eur"), eurs[i]);
    }
    yajl_tree_free(p);
    return ok ? 0 : fail(out->v[0].payload);
}

static double now_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct timing {
    double wall, cpu; /* seconds; cpu is this thread's, robust to a busy machine */
};

/* Runs `script` on n events; returns 0 and the time taken, or -1. */
static int run(const char *script, long n, int check, struct timing *t)
{
    struct gust_flow_opts opts = {.script_path = script};
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    int rc = -1;
    if (gust_flow_create(&opts, &f, &err) != 0) {
        fprintf(stderr, "bench-flow: %s\n", err.msg);
        return -1;
    }
    struct gust_flow_meta meta = {
        .subject = "ev.orders", .seq = 1, .time_ms = 1764400000000, .attempt = 1, .unit = "orders"};
    if (gust_flow_run(f, events[0], event_len[0], &meta, &out, &err) != 0) {
        fprintf(stderr, "bench-flow: %s\n", err.msg);
        goto done;
    }
    if (check && check_first(&out) != 0) {
        goto done;
    }
    gust_emits_clear(&out);
    long emitted = 0;
    double wall0 = now_s(CLOCK_MONOTONIC), cpu0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < n; i++) {
        int k = (int)(i % NUM_EVENTS);
        meta.seq = (uint64_t)i + 2;
        meta.time_ms += 3;
        if (gust_flow_run(f, events[k], event_len[k], &meta, &out, &err) != 0) {
            fprintf(stderr, "bench-flow: event %ld: %s\n", i, err.msg);
            goto done;
        }
        if (out.n >= BATCH) {
            emitted += (long)out.n;
            gust_emits_clear(&out);
        }
    }
    t->cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    t->wall = now_s(CLOCK_MONOTONIC) - wall0;
    emitted += (long)out.n;
    if (emitted != n) {
        fprintf(stderr, "bench-flow: %ld events gave %ld emits\n", n, emitted);
        goto done;
    }
    rc = 0;
done:
    gust_emits_free(&out);
    gust_flow_destroy(f);
    return rc;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 500000;
    if (n <= 0) {
        fprintf(stderr, "usage: bench-flow [EVENTS]\n");
        return 2;
    }
    const char *only = argc > 2 ? argv[2] : "";
    make_events();
    struct timing base = {1, 1}, flow = {1, 1};
    int rc = 0;
    if (strstr(only, ".lua") != NULL) {
        rc = run(only, n, 0, &flow);
    } else {
        if (strcmp(only, "orders") != 0) {
            rc = run(GUST_PASSTHROUGH_SCRIPT, n, 0, &base);
        }
        if (rc == 0 && strcmp(only, "passthrough") != 0) {
            rc = run(GUST_BENCH_SCRIPT, n, 1, &flow);
        }
    }
    for (int i = 0; i < NUM_EVENTS; i++) {
        free(events[i]);
    }
    if (rc != 0) {
        return 1;
    }
    printf("{\"events\": %ld, \"seconds\": %.3f, \"events_per_s\": %.0f, "
           "\"cpu_seconds\": %.3f, \"events_per_cpu_s\": %.0f, "
           "\"passthrough_events_per_s\": %.0f, \"passthrough_events_per_cpu_s\": %.0f}\n",
           n, flow.wall, (double)n / flow.wall, flow.cpu, (double)n / flow.cpu, (double)n / base.wall,
           (double)n / base.cpu);
    return 0;
}
