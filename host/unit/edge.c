/* The edge queue: a ring of slots whose buffers are kept and reused, so a steady stream
 * costs no allocation per message. One lock: producers copy in at the tail, the unit's
 * thread reads the slots it took without the lock (producers never write a taken slot:
 * they only write past `count`, which still includes them until release). */
#include "edge.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "gust/sdk.h"

#define KEEP_BUFFER 65536 /* larger buffers are freed on release, not kept per slot */

struct slot {
    char *buf; /* subject, NUL, payload */
    size_t cap;
    size_t subject_len, len;
    int64_t at_ns; /* when it was queued (CLOCK_REALTIME) */
    uint64_t seq;
};

struct gust_edge {
    char *unit, *source;
    pthread_mutex_t lock;
    pthread_cond_t ready;
    struct slot *slots;
    size_t cap, head, count;
    int waiting, woken;
    uint64_t seq;
    atomic_uint_fast64_t dropped, received;
};

int gust_edge_create(const char *unit, const char *source, size_t capacity, struct gust_edge **out,
                     struct gust_err *err)
{
    struct gust_edge *e = calloc(1, sizeof(*e));
    if (e == NULL || capacity == 0 || (e->slots = calloc(capacity, sizeof(*e->slots))) == NULL ||
        (e->unit = strdup(unit)) == NULL || (e->source = strdup(source)) == NULL) {
        if (e != NULL) {
            free(e->slots);
            free(e->unit);
            free(e);
        }
        return gust_err_set(err, GUST_ENOMEM, "edge queue of %zu messages: out of memory", capacity);
    }
    e->cap = capacity;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->ready, NULL);
    *out = e;
    return 0;
}

void gust_edge_destroy(struct gust_edge *e)
{
    if (e == NULL) {
        return;
    }
    for (size_t i = 0; i < e->cap; i++) {
        free(e->slots[i].buf);
    }
    free(e->slots);
    free(e->unit);
    free(e->source);
    pthread_cond_destroy(&e->ready);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

static void dropped(struct gust_edge *e)
{
    uint64_t n = atomic_fetch_add(&e->dropped, 1) + 1;
    /* Every drop is counted (/units, /metrics); the log says so at 1, 10, 100, ... */
    uint64_t p = 1;
    while (p < n && p <= UINT64_MAX / 10) {
        p *= 10;
    }
    if (p == n) {
        gust_warn("[%s] edge queue full (%zu messages): dropping what source '%s' sends (%" PRIu64
                  " dropped so far; at most once by design)",
                  e->unit, e->cap, e->source, n);
    }
}

int gust_edge_push(struct gust_edge *e, const char *subject, const void *data, size_t len)
{
    int64_t now_ns = gust_clock_wall_ns();
    size_t slen = strlen(subject), need = slen + 1 + len;
    atomic_fetch_add(&e->received, 1);
    pthread_mutex_lock(&e->lock);
    if (e->count == e->cap) {
        pthread_mutex_unlock(&e->lock);
        dropped(e);
        return GUST_EAGAIN;
    }
    struct slot *s = &e->slots[(e->head + e->count) % e->cap];
    if (s->cap < need) {
        char *b = realloc(s->buf, need);
        if (b == NULL) {
            pthread_mutex_unlock(&e->lock);
            dropped(e);
            return GUST_ENOMEM;
        }
        s->buf = b;
        s->cap = need;
    }
    memcpy(s->buf, subject, slen + 1);
    memcpy(s->buf + slen + 1, data, len);
    s->subject_len = slen;
    s->len = len;
    s->at_ns = now_ns;
    s->seq = ++e->seq;
    e->count++;
    if (e->waiting) {
        pthread_cond_signal(&e->ready);
    }
    pthread_mutex_unlock(&e->lock);
    return 0;
}

size_t gust_edge_take(struct gust_edge *e, struct gust_msg *msgs, size_t max, int wait_ms)
{
    pthread_mutex_lock(&e->lock);
    if (e->count == 0 && !e->woken && wait_ms > 0) {
        struct timespec dl;
        gust_clock_deadline(wait_ms, &dl);
        e->waiting = 1;
        while (e->count == 0 && !e->woken && pthread_cond_timedwait(&e->ready, &e->lock, &dl) == 0) {
        }
        e->waiting = 0;
    }
    e->woken = 0;
    size_t n = e->count < max ? e->count : max;
    for (size_t i = 0; i < n; i++) {
        const struct slot *s = &e->slots[(e->head + i) % e->cap];
        msgs[i] = (struct gust_msg){.subject = s->buf, .data = s->buf + s->subject_len + 1, .len = s->len,
                                    .stream_seq = s->seq, .attempt = 1, .stored_ns = s->at_ns};
    }
    pthread_mutex_unlock(&e->lock);
    return n;
}

void gust_edge_release(struct gust_edge *e, size_t n)
{
    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < n; i++) {
        struct slot *s = &e->slots[(e->head + i) % e->cap];
        if (s->cap > KEEP_BUFFER) {
            free(s->buf);
            s->buf = NULL;
            s->cap = 0;
        }
    }
    e->head = (e->head + n) % e->cap;
    e->count -= n;
    pthread_mutex_unlock(&e->lock);
}

