/* timer: a source that publishes a fixed JSON object every interval, stamped.
 *
 *   source tick { use timer; interval 1s; subject ev.tick; payload '{"k":1}'; }
 *
 * publishes {"k":1,"ts":"2026-11-29T23:49:03.123Z","ts_ms":1795996143123,"tick":1}: the
 * payload's members as written, then the wall-clock time of the tick (RFC 3339 UTC with
 * ms, and ms since the epoch) and the tick number of this instance (1, 2, ...; a new
 * instance, after a reload or when the unit moves to another node, starts at 1 again).
 *
 * Ticks come from the SDK source runner's monotonic schedule: no drift, missed ticks skipped and
 * counted. A publish that fails is logged (once per streak) and counted; the timer goes
 * on. The first tick is one interval after start, or with `align on` at the next
 * multiple of the interval on the UTC clock (interval 1m: every full minute). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/plugin.h"
#include "gust/sdk.h"
#include "gust/source.h"

static const struct gust_host_api *host;

/* The members the timer adds: a payload may not have them itself. */
static const char *const stamp_keys[] = {"ts", "ts_ms", "tick", NULL};

/* The instance's keys, bound by its schema. */
struct timer_conf {
    const char *subject;
    int64_t interval;
    const char *payload;
    int align;
    int64_t stats_interval;
};

#define KEY(f, T, def, flags, help) GUST_KEY(struct timer_conf, f, T, def, flags, help)
#define KEY_RANGE(f, T, def, flags, lo, hi, help) GUST_KEY_RANGE(struct timer_conf, f, T, def, flags, lo, hi, help)
static const struct gust_schema_key schema[] = {
    KEY(subject, SUBJECT, NULL, GUST_K_REQUIRED, "where to publish each tick"),
    KEY_RANGE(interval, DURATION, NULL, GUST_K_REQUIRED, 10, INT64_MAX, "time between ticks"),
    KEY(payload, STR, "{}", 0, "a JSON object; each tick publishes it with \"ts\", \"ts_ms\" and \"tick\" added"),
    KEY(align, BOOL, "off", 0, "on: tick at multiples of the interval on the UTC clock (interval 1m: each full minute)"),
    KEY_RANGE(stats_interval, DURATION, "60s", GUST_K_ZERO_OFF, 100, INT64_MAX,
              "log the counters this often (0: only when stopping)"),
    GUST_KEY_END,
};

struct timer {
    struct gust_instance *inst;
    struct timer_conf conf;
    char *msg; /* the payload without its closing brace, then room for the stamp */
    size_t prefix_len;
    int empty; /* the payload is {}: no comma before the stamp */
    struct gust_source_runner *runner;
    uint64_t ticks; /* the runner's thread only */
};

/* Keeps the payload up to (not including) its closing brace, white space trimmed. */
static int load_payload(struct timer *t, const struct gust_cfg *cfg, struct gust_err *err)
{
    const char *p = t->conf.payload;
    const char *clash;
    char why[160];
    size_t len = strlen(p);
    int kind = gust_json_check(p, len, stamp_keys, &clash, why, sizeof(why));

    if (kind == 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: payload: not valid JSON: %s",
                          host->cfg_where(cfg, "payload"), why);
    }
    if (kind != GUST_JSON_OBJECT) {
        return gust_err_set(err, GUST_ECONFIG, "%s: payload: must be a JSON object ({...})",
                          host->cfg_where(cfg, "payload"));
    }
    if (clash) {
        return gust_err_set(err, GUST_ECONFIG, "%s: payload: has a member \"%s\", which the timer adds itself",
                          host->cfg_where(cfg, "payload"), clash);
    }
    while (len > 0 && p[len - 1] != '}') {
        len--;
    }
    len--; /* the closing brace */
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\n' || p[len - 1] == '\r')) {
        len--;
    }
    t->empty = p[len - 1] == '{';
    if (!(t->msg = malloc(len + 128))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    memcpy(t->msg, p, len);
    t->prefix_len = len;
    return 0;
}

static void timer_run(void *ud, uint64_t n)
{
    struct timer *t = ud;
    int64_t now = gust_clock_wall_ms();
    char ts[GUST_RFC3339_SIZE];
    int w;

    t->ticks = n;
    gust_rfc3339_ms(now, ts);
    w = snprintf(t->msg + t->prefix_len, 128, "%s\"ts\":\"%s\",\"ts_ms\":%" PRId64 ",\"tick\":%" PRIu64 "}",
                 t->empty ? "" : ",", ts, now, n);
    gust_source_publish(t->runner, t->conf.subject, t->msg, t->prefix_len + (size_t)w);
}

static void timer_stats(void *ud, int final)
{
    struct timer *t = ud;
    const struct gust_pub_counts *c = gust_source_counts(t->runner);
    host->log(t->inst, GUST_LOG_INFO,
              "%s%" PRIu64 " ticks, %" PRIu64 " stored, %" PRIu64 " failed, %" PRIu64 " skipped, %" PRIu64
              " pending",
              final ? "stopping: " : "", t->ticks, (uint64_t)atomic_load(&c->stored),
              (uint64_t)atomic_load(&c->failed), (uint64_t)atomic_load(&c->skipped),
              gust_source_pending(t->runner));
}

static void timer_destroy(void *ctx);

static int timer_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                        struct gust_err *err)
{
    struct timer *t = calloc(1, sizeof(*t));
    int rc;

    if (!t) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    t->inst = inst;
    if ((rc = gust_sdk_bind(host, cfg, schema, &t->conf, err)) != 0) {
        goto fail;
    }
    int64_t stats_ms = t->conf.stats_interval;
    if ((rc = load_payload(t, cfg, err)) != 0) {
        goto fail;
    }
    struct gust_source_conf cc = {
        .api = host,
        .inst = inst,
        .interval_ms = t->conf.interval,
        .stats_ms = stats_ms,
        .run = timer_run,
        .stats = timer_stats,
        .ud = t,
    };
    if ((rc = gust_source_create(&t->runner, &cc, err)) != 0) {
        goto fail;
    }
    *ctx = t;
    return 0;

fail:
    timer_destroy(t);
    return rc;
}

static int timer_start(void *ctx, struct gust_err *err)
{
    struct timer *t = ctx;
    /* The first tick: one interval from now, or at the next multiple of the interval on
     * the wall clock. The core then counts from there on the monotonic clock. */
    int64_t iv = t->conf.interval;
    int64_t first = t->conf.align ? iv - gust_clock_wall_ms() % iv : iv;
    int rc;

    if ((rc = gust_source_start(t->runner, first, err)) == 0) {
        host->log(t->inst, GUST_LOG_INFO, "ticking every %" PRId64 " ms to %s%s", iv, t->conf.subject,
                  t->conf.align ? " (aligned to the UTC clock)" : "");
    }
    return rc;
}

static void timer_stop(void *ctx)
{
    gust_source_stop(((struct timer *)ctx)->runner);
}

static void timer_destroy(void *ctx)
{
    struct timer *t = ctx;

    if (!t) {
        return;
    }
    gust_source_destroy(t->runner);
    free(t->msg);
    free(t);
}

static const struct gust_plugin_type types[] = {{
    .name = "timer",
    .kind = GUST_PLUGIN_SOURCE,
    .schema = schema,
    .create = timer_create,
    .start = timer_start,
    .stop = timer_stop,
    .destroy = timer_destroy,
}};

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "timer",
    .version = "0.1.0",
    .types = types,
    .ntypes = 1,
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    host = api;
    return &desc;
}
