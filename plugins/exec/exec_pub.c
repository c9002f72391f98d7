/* Publishing lines with back-pressure.
 *
 * The reader thread publishes a line and, while the bus answers GUST_EAGAIN or this
 * instance has max_inflight publishes without an outcome, waits before the next one. It
 * reads nothing from the pipe meanwhile, so the child blocks on a full pipe instead of
 * gust buffering without bound: nothing is dropped for being fast.
 *
 * The outcome counts live here rather than in the instance: the bus reports a publish up
 * to publish_timeout later, and stop() must not wait that long (the host stops sources
 * that lose their cluster lease). The last of the instance and its publishes frees it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec.h"

struct exec_pub *exec_pub_create(struct gust_instance *inst, const char *subject, size_t max_inflight)
{
    struct exec_pub *p = calloc(1, sizeof(*p));
    pthread_condattr_t ca;

    if (!p || !(p->subject = strdup(subject))) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &ca);
    pthread_condattr_destroy(&ca);
    p->refs = 1;
    p->inst = inst;
    p->max_inflight = max_inflight;
    return p;
}

static void unref_locked(struct exec_pub *p)
{
    /* called with the lock held; unlocks */
    int last = --p->refs == 0;
    pthread_mutex_unlock(&p->lock);
    if (last) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p->subject);
        free(p);
    }
}

void exec_pub_release(struct exec_pub *p)
{
    if (p) {
        pthread_mutex_lock(&p->lock);
        p->inst = NULL;
        unref_locked(p);
    }
}

static void on_done(void *ud, int status, uint64_t seq, const char *error)
{
    struct exec_pub *p = ud;
    (void)seq;

    pthread_mutex_lock(&p->lock);
    p->inflight--;
    if (status == 0) {
        p->stored++;
    } else {
        p->failed++;
        /* p->inst is NULL once the instance is destroyed: the host then logs "[plugin]". */
        if (p->failed <= 10 || p->failed % 1000 == 0) {
            exec_host->log(p->inst, GUST_LOG_WARN, "publish to %s failed (%llu so far): %s", p->subject,
                           (unsigned long long)p->failed, error ? error : "no reason given");
        }
    }
    pthread_cond_broadcast(&p->cond);
    unref_locked(p);
}

static void wait_ms(struct exec_pub *p, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&p->cond, &p->lock, &ts);
}

int exec_pub_line(struct exec_pub *p, const char *data, size_t len)
{
    int wait = 1;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stopping && p->inflight >= p->max_inflight) {
            wait_ms(p, 100);
        }
        if (p->stopping) {
            pthread_mutex_unlock(&p->lock);
            return -1;
        }
        p->inflight++;
        p->refs++;
        pthread_mutex_unlock(&p->lock);
        /* Not under our lock: the bus may call on_done from inside publish. */
        int rc = exec_host->publish(p->inst, p->subject, data, len, on_done, p);
        pthread_mutex_lock(&p->lock);
        if (rc == 0) {
            p->published++;
            pthread_mutex_unlock(&p->lock);
            return 0;
        }
        /* Not taken: on_done will not be called for it. */
        p->inflight--;
        p->refs--;
        if (rc != GUST_EAGAIN) {
            p->failed++;
            pthread_mutex_unlock(&p->lock);
            return rc;
        }
        /* The bus is full or disconnected: wait for a completion (or a little, when
         * nothing of ours is in flight to signal one), growing to 50 ms. */
        wait_ms(p, wait);
        wait = wait < 50 ? wait * 2 : 50;
    }
}

void exec_pub_stop(struct exec_pub *p)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

void exec_pub_wait(struct exec_pub *p, int64_t ms)
{
    int64_t until = exec_now_ms() + ms;

    pthread_mutex_lock(&p->lock);
    while (p->inflight > 0 && exec_now_ms() < until) {
        wait_ms(p, 10);
    }
    pthread_mutex_unlock(&p->lock);
}
