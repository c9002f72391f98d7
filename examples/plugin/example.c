/* An out-of-tree Gust plugin: one source and one sink, built with the installed SDK only
 * (see the Makefile: `pkg-config --cflags --libs gust-plugin`).
 *
 *   plugin example;
 *   source count { use counter; subject ev.count; interval 1s; }
 *   sink   log   { use file_out; source ev.count; path /var/lib/gust/count.jsonl; }
 *
 * counter publishes {"n":1}, {"n":2}, ... every interval through the SDK's source runner,
 * which waits while the bus is busy (back-pressure) and counts the outcomes.
 * file_out appends one JSON line per message, {"subject":...,"seq":...,"event":<payload>},
 * and tells the host per message: DELIVERED once written, RETRY while the file cannot
 * be opened (the bus keeps the message), REJECTED for a payload that is not JSON (after
 * max_deliver attempts it is dead-lettered). docs/PLUGINS.md explains each part. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gust/plugin.h>
#include <gust/sdk.h>
#include <gust/source.h>

static const struct gust_host_api *host; /* from the entry function, valid until fini */

/* --- counter: a source --- */

struct counter_conf {
    const char *subject;
    int64_t interval;
};

static const struct gust_schema_key counter_schema[] = {
    GUST_KEY(struct counter_conf, subject, SUBJECT, NULL, GUST_K_REQUIRED, "where to publish"),
    GUST_KEY_RANGE(struct counter_conf, interval, DURATION, "1s", 0, 10, INT64_MAX, "time between messages"),
    GUST_KEY_END,
};

struct counter {
    struct gust_instance *inst;
    struct counter_conf conf;
    struct gust_source_runner *runner;
};

/* On the runner's thread, every interval. */
static void counter_run(void *ud, uint64_t n)
{
    struct counter *c = ud;
    char msg[64];
    int len = snprintf(msg, sizeof(msg), "{\"n\":%" PRIu64 "}", n);
    /* Waits while the bus is busy, gives up (counted, logged once) when the next run is due. */
    gust_source_publish(c->runner, c->conf.subject, msg, (size_t)len);
}

static void counter_destroy(void *ctx)
{
    struct counter *c = ctx;
    if (c != NULL) {
        gust_source_destroy(c->runner);
        free(c);
    }
}

/* No I/O here: create runs at `gust -t` and before a reload replaces anything. */
static int counter_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                          struct gust_err *err)
{
    struct counter *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    c->inst = inst;
    int rc = gust_sdk_bind(host, cfg, counter_schema, &c->conf, err);
    struct gust_source_conf sc = {
        .api = host, .inst = inst, .interval_ms = c->conf.interval, .run = counter_run, .ud = c};
    rc = rc ? rc : gust_source_create(&c->runner, &sc, err);
    if (rc != 0) {
        counter_destroy(c);
        return rc;
    }
    *ctx = c;
    return 0;
}

static int counter_start(void *ctx, struct gust_err *err)
{
    struct counter *c = ctx;
    return gust_source_start(c->runner, c->conf.interval, err);
}

static void counter_stop(void *ctx)
{
    struct counter *c = ctx;
    gust_source_stop(c->runner);
    const struct gust_pub_counts *pc = gust_source_counts(c->runner);
    host->log(c->inst, GUST_LOG_INFO, "stopped: %" PRIu64 " stored, %" PRIu64 " failed",
              (uint64_t)atomic_load(&pc->stored), (uint64_t)atomic_load(&pc->failed));
}

/* --- file_out: a sink --- */

struct file_out_conf {
    const char *path;
};

static const struct gust_schema_key file_out_schema[] = {
    GUST_KEY(struct file_out_conf, path, PATH, NULL, GUST_K_REQUIRED, "the file JSON lines are appended to"),
    GUST_KEY_END,
};

struct file_out {
    struct gust_instance *inst;
    struct file_out_conf conf;
    struct gust_buf line;
};

static int file_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                           struct gust_err *err)
{
    struct file_out *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    f->inst = inst;
    int rc = gust_sdk_bind(host, cfg, file_out_schema, &f->conf, err);
    if (rc != 0) {
        free(f);
        return rc;
    }
    *ctx = f;
    return 0;
}

/* On the unit's thread, one batch at a time. results[i] starts as GUST_RETRY. */
static int file_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    struct file_out *f = ctx;
    FILE *out = fopen(f->conf.path, "a");
    for (size_t i = 0; i < n; i++) {
        const struct gust_msg *m = &msgs[i];
        char why[160];
        if (out == NULL) {
            /* The far end (here: the disk) is not there: the bus keeps the message. */
            snprintf(results[i].error, sizeof(results[i].error), "%s: %s", f->conf.path, strerror(errno));
            continue;
        }
        if (gust_json_check(m->data, m->len, NULL, NULL, why, sizeof(why)) == 0) {
            results[i].status = GUST_REJECTED;
            snprintf(results[i].error, sizeof(results[i].error), "not JSON: %s", why);
            continue;
        }
        f->line.len = 0;
        int rc = gust_buf_append(&f->line, "{\"subject\":", 11);
        rc = rc ? rc : gust_json_append_string(&f->line, m->subject, strlen(m->subject));
        rc = rc ? rc : gust_buf_printf(&f->line, ",\"seq\":%" PRIu64 ",\"event\":", m->stream_seq);
        rc = rc ? rc : gust_buf_append(&f->line, m->data, m->len);
        rc = rc ? rc : gust_buf_append(&f->line, "}\n", 2);
        if (rc == 0 && fwrite(f->line.data, 1, f->line.len, out) == f->line.len) {
            results[i].status = GUST_DELIVERED;
        } else {
            snprintf(results[i].error, sizeof(results[i].error), "%s: cannot write", f->conf.path);
        }
    }
    if (out != NULL && fclose(out) != 0) {
        /* A failed flush may have lost lines: say so for all, the bus redelivers them. */
        for (size_t i = 0; i < n; i++) {
            if (results[i].status == GUST_DELIVERED) {
                results[i].status = GUST_RETRY;
                snprintf(results[i].error, sizeof(results[i].error), "%s: %s", f->conf.path, strerror(errno));
            }
        }
    }
    return 0;
}

static void file_out_destroy(void *ctx)
{
    struct file_out *f = ctx;
    gust_buf_free(&f->line);
    free(f);
}

/* --- the descriptor --- */

static const struct gust_plugin_type types[] = {
    {.name = "counter",
     .kind = GUST_PLUGIN_SOURCE,
     .schema = counter_schema,
     .create = counter_create,
     .start = counter_start,
     .stop = counter_stop,
     .destroy = counter_destroy},
    {.name = "file_out",
     .kind = GUST_PLUGIN_SINK,
     .schema = file_out_schema,
     .create = file_out_create,
     .deliver = file_out_deliver,
     .destroy = file_out_destroy},
};

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "example",
    .version = "1.0",
    .types = types,
    .ntypes = sizeof(types) / sizeof(types[0]),
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    host = api;
    return &desc;
}