void gust_edge_wake(struct gust_edge *e)
{
    pthread_mutex_lock(&e->lock);
    e->woken = 1;
    pthread_cond_signal(&e->ready);
    pthread_mutex_unlock(&e->lock);
}

const char *gust_edge_source(const struct gust_edge *e)
{
    return e->source;
}

size_t gust_edge_capacity(const struct gust_edge *e)
{
    return e->cap;
}

size_t gust_edge_depth(struct gust_edge *e)
{
    pthread_mutex_lock(&e->lock);
    size_t n = e->count;
    pthread_mutex_unlock(&e->lock);
    return n;
}

uint64_t gust_edge_dropped(const struct gust_edge *e)
{
    return atomic_load(&((struct gust_edge *)e)->dropped);
}

uint64_t gust_edge_received(const struct gust_edge *e)
{
    return atomic_load(&((struct gust_edge *)e)->received);
}

int gust_edge_set_publish(struct gust_edge_set *set, const char *subject, const void *data, size_t len,
                          gust_publish_done_fn done, void *ud)
{
    for (size_t i = 0; i < set->n; i++) {
        gust_edge_push(set->v[i], subject, data, len);
    }
    if (done != NULL) {
        done(ud, 0, 0, NULL);
    }
    return 0;
}

#define EDGE_WAIT_MS 200

struct edge_feed {
    struct gust_feed feed;
    struct gust_edge *e;
    struct gust_msg *taken;
    size_t cap;
    atomic_int stopping;
};

static int edge_next(struct gust_feed *f, struct gust_in *in, size_t max, int with_headers, char *why,
                     size_t why_size)
{
    (void)with_headers; /* edge messages have none */
    struct edge_feed *ef = (struct edge_feed *)f;
    if (max > ef->cap) {
        struct gust_msg *t = realloc(ef->taken, max * sizeof(*t));
        if (t == NULL) {
            snprintf(why, why_size, "out of memory");
            return -1;
        }
        ef->taken = t;
        ef->cap = max;
    }
    size_t n = gust_edge_take(ef->e, ef->taken, max, atomic_load(&ef->stopping) ? 0 : EDGE_WAIT_MS);
    for (size_t i = 0; i < n; i++) {
        in[i] = (struct gust_in){.msg = ef->taken[i]};
    }
    return (int)n;
}

static void edge_settle(struct gust_feed *f, struct gust_in *m, int64_t delay_ms)
{
    (void)f, (void)m, (void)delay_ms; /* at most once: nothing to acknowledge */
}

static void edge_release(struct gust_feed *f, struct gust_in *in, size_t n)
{
    (void)in;
    gust_edge_release(((struct edge_feed *)f)->e, n);
}

static void edge_wake(struct gust_feed *f)
{
    struct edge_feed *ef = (struct edge_feed *)f;
    atomic_store(&ef->stopping, 1);
    gust_edge_wake(ef->e);
}

static void edge_close(struct gust_feed *f)
{
    struct edge_feed *ef = (struct edge_feed *)f;
    gust_edge_destroy(ef->e);
    free(ef->taken);
    free(ef);
}

static const struct gust_feed_ops edge_ops = {
    .next = edge_next, .settle = edge_settle, .release = edge_release, .wake = edge_wake, .close = edge_close};

struct gust_feed *gust_edge_feed(struct gust_edge *e)
{
    struct edge_feed *ef = calloc(1, sizeof(*ef));
    if (ef == NULL) {
        gust_edge_destroy(e);
        return NULL;
    }
    ef->feed.ops = &edge_ops;
    ef->feed.drain_on_stop = e->cap;
    ef->e = e;
    return &ef->feed;
}
