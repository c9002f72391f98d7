/* The publisher and the source runner of gust/source.h. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gust/sdk.h"
#include "gust/source.h"

/* A send with the caller's own outcome callback (gust_publisher_send_cb). */
struct tracked {
    struct gust_publisher *p;
    gust_publish_done_fn done;
    void *ud;
    struct tracked *next; /* on the publisher's spares */
};

struct gust_publisher {
    struct gust_publisher_conf conf;
    struct gust_pub_counts counts;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC: an outcome came back, or stop */
    atomic_int stopping;
    uint64_t outstanding; /* publishes whose outcome has not come back; under lock */
    atomic_int failing;   /* in a streak of failed publishes (logged once) */
    /* Under lock: trackers whose outcome came back, for the next sends. A source that
     * acts on every outcome (mqtt_in) then costs no malloc per message once it runs, and
     * there are never more of them than publishes were in flight at once. */
    struct tracked *spares;
};

static void deadline_ts(int64_t at_ms, struct timespec *ts)
{
    ts->tv_sec = (time_t)(at_ms / 1000);
    ts->tv_nsec = (long)(at_ms % 1000) * 1000000L;
}

/* A lock and its condition, whose timed waits run on CLOCK_MONOTONIC (deadline_ts). */
static void lock_init(pthread_mutex_t *lock, pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    pthread_mutex_init(lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
}

int gust_publisher_create(struct gust_publisher **out, const struct gust_publisher_conf *conf,
                          struct gust_err *err)
{
    *out = NULL;
    struct gust_publisher *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    p->conf = *conf;
    lock_init(&p->lock, &p->cond);
    *out = p;
    return 0;
}

static void note_failure(struct gust_publisher *p, const char *why)
{
    atomic_fetch_add(&p->counts.failed, 1);
    if (atomic_exchange(&p->failing, 1) == 0) {
        p->conf.api->log(p->conf.inst, GUST_LOG_WARN,
                         "publish failed: %s (further failures are counted, not logged, until one succeeds)",
                         why);
    }
}

/* Counts the bus's outcome of one publish, on a host thread. */
static void count_outcome(struct gust_publisher *p, int status, const char *error)
{
    if (status == 0) {
        atomic_fetch_add(&p->counts.stored, 1);
        if (atomic_exchange(&p->failing, 0) == 1) {
            p->conf.api->log(p->conf.inst, GUST_LOG_INFO, "publishing again (%" PRIu64 " failed so far)",
                             (uint64_t)atomic_load(&p->counts.failed));
        }
    } else {
        note_failure(p, error && error[0] ? error : "refused by the bus");
    }
}

/* Under the lock: one publish fewer in flight, its tracker (if any) kept for reuse. Once
 * outstanding is 0, destroy may free p: nothing touches it after the unlock. */
static void settle_locked(struct gust_publisher *p, struct tracked *t)
{
    if (t != NULL) {
        t->next = p->spares;
        p->spares = t;
    }
    p->outstanding--;
    pthread_cond_broadcast(&p->cond);
}

static void on_done(void *ud, int status, uint64_t seq, const char *error)
{
    struct gust_publisher *p = ud;
    (void)seq;
    count_outcome(p, status, error);
    pthread_mutex_lock(&p->lock);
    settle_locked(p, NULL);
    pthread_mutex_unlock(&p->lock);
}

static void on_done_tracked(void *ud, int status, uint64_t seq, const char *error)
{
    struct tracked *t = ud;
    struct gust_publisher *p = t->p;
    t->done(t->ud, status, seq, error);
    count_outcome(p, status, error);
    pthread_mutex_lock(&p->lock);
    settle_locked(p, t);
    pthread_mutex_unlock(&p->lock);
}

/* Under the lock: waits for an outcome or stop until at_ms; 1 when at_ms passed. */
static int wait_locked(struct gust_publisher *p, int64_t at_ms)
{
    struct timespec ts;
    deadline_ts(at_ms, &ts);
    return pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT;
}

int gust_publisher_send(struct gust_publisher *p, const char *subject, const void *data, size_t len,
                        int64_t give_up_ms)
{
    return gust_publisher_send_cb(p, subject, data, len, give_up_ms, NULL, NULL);
}

int gust_publisher_send_cb(struct gust_publisher *p, const char *subject, const void *data, size_t len,
                           int64_t give_up_ms, gust_publish_done_fn done, void *ud)
{
    struct gust_pub_msg m = {.subject = subject, .data = data, .len = len};
    return gust_publisher_send_msg(p, &m, give_up_ms, done, ud);
}

/* The host's publish; publish_msg only for what plain publish cannot carry. */
static int host_publish(struct gust_publisher *p, const struct gust_pub_msg *m, gust_publish_done_fn done,
                        void *ud)
{
    if (m->msg_id == NULL && m->nheaders == 0) {
        return p->conf.api->publish(p->conf.inst, m->subject, m->data, m->len, done, ud);
    }
    if (!GUST_API_HAS(p->conf.api, publish_msg)) {
        return GUST_EINVAL;
    }
    return p->conf.api->publish_msg(p->conf.inst, m, done, ud);
}

int gust_publisher_send_msg(struct gust_publisher *p, const struct gust_pub_msg *m, int64_t give_up_ms,
                            gust_publish_done_fn done, void *ud)
{
    int64_t pause = 5;
    int once = give_up_ms <= gust_clock_mono_ms(); /* one try, no wait */
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!atomic_load(&p->stopping) && p->conf.max_inflight > 0 &&
               p->outstanding >= p->conf.max_inflight && gust_clock_mono_ms() < give_up_ms) {
            wait_locked(p, gust_clock_mono_ms() + 100 < give_up_ms ? gust_clock_mono_ms() + 100 : give_up_ms);
        }
        int full = p->conf.max_inflight > 0 && p->outstanding >= p->conf.max_inflight;
        if (atomic_load(&p->stopping) || (!once && gust_clock_mono_ms() >= give_up_ms) || (once && full)) {
            pthread_mutex_unlock(&p->lock);
            note_failure(p, atomic_load(&p->stopping)
                                ? "stopped while the bus was busy"
                                : "the bus is not connected or has too many publishes pending");
            return GUST_EAGAIN;
        }
        struct tracked *t = NULL;
        if (done != NULL && (t = p->spares) != NULL) {
            p->spares = t->next;
        } else if (done != NULL && (t = malloc(sizeof(*t))) == NULL) {
            pthread_mutex_unlock(&p->lock);
            note_failure(p, "out of memory");
            return GUST_ENOMEM;
        }
        /* Counted before the call: the outcome may come back before publish returns. */
        p->outstanding++;
        pthread_mutex_unlock(&p->lock);
        int rc;
        if (t != NULL) {
            *t = (struct tracked){.p = p, .done = done, .ud = ud};
            rc = host_publish(p, m, on_done_tracked, t);
        } else {
            rc = host_publish(p, m, on_done, p);
        }
        if (rc == 0) {
            atomic_fetch_add(&p->counts.sent, 1);
            return 0;
        }
        pthread_mutex_lock(&p->lock);
        settle_locked(p, t); /* not taken: no outcome will come for it */
        if (rc != GUST_EAGAIN || once) {
            pthread_mutex_unlock(&p->lock);
            note_failure(p, rc == GUST_EAGAIN ? "the bus is not connected or has too many publishes pending"
                                              : "the host refused the publish");
            return rc;
        }
        /* The bus is busy or disconnected: wait for an outcome of ours, or a little when
         * none is due to signal one, growing to 200 ms. */
        int64_t until = gust_clock_mono_ms() + pause;
        wait_locked(p, until < give_up_ms ? until : give_up_ms);
        pause = pause < 100 ? pause * 2 : 200;
    }
}

