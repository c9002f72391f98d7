/* The span queue and the one thread that sends it to the collector.
 *
 * Producers (the HTTP loop, every unit's thread) copy a span into a fixed ring under a
 * mutex held for that copy only; a full ring drops the span and counts it, so a
 * collector that is down or slow never holds up an event. The thread wakes every
 * FLUSH_MS (or when a batch's worth is queued), takes up to BATCH_MAX spans and POSTs
 * them; a failed POST drops them (counted): spans are not worth holding events for. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "trace_int.h"

#define QUEUE_MAX 4096 /* spans; about 2 MB once the ring has gone round */
#define BATCH_MAX 512
#define FLUSH_MS 500
#define POST_TIMEOUT_MS 2000

static struct {
    atomic_int on;
    double sample;
    char service[128];
    struct gust_otlp_target target;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int started, stopping;
    int failing; /* the exporter thread's: the last POST failed */
    struct gust_span_rec *ring; /* QUEUE_MAX */
    size_t head, len;
    atomic_uint_fast64_t exported, dropped, failed_posts;
} ex = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

int gust_trace_exporting(void)
{
    return atomic_load_explicit(&ex.on, memory_order_relaxed);
}

double gust_trace_sample_ratio(void)
{
    return ex.sample;
}

static void copy(char *dst, size_t size, const char *src)
{
    size_t n = src != NULL ? strnlen(src, size - 1) : 0;
    memcpy(dst, src != NULL ? src : "", n);
    dst[n] = '\0';
}

void gust_trace_export(const struct gust_span *s)
{
    if (!gust_trace_exporting() || !(s->ctx.flags & 1)) {
        return;
    }
    pthread_mutex_lock(&ex.lock);
    if (ex.len == QUEUE_MAX) {
        pthread_mutex_unlock(&ex.lock);
        atomic_fetch_add(&ex.dropped, 1);
        return;
    }
    struct gust_span_rec *r = &ex.ring[(ex.head + ex.len++) % QUEUE_MAX];
    r->ctx = s->ctx;
    memcpy(r->parent_id, s->parent_id, 8);
    r->kind = (uint8_t)s->kind;
    r->failed = s->error != NULL;
    r->http_status = (uint16_t)s->http_status;
    r->start_ns = s->start_ns;
    r->end_ns = s->end_ns;
    r->stream_seq = s->stream_seq;
    copy(r->name, sizeof(r->name), s->name);
    copy(r->unit, sizeof(r->unit), s->unit);
    copy(r->subject, sizeof(r->subject), s->subject);
    copy(r->error, sizeof(r->error), s->error);
    int full = ex.len >= BATCH_MAX;
    pthread_mutex_unlock(&ex.lock);
    if (full) {
        pthread_cond_signal(&ex.wake);
    }
}

/* Takes up to BATCH_MAX queued spans into out; returns how many. With ex.lock held. */
static size_t take_locked(struct gust_span_rec *out)
{
    size_t n = ex.len < BATCH_MAX ? ex.len : BATCH_MAX;
    for (size_t i = 0; i < n; i++) {
        out[i] = ex.ring[(ex.head + i) % QUEUE_MAX];
    }
    ex.head = (ex.head + n) % QUEUE_MAX;
    ex.len -= n;
    return n;
}

static void send_batch(struct gust_span_rec *v, size_t n, struct gust_buf *body)
{
    body->len = 0;
    char why[300];
    if (gust_otlp_json(body, ex.service, v, n) != 0) {
        atomic_fetch_add(&ex.dropped, n);
        return;
    }
    if (gust_otlp_post(&ex.target, body->data, body->len, POST_TIMEOUT_MS, why, sizeof(why)) != 0) {
        atomic_fetch_add(&ex.dropped, n);
        atomic_fetch_add(&ex.failed_posts, 1);
        /* Said once per run of failures, not at every flush. */
        if (!ex.failing) {
            ex.failing = 1;
            gust_warn("otlp: %zu span(s) dropped: %s", n, why);
        }
        return;
    }
    if (ex.failing) {
        ex.failing = 0;
        gust_info("otlp: the collector takes spans again");
    }
    atomic_fetch_add(&ex.exported, n);
}

static void *run(void *arg)
{
    (void)arg;
    struct gust_span_rec *batch = malloc(BATCH_MAX * sizeof(*batch));
    struct gust_buf body = {0};
    pthread_mutex_lock(&ex.lock);
    for (;;) {
        if (ex.len < BATCH_MAX && !ex.stopping) {
            struct timespec ts;
            gust_clock_deadline(FLUSH_MS, &ts);
            pthread_cond_timedwait(&ex.wake, &ex.lock, &ts);
        }
        size_t n = batch != NULL ? take_locked(batch) : 0;
        int stop = ex.stopping && ex.len == 0;
        pthread_mutex_unlock(&ex.lock);
        if (n > 0) {
            send_batch(batch, n, &body);
        }
        if (stop) {
            break;
        }
        pthread_mutex_lock(&ex.lock);
    }
    free(batch);
    gust_buf_free(&body);
    return NULL;
}

int gust_trace_endpoint_check(const char *url, struct gust_err *err)
{
    struct gust_otlp_target t;
    char why[200];
    if (gust_otlp_target_parse(url, &t, why, sizeof(why)) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s", why);
    }
    return 0;
}

int gust_trace_start(const struct gust_trace_conf *conf, struct gust_err *err)
{
    if (conf->endpoint == NULL || ex.started) {
        return 0;
    }
    char why[200];
    if (gust_otlp_target_parse(conf->endpoint, &ex.target, why, sizeof(why)) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "otlp: %s", why);
    }
    ex.ring = calloc(QUEUE_MAX, sizeof(*ex.ring));
    if (ex.ring == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    ex.sample = conf->sample;
    copy(ex.service, sizeof(ex.service), conf->service_name != NULL ? conf->service_name : "gust");
    if (pthread_create(&ex.thread, NULL, run, NULL) != 0) {
        free(ex.ring);
        ex.ring = NULL;
        return gust_err_set(err, GUST_ENOMEM, "otlp: cannot start the exporter thread");
    }
    ex.started = 1;
    atomic_store(&ex.on, 1);
    gust_info("otlp: spans go to %s (sample %g of new traces)", conf->endpoint, conf->sample);
    return 0;
}

void gust_trace_stop(void)
{
    if (!ex.started) {
        return;
    }
    atomic_store(&ex.on, 0);
    pthread_mutex_lock(&ex.lock);
    ex.stopping = 1;
    pthread_cond_signal(&ex.wake);
    pthread_mutex_unlock(&ex.lock);
    pthread_join(ex.thread, NULL);
    ex.started = 0;
    free(ex.ring);
    ex.ring = NULL;
}

void gust_trace_stats(struct gust_trace_stats *out)
{
    pthread_mutex_lock(&ex.lock);
    out->queued = ex.len;
    pthread_mutex_unlock(&ex.lock);
    out->exported = atomic_load(&ex.exported);
    out->dropped = atomic_load(&ex.dropped);
    out->failed_posts = atomic_load(&ex.failed_posts);
}
