/* The run schedule and the publishing shared by the timer and http_poll sources.
 *
 * Run k is due at t0 + k * interval on CLOCK_MONOTONIC, computed from t0 each time
 * rather than by adding the interval to the previous wake-up, so late wake-ups do not
 * add up (no drift). A run that overruns so far that later ones are already past their
 * time skips them (counted) instead of firing a burst to catch up.
 *
 * The thread waits on a condition variable bound to CLOCK_MONOTONIC, so stop() only has
 * to signal it; the plugin's wake() interrupts whatever run() blocks on. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "source_core.h"

struct source_core {
    struct source_core_conf conf;
    struct source_pub_counts counts;
    pthread_t thread;
    int running;

    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC: the stop signal for timed waits */
    pthread_cond_t idle; /* outstanding reached 0 */
    atomic_int stopping;
    uint64_t outstanding; /* publishes whose outcome has not come back; under lock */
    atomic_int failing;   /* in a streak of failed publishes (logged once) */
    int64_t next_due;     /* when the next run is due; the thread's own */
    int64_t t0;           /* when run 1 is due; set by start */
};


int64_t source_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t source_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void source_rfc3339(char *buf, size_t size, int64_t epoch_ms)
{
    time_t sec = (time_t)(epoch_ms / 1000);
    struct tm tm;
    char day[24];

    gmtime_r(&sec, &tm);
    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03dZ", day, (int)(epoch_ms % 1000));
}

int source_core_create(struct source_core **out, const struct source_core_conf *conf, struct gust_err *err)
{
    struct source_core *c = calloc(1, sizeof(*c));
    pthread_condattr_t ca;

    *out = NULL;
    if (!c) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    c->conf = *conf;
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&c->idle, NULL);
    *out = c;
    return 0;
}

int source_core_stopping(struct source_core *c)
{
    return atomic_load(&c->stopping);
}

/* Waits until the monotonic time `until` (ms) or stop; nonzero when stopping. */
static int wait_until(struct source_core *c, int64_t until)
{
    struct timespec ts = {.tv_sec = (time_t)(until / 1000), .tv_nsec = (long)(until % 1000) * 1000000L};

    pthread_mutex_lock(&c->lock);
    while (!atomic_load(&c->stopping) && source_mono_ms() < until) {
        if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT) {
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return atomic_load(&c->stopping);
}

int source_core_sleep(struct source_core *c, int64_t ms)
{
    return wait_until(c, source_mono_ms() + ms);
}

static void *run(void *arg)
{
    struct source_core *c = arg;
    const struct source_core_conf *cf = &c->conf;
    int64_t t0 = c->t0;
    int64_t next_stats = cf->stats_ms > 0 ? source_mono_ms() + cf->stats_ms : INT64_MAX;
    uint64_t k = 0, runs = 0;
    int skipping = 0;

    while (!atomic_load(&c->stopping)) {
        int64_t due = t0 + (int64_t)k * cf->interval_ms, now;
        if (wait_until(c, due < next_stats ? due : next_stats)) {
            break;
        }
        now = source_mono_ms();
        if (now >= next_stats) {
            cf->stats(cf->ud, 0);
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
            atomic_fetch_add(&c->counts.skipped, missed);
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
        c->next_due = t0 + (int64_t)(k + 1) * cf->interval_ms;
        cf->run(cf->ud, ++runs);
        k++;
    }
    return NULL;
}

int source_core_start(struct source_core *c, int64_t first_delay_ms, struct gust_err *err)
{
    c->t0 = source_mono_ms() + first_delay_ms;
    atomic_store(&c->stopping, 0);
    if (pthread_create(&c->thread, NULL, run, c) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start the source thread");
    }
    c->running = 1;
    return 0;
}

void source_core_stop(struct source_core *c)
{
    int64_t t = source_mono_ms();

    if (!c || !c->running) {
        return;
    }
    pthread_mutex_lock(&c->lock);
    atomic_store(&c->stopping, 1);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    if (c->conf.wake) {
        c->conf.wake(c->conf.ud);
    }
    pthread_join(c->thread, NULL);
    c->running = 0;
    c->conf.stats(c->conf.ud, 1);
    c->conf.api->log(c->conf.inst, GUST_LOG_INFO, "stopped in %" PRId64 " ms", source_mono_ms() - t);
}

void source_core_destroy(struct source_core *c)
{
    if (!c) {
        return;
    }
    source_core_stop(c);
    pthread_mutex_lock(&c->lock);
    while (c->outstanding > 0) {
        pthread_cond_wait(&c->idle, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    pthread_cond_destroy(&c->idle);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

const struct source_pub_counts *source_core_counts(const struct source_core *c)
{
    return &c->counts;
}

uint64_t source_core_pending(struct source_core *c)
{
    uint64_t n;

    pthread_mutex_lock(&c->lock);
    n = c->outstanding;
    pthread_mutex_unlock(&c->lock);
    return n;
}

static void note_failure(struct source_core *c, const char *why)
{
    atomic_fetch_add(&c->counts.failed, 1);
    if (atomic_exchange(&c->failing, 1) == 0) {
        c->conf.api->log(c->conf.inst, GUST_LOG_WARN,
                         "publish failed: %s (further failures are counted, not logged, until one "
                         "succeeds)",
                         why);
    }
}

/* The bus's outcome of one publish, on a host thread. */
static void on_done(void *ud, int status, uint64_t seq, const char *error)
{
    struct source_core *c = ud;

    (void)seq;
    if (status == 0) {
        atomic_fetch_add(&c->counts.stored, 1);
        if (atomic_exchange(&c->failing, 0) == 1) {
            c->conf.api->log(c->conf.inst, GUST_LOG_INFO, "publishing again (%" PRIu64 " failed so far)",
                             (uint64_t)atomic_load(&c->counts.failed));
        }
    } else {
        note_failure(c, error && error[0] ? error : "refused by the bus");
    }
    /* Last: once outstanding is 0, destroy may free c. */
    pthread_mutex_lock(&c->lock);
    if (--c->outstanding == 0) {
        pthread_cond_broadcast(&c->idle);
    }
    pthread_mutex_unlock(&c->lock);
}

int source_core_publish(struct source_core *c, const char *subject, const void *data, size_t len)
{
    int64_t pause = 5;
    int rc;

    for (;;) {
        /* Counted before the call: the outcome may come back before publish returns. */
        pthread_mutex_lock(&c->lock);
        c->outstanding++;
        pthread_mutex_unlock(&c->lock);
        rc = c->conf.api->publish(c->conf.inst, subject, data, len, on_done, c);
        if (rc == 0) {
            atomic_fetch_add(&c->counts.sent, 1);
            return 0;
        }
        pthread_mutex_lock(&c->lock);
        if (--c->outstanding == 0) {
            pthread_cond_broadcast(&c->idle);
        }
        pthread_mutex_unlock(&c->lock);
        if (rc != GUST_EAGAIN || atomic_load(&c->stopping) || source_mono_ms() + pause >= c->next_due) {
            note_failure(c, rc == GUST_EAGAIN ? "the bus is not connected or has too many "
                                                "publishes pending"
                                              : "the host refused the publish");
            return rc;
        }
        if (source_core_sleep(c, pause)) {
            note_failure(c, "stopped while the bus was busy");
            return GUST_EAGAIN;
        }
        pause = pause < 100 ? pause * 2 : 200;
    }
}