void gust_publisher_stop(struct gust_publisher *p)
{
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stopping, 1);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

int gust_publisher_stopping(const struct gust_publisher *p)
{
    return atomic_load(&p->stopping);
}

uint64_t gust_publisher_wait(struct gust_publisher *p, int64_t ms)
{
    int64_t until = gust_clock_mono_ms() + ms;
    pthread_mutex_lock(&p->lock);
    while (p->outstanding > 0 && !wait_locked(p, until)) {
    }
    uint64_t left = p->outstanding;
    pthread_mutex_unlock(&p->lock);
    return left;
}

const struct gust_pub_counts *gust_publisher_counts(const struct gust_publisher *p)
{
    return &p->counts;
}

void gust_publisher_destroy(struct gust_publisher *p)
{
    if (p == NULL) {
        return;
    }
    gust_publisher_stop(p);
    pthread_mutex_lock(&p->lock);
    while (p->outstanding > 0) {
        pthread_cond_wait(&p->cond, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    while (p->spares != NULL) {
        struct tracked *t = p->spares;
        p->spares = t->next;
        free(t);
    }
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* --- the runner --- */

struct gust_source_runner {
    struct gust_source_conf conf;
    struct gust_publisher *pub;
    pthread_t thread;
    int running;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC: the stop signal for timed waits */
    atomic_int stopping;
    _Atomic int64_t next_due; /* when the next run is due (INT64_MAX: interval 0) */
    int64_t t0;               /* when run 1 is due; set by start */
};

int gust_source_create(struct gust_source_runner **out, const struct gust_source_conf *conf,
                       struct gust_err *err)
{
    *out = NULL;
    if (conf->interval_ms < 0 || conf->run == NULL) {
        return gust_err_set(err, GUST_EINVAL, "source runner: no run() or a negative interval");
    }
    struct gust_source_runner *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    r->conf = *conf;
    struct gust_publisher_conf pc = {
        .api = conf->api, .inst = conf->inst, .max_inflight = conf->max_inflight};
    int rc = gust_publisher_create(&r->pub, &pc, err);
    if (rc != 0) {
        free(r);
        return rc;
    }
    lock_init(&r->lock, &r->cond);
    *out = r;
    return 0;
}

int gust_source_stopping(const struct gust_source_runner *r)
{
    return atomic_load(&r->stopping);
}

/* Waits until the monotonic time `until` (ms) or stop; nonzero when stopping. */
static int wait_until(struct gust_source_runner *r, int64_t until)
{
    struct timespec ts;
    deadline_ts(until, &ts);
    pthread_mutex_lock(&r->lock);
    while (!atomic_load(&r->stopping) && gust_clock_mono_ms() < until) {
        if (pthread_cond_timedwait(&r->cond, &r->lock, &ts) == ETIMEDOUT) {
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return atomic_load(&r->stopping);
}

int gust_source_sleep(struct gust_source_runner *r, int64_t ms)
{
    return wait_until(r, gust_clock_mono_ms() + ms);
}

static void stats(struct gust_source_runner *r, int final)
{
    if (r->conf.stats != NULL) {
        r->conf.stats(r->conf.ud, final);
    }
}

static void *run_thread(void *arg)
{
    struct gust_source_runner *r = arg;
    const struct gust_source_conf *cf = &r->conf;
    if (cf->interval_ms == 0) {
        atomic_store(&r->next_due, INT64_MAX);
        if (!wait_until(r, r->t0)) {
            cf->run(cf->ud, 1);
        }
        return NULL;
    }
    int64_t t0 = r->t0;
    int64_t next_stats = cf->stats_ms > 0 ? gust_clock_mono_ms() + cf->stats_ms : INT64_MAX;
    uint64_t k = 0, runs = 0;
    int skipping = 0;
    while (!atomic_load(&r->stopping)) {
        int64_t due = t0 + (int64_t)k * cf->interval_ms;
        if (wait_until(r, due < next_stats ? due : next_stats)) {
            break;
        }
        int64_t now = gust_clock_mono_ms();
        if (now >= next_stats) {
            stats(r, 0);
            while (next_stats <= now) {
                next_stats += cf->stats_ms;
            }
        }
        if (now < due) {
            continue; /* woke for the stats line */
        }
        if (now - due >= cf->interval_ms) {
            uint64_t missed = (uint64_t)((now - due) / cf->interval_ms);
            k += missed;
            atomic_fetch_add(&r->pub->counts.skipped, missed);
            if (!skipping) {
                cf->api->log(cf->inst, GUST_LOG_WARN,
                             "%" PRIu64 " run(s) skipped: the previous one overran the %" PRId64
                             " ms interval (further skips are counted, not logged)",
                             missed, cf->interval_ms);
            }
            skipping = 1;
        } else {
            skipping = 0;
        }
        atomic_store(&r->next_due, t0 + (int64_t)(k + 1) * cf->interval_ms);
        cf->run(cf->ud, ++runs);
        k++;
    }
    return NULL;
}

int gust_source_start(struct gust_source_runner *r, int64_t first_delay_ms, struct gust_err *err)
{
    r->t0 = gust_clock_mono_ms() + first_delay_ms;
    atomic_store(&r->stopping, 0);
    atomic_store(&r->next_due, r->conf.interval_ms > 0 ? r->t0 + r->conf.interval_ms : INT64_MAX);
    if (pthread_create(&r->thread, NULL, run_thread, r) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start the source thread");
    }
    r->running = 1;
    return 0;
}

void gust_source_stop(struct gust_source_runner *r)
{
    if (r == NULL || !r->running) {
        return;
    }
    int64_t t = gust_clock_mono_ms();
    pthread_mutex_lock(&r->lock);
    atomic_store(&r->stopping, 1);
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    gust_publisher_stop(r->pub); /* a publish waiting for room gives up */
    if (r->conf.wake != NULL) {
        r->conf.wake(r->conf.ud);
    }
    pthread_join(r->thread, NULL);
    r->running = 0;
    stats(r, 1);
    r->conf.api->log(r->conf.inst, GUST_LOG_INFO, "stopped in %" PRId64 " ms", gust_clock_mono_ms() - t);
}

void gust_source_destroy(struct gust_source_runner *r)
{
    if (r == NULL) {
        return;
    }
    gust_source_stop(r);
    gust_publisher_destroy(r->pub);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

int gust_source_publish(struct gust_source_runner *r, const char *subject, const void *data, size_t len)
{
    return gust_publisher_send(r->pub, subject, data, len, atomic_load(&r->next_due));
}

const struct gust_pub_counts *gust_source_counts(const struct gust_source_runner *r)
{
    return gust_publisher_counts(r->pub);
}

uint64_t gust_source_pending(struct gust_source_runner *r)
{
    return gust_publisher_wait(r->pub, 0);
}

uint64_t gust_source_wait(struct gust_source_runner *r, int64_t ms)
{
    return gust_publisher_wait(r->pub, ms);
}
