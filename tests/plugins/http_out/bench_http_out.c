/* How fast http_out delivers batches of 256 into the counting sink.
 *
 *   bench_http_out PLUGIN.so GUST-BENCH-SINK [BATCHES [CONNECTIONS [PIPELINE [MAX_INFLIGHT]]]]
 *
 * A setting left out (or given as "-") is the plugin's default.
 * Sends BATCHES (default 400) batches of 256 bodies shaped like the orders flow's emit,
 * checks that the sink counted each exactly once, then prints one JSON object with the
 * rate and the sink's own stats (latency from each body's t). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_host.h"
#include "server_proc.h"

#define BATCH 256

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static unsigned long long stat_of(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = strstr(json, pat);
    return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

int main(int argc, char **argv)
{
    static char bodies[BATCH][320];
    struct gust_msg msgs[BATCH];
    struct gust_result results[BATCH];
    struct gust_err err = {{0}};
    struct fake_plugin plugin;
    struct server_proc sink;
    char url[64], stats[2048];
    void *ctx = NULL;

    if (argc < 3) {
        fprintf(stderr,
                "usage: %s PLUGIN.so GUST-BENCH-SINK [BATCHES [CONNECTIONS [PIPELINE "
                "[MAX_INFLIGHT]]]]\n",
                argv[0]);
        return 2;
    }
    int batches = argc > 3 ? atoi(argv[3]) : 400;
    const char *conns = argc > 4 ? argv[4] : "-";
    const char *pipeline = argc > 5 ? argv[5] : "-";
    const char *inflight = argc > 6 ? argv[6] : "-";
    unsigned long long total = (unsigned long long)batches * BATCH, delivered = 0;

    fake_plugin_load(&plugin, argv[1]);
    const struct gust_plugin_type *type = fake_plugin_type(&plugin, "http_out");
    char *sink_argv[] = {argv[2], NULL};
    server_proc_start(&sink, sink_argv);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hit", sink.port);
    /* Pairs for the settings given, the NULL after the last ending the list. */
    const char *kv[8] = {"url", url};
    int nkv = 2;
    const char *keys[] = {"connections", "pipeline", "max_inflight"}, *vals[] = {conns, pipeline, inflight};
    for (int i = 0; i < 3; i++) {
        if (strcmp(vals[i], "-") != 0) {
            kv[nkv++] = keys[i];
            kv[nkv++] = vals[i];
        }
    }
    struct gust_cfg *cfg = fake_cfg_create(type->schema, kv[0], kv[1], kv[2], kv[3], kv[4], kv[5],
                                           kv[6], kv[7], NULL);
    if (type->create(fake_instance("bench"), cfg, &ctx, &err) != 0 ||
        type->start(ctx, &err) != 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }

    double t0 = clock_ms(CLOCK_MONOTONIC);
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < BATCH; i++) {
            int len = snprintf(bodies[i], sizeof(bodies[i]),
                               "{\"order_ref\":\"%d\",\"customer_email\":\"jane.doe@acme.com\","
                               "\"total_eur\":347,\"country\":\"FR\",\"positions\":[{\"sku\":"
                               "\"A-12\",\"qty\":2,\"unit_eur\":99},{\"sku\":\"B-07\",\"qty\":1,"
                               "\"unit_eur\":149}],\"t\":%.3f}",
                               b * BATCH + i, clock_ms(CLOCK_REALTIME));
            msgs[i] = (struct gust_msg){"ev.orders.out", bodies[i], (size_t)len, 1, 1, 0, NULL, 0};
        }
        if (type->deliver(ctx, msgs, BATCH, results) != 0) {
            fprintf(stderr, "bench: batch %d failed\n", b);
            return 1;
        }
        for (int i = 0; i < BATCH; i++) {
            delivered += results[i].status == GUST_DELIVERED;
        }
    }
    double secs = (clock_ms(CLOCK_MONOTONIC) - t0) / 1e3;

    type->stop(ctx);
    type->destroy(ctx);
    fake_cfg_destroy(cfg);
    fake_plugin_unload(&plugin);
    server_proc_stop(&sink, stats, sizeof(stats));
    stats[strcspn(stats, "\n")] = '\0';

    if (delivered != total || stat_of(stats, "unique") != total ||
        stat_of(stats, "duplicates") != 0) {
        fprintf(stderr, "bench: sent %llu, delivered %llu; sink says %s\n", total, delivered,
                stats);
        return 1;
    }
    printf("{\"requests\":%llu,\"batch\":%d,\"connections\":\"%s\",\"pipeline\":\"%s\","
           "\"max_inflight\":\"%s\",\"seconds\":%.3f,\"rate\":%.0f,\"sink\":%s}\n",
           total, BATCH, conns, pipeline, inflight, secs, (double)total / secs, stats);
    return 0;
}
