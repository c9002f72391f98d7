#include "consumer.h"

#include <inttypes.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bus/bus.h"
#include "../common/buf.h"
#include "../common/log.h"
#include "dlq.h"
#include "edge.h"
#include "pull.h"
#include "recent.h"

#define FETCH_WAIT_MS 500 /* bounds how long a stop waits for an idle unit */
#define EDGE_WAIT_MS 200

enum state { STATE_STARTING, STATE_RUNNING, STATE_FAILING, STATE_STOPPED };
static const char *const state_names[] = {"starting", "running", "failing", "stopped"};

/* One publish of a batch waiting for its PubAck: which input it belongs to. */
struct ticket {
    struct gust_consumer *c;
    size_t msg;
};

struct gust_consumer {
    struct gust_consumer_conf conf;
    char durable[160];
    struct gust_handler handler;
    struct gust_bus *bus;
    struct gust_pull *pull;
    struct gust_edge *edge; /* the edge path: messages come from here, not the bus */
    pthread_t thread;
    int started;
    atomic_int stopping;
    atomic_int state;
    struct gust_unit_stats stats;

    pthread_mutex_t lock; /* the barrier and last_error */
    pthread_cond_t acked;
    size_t awaiting;
    char last_error[GUST_ERROR_MAX];

    /* Per-batch arrays, grown to the largest batch and reused. */
    size_t cap;
    struct gust_msg *msgs;
    int *outcome;
    char (*error)[GUST_ERROR_MAX];
    size_t *emit_end;
    uint8_t *publish_failed;
    uint8_t *fate; /* enum gust_fate per message, for GET /events */
    struct gust_recent *recent;
    struct ticket *tickets;
    size_t ntickets_cap;
    struct gust_batch batch;
    struct gust_buf envelope;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_last_error(struct gust_consumer *c, const char *msg)
{
    pthread_mutex_lock(&c->lock);
    snprintf(c->last_error, sizeof(c->last_error), "%s", msg);
    pthread_mutex_unlock(&c->lock);
}

static int grow(struct gust_consumer *c, size_t n)
{
    if (n <= c->cap) {
        return 0;
    }
#define GROW(field) \
    do { \
        void *p = realloc(c->field, n * sizeof(*c->field)); \
        if (p == NULL) { \
            return GUST_ENOMEM; \
        } \
        c->field = p; \
    } while (0)
    GROW(msgs);
    GROW(outcome);
    GROW(error);
    GROW(emit_end);
    GROW(publish_failed);
    GROW(fate);
#undef GROW
    c->cap = n;
    return 0;
}

/* Bus thread: one PubAck (or failure) of the current batch. */
static void on_stored(void *ud, int status, uint64_t seq, const char *error)
{
    (void)seq;
    struct ticket *t = ud;
    struct gust_consumer *c = t->c;
    pthread_mutex_lock(&c->lock);
    if (status != 0) {
        c->publish_failed[t->msg] = 1;
        snprintf(c->last_error, sizeof(c->last_error), "publish failed: %s", error != NULL ? error : "");
    }
    if (--c->awaiting == 0) {
        pthread_cond_signal(&c->acked);
    }
    pthread_mutex_unlock(&c->lock);
}

/* Starts one publish for message i. A full pending ring is back-pressure: wait for
 * room. A bus that is down fails the message (it is redelivered later). */
static void publish(struct gust_consumer *c, struct ticket *t, const char *subject, const void *data, size_t len)
{
    pthread_mutex_lock(&c->lock);
    c->awaiting++;
    pthread_mutex_unlock(&c->lock);
    for (;;) {
        int rc = gust_bus_publish(c->bus, subject, data, len, on_stored, t, NULL);
        if (rc == 0) {
            return;
        }
        if (!gust_bus_connected(c->bus) || atomic_load(&c->stopping)) {
            on_stored(t, GUST_EAGAIN, 0, "bus unavailable");
            return;
        }
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

static size_t count_publishes(const struct gust_consumer *c, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += c->outcome[i] == GUST_OUTCOME_OK ? c->emit_end[i] - (i > 0 ? c->emit_end[i - 1] : 0) : 1;
    }
    return total;
}

static int dead_now(const struct gust_consumer *c, size_t i)
{
    /* An edge message has no redelivery: a failure dead-letters it at once. */
    return c->outcome[i] == GUST_OUTCOME_DEAD ||
           (c->outcome[i] == GUST_OUTCOME_RETRY &&
            (c->edge != NULL || (int64_t)c->msgs[i].attempt >= c->conf.max_deliver));
}

/* Backing off: the delay doubles with each attempt, up to retry_max_delay. */
static int64_t retry_delay(const struct gust_consumer *c, uint32_t attempt)
{
    int64_t delay = c->conf.retry_delay_ms;
    for (uint32_t a = 1; a < attempt && delay < c->conf.retry_max_delay_ms; a++) {
        delay *= 2;
    }
    return delay < c->conf.retry_max_delay_ms ? delay : c->conf.retry_max_delay_ms;
}

/* Acks and naks go on the bus's buffered connection, the messages themselves come on the
 * one that writes at once (for the pull requests; see gust_consumer_start): a batch's acks
 * then leave in one write, and the next pull request does not wait behind them. An ack is
 * a plain publish to the message's reply subject, as natsMsg_Ack sends it. */
static void ack(struct gust_consumer *c, natsMsg *m, int64_t nak_delay_ms)
{
    const char *reply = natsMsg_GetReply(m);
    if (reply == NULL || reply[0] == '\0') {
        return;
    }
    if (nak_delay_ms < 0) {
        natsConnection_PublishString(gust_bus_conn(c->bus), reply, "+ACK");
        return;
    }
    char body[64];
    snprintf(body, sizeof(body), "-NAK {\"delay\":%" PRId64 "}", nak_delay_ms * 1000000);
    natsConnection_PublishString(gust_bus_conn(c->bus), reply, body);
}

/* One batch: in[0..n) from the bus, or already in c->msgs (edge, in NULL: nothing to
 * ack, a failed message is dead-lettered or, when even that fails, lost). */
static void run_batch(struct gust_consumer *c, natsMsg **in, size_t n)
{
    if (grow(c, n) != 0) {
        gust_error("[%s] out of memory for a batch of %zu", c->durable, n);
        return; /* not acked: redelivered after ack_wait */
    }
    for (size_t i = 0; i < n; i++) {
        c->outcome[i] = GUST_OUTCOME_OK;
        c->publish_failed[i] = 0;
        if (in == NULL) {
            continue;
        }
        natsMsg *m = in[i];
        jsMsgMetaData *meta = NULL;
        uint64_t attempt = 1, seq = 0;
        int64_t ts = 0;
        if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
            attempt = meta->NumDelivered;
            seq = meta->Sequence.Stream;
            ts = meta->Timestamp;
            jsMsgMetaData_Destroy(meta);
        }
        c->msgs[i] = (struct gust_msg){.subject = natsMsg_GetSubject(m), .data = natsMsg_GetData(m),
                                       .len = (size_t)natsMsg_GetDataLength(m), .stream_seq = seq,
                                       .attempt = (uint32_t)attempt, .stored_ns = ts};
    }

    /* Handle. */
    uint64_t t0 = now_ns();
    gust_emits_clear(&c->batch.emits);
    c->batch.msgs = c->msgs;
    c->batch.n = n;
    c->batch.outcome = c->outcome;
    c->batch.error = c->error;
    c->batch.emit_end = c->emit_end;
    c->handler.run_batch(c->handler.impl, &c->batch);
    uint64_t t1 = now_ns();

    /* Publish every emit of a message that succeeded, and every dead letter; the tickets
     * array must not move while publishes are in flight, so size it first. */
    size_t total = count_publishes(c, n);
    if (total > c->ntickets_cap) {
        struct ticket *p = realloc(c->tickets, total * sizeof(*p));
        if (p == NULL) {
            gust_error("[%s] out of memory for %zu publishes", c->durable, total);
            return;
        }
        c->tickets = p;
        c->ntickets_cap = total;
    }
    char dlq_subject[300];
    snprintf(dlq_subject, sizeof(dlq_subject), "%s%s", c->conf.dlq_prefix, c->conf.unit);
    size_t k = 0, emitted = 0;
    for (size_t i = 0; i < n; i++) {
        if (c->outcome[i] == GUST_OUTCOME_OK) {
            for (size_t e = i > 0 ? c->emit_end[i - 1] : 0; e < c->emit_end[i]; e++) {
                const struct gust_emit *em = &c->batch.emits.v[e];
                c->tickets[k] = (struct ticket){c, i};
                publish(c, &c->tickets[k++], em->subject, em->payload, em->len);
                emitted++;
            }
        } else if (dead_now(c, i)) {
            c->envelope.len = 0;
            if (gust_dlq_envelope(&c->envelope, c->conf.unit, &c->msgs[i], c->error[i]) != 0) {
                c->publish_failed[i] = 1;
                continue;
            }
            c->tickets[k] = (struct ticket){c, i};
            publish(c, &c->tickets[k++], dlq_subject, c->envelope.data, c->envelope.len);
        }
    }

    /* Send the batch's publishes now rather than when the library's flusher next runs
     * (up to 1 ms later): at low rates that wait would be most of the latency. The
     * flush's PING round trip overlaps the PubAcks we wait for anyway. */
    if (k > 0) {
        natsConnection_FlushTimeout(gust_bus_conn(c->bus), 1000);
    }

    /* The barrier: nothing is acked before everything it produced is stored. */
    pthread_mutex_lock(&c->lock);
    while (c->awaiting > 0) {
        pthread_cond_wait(&c->acked, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    uint64_t t2 = now_ns();

    uint64_t ok = 0, failed = 0, dead = 0;
    for (size_t i = 0; i < n; i++) {
        natsMsg *m = in != NULL ? in[i] : NULL;
        c->fate[i] = c->publish_failed[i]               ? GUST_FATE_PUBLISH_FAILED
                     : c->outcome[i] == GUST_OUTCOME_OK   ? GUST_FATE_OK
                     : dead_now(c, i)                     ? GUST_FATE_DEAD
                     : c->outcome[i] == GUST_OUTCOME_WAIT ? GUST_FATE_WAIT
                                                          : GUST_FATE_RETRY;
        switch (c->fate[i]) {
        case GUST_FATE_OK:
            ok++;
            if (m != NULL) {
                ack(c, m, -1);
            }
            break;
        case GUST_FATE_DEAD:
            dead++;
            if (m != NULL) {
                ack(c, m, -1);
            }
            gust_warn("[%s] dead-lettered %s seq %" PRIu64 " after %u attempt(s): %s", c->durable,
                      c->msgs[i].subject, c->msgs[i].stream_seq, c->msgs[i].attempt, c->error[i]);
            break;
        default: /* redelivered after a delay that grows with the attempts */
            failed++;
            if (m != NULL) {
                ack(c, m, retry_delay(c, c->msgs[i].attempt));
            }
            if (c->fate[i] != GUST_FATE_PUBLISH_FAILED) {
                set_last_error(c, c->error[i]);
            }
        }
    }
    atomic_fetch_add(&c->stats.events_ok, ok);
    atomic_fetch_add(&c->stats.events_failed, failed + dead);
    atomic_fetch_add(&c->stats.dead_letters, dead);
    atomic_fetch_add(&c->stats.emits, emitted);
    atomic_fetch_add(&c->stats.process_ns, t1 - t0);
    atomic_fetch_add(&c->stats.barrier_ns, t2 - t1);
    /* The last events, for GET /events: a bounded copy into a fixed ring. */
    if (c->recent == NULL) {
        c->recent = gust_recent_get(c->conf.unit);
    }
    gust_recent_record(c->recent, &c->batch, c->fate);
}

static void *unit_thread(void *arg)
{
    struct gust_consumer *c = arg;
    size_t max = (size_t)(c->conf.batch > 0 ? c->conf.batch : 1);
    natsMsg **in = calloc(max, sizeof(*in));
    if (in == NULL || grow(c, max) != 0) {
        gust_error("[%s] out of memory for a batch of %zu", c->durable, max);
        atomic_store(&c->state, STATE_FAILING);
        free(in);
        return NULL;
    }
    while (!atomic_load(&c->stopping)) {
        uint64_t t0 = now_ns();
        char why[256];
        int n = gust_pull_next(c->pull, in, max, why, sizeof(why));
        atomic_fetch_add(&c->stats.fetches, 1);
        atomic_fetch_add(&c->stats.fetch_ns, now_ns() - t0);
        if (n == 0) {
            continue;
        }
        if (n < 0) {
            if (atomic_exchange(&c->state, STATE_FAILING) != STATE_FAILING) {
                gust_warn("[%s] %s", c->durable, why);
                set_last_error(c, why);
            }
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        if (atomic_exchange(&c->state, STATE_RUNNING) == STATE_FAILING) {
            gust_info("[%s] fetching again", c->durable);
        }
        run_batch(c, in, (size_t)n);
        for (int i = 0; i < n; i++) {
            natsMsg_Destroy(in[i]);
        }
    }
    free(in);
    atomic_store(&c->state, STATE_STOPPED);
    return NULL;
}

/* The edge path's loop: batches from the in-memory queue instead of fetches. At a stop
 * the source has been stopped already (sources stop before units), so what is queued is
 * handled rather than dropped: at most one queue's worth. */
static void *edge_thread(void *arg)
{
    struct gust_consumer *c = arg;
    size_t max = (size_t)(c->conf.batch > 0 ? c->conf.batch : 1), drained = 0;
    if (grow(c, max) != 0) {
        gust_error("[%s] out of memory for a batch of %zu", c->durable, max);
        atomic_store(&c->state, STATE_FAILING);
        return NULL;
    }
    atomic_store(&c->state, STATE_RUNNING);
    for (;;) {
        int stopping = atomic_load(&c->stopping);
        uint64_t t0 = now_ns();
        size_t n = gust_edge_take(c->edge, c->msgs, max, stopping ? 0 : EDGE_WAIT_MS);
        atomic_fetch_add(&c->stats.fetches, 1);
        atomic_fetch_add(&c->stats.fetch_ns, now_ns() - t0);
        if (stopping && (n == 0 || drained >= gust_edge_capacity(c->edge))) {
            gust_edge_release(c->edge, n);
            break;
        }
        if (n > 0) {
            run_batch(c, NULL, n);
            gust_edge_release(c->edge, n);
            drained += stopping ? n : 0;
        }
    }
    atomic_store(&c->state, STATE_STOPPED);
    return NULL;
}

int gust_consumer_create(const struct gust_consumer_conf *conf, struct gust_bus *bus, struct gust_handler handler,
                         struct gust_consumer **out, struct gust_err *err)
{
    struct gust_consumer *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        if (handler.destroy != NULL) {
            handler.destroy(handler.impl);
        }
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    c->conf = *conf;
    c->conf.unit = strdup(conf->unit);
    c->conf.kind = strdup(conf->kind);
    if (conf->edge_source != NULL) {
        /* No bus consumer: /units shows where the messages come from instead. */
        char where[200];
        snprintf(where, sizeof(where), "edge:%s", conf->edge_source);
        c->conf.filter = strdup(where);
        c->conf.edge_source = NULL;
    } else {
        c->conf.filter = strdup(conf->filter);
    }
    c->conf.stream = strdup(conf->stream);
    c->conf.dlq_prefix = strdup(conf->dlq_prefix);
    c->handler = handler;
    c->bus = bus;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->acked, NULL);
    snprintf(c->durable, sizeof(c->durable), "%s_%s", conf->kind, conf->unit);
    if (c->conf.unit == NULL || c->conf.kind == NULL || c->conf.filter == NULL || c->conf.stream == NULL ||
        c->conf.dlq_prefix == NULL) {
        gust_consumer_destroy(c);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    if (conf->edge_source != NULL) {
        int rc = gust_edge_create(conf->unit, conf->edge_source, conf->edge_queue, &c->edge, err);
        if (rc != 0) {
            gust_consumer_destroy(c);
            return rc;
        }
    }
    *out = c;
    return 0;
}

int gust_consumer_start(struct gust_consumer *c, struct gust_err *err)
{
    if (c->edge != NULL) {
        if (pthread_create(&c->thread, NULL, edge_thread, c) != 0) {
            return gust_err_set(err, GUST_EIO, "%s: cannot start a thread", c->durable);
        }
        c->started = 1;
        gust_info("[%s] fed in memory by source '%s' (edge path: at most once; queue %zu, batch %d)", c->durable,
                  gust_edge_source(c->edge), gust_edge_capacity(c->edge), c->conf.batch);
        return 0;
    }
    struct gust_pull_conf pc = {
        .stream = c->conf.stream,
        .durable = c->durable,
        .filter = c->conf.filter,
        .ack_wait_ms = c->conf.ack_wait_ms,
        .max_ack_pending = c->conf.batch * 8 > 1000 ? c->conf.batch * 8 : 1000,
        .expires_ms = FETCH_WAIT_MS,
    };
    /* Requests on the connection that writes at once: a pull request leaves now, not
     * with the flusher up to 1 ms later, which a message arriving meanwhile would wait
     * for. */
    int rc = gust_pull_open(&pc, gust_bus_js(c->bus), gust_bus_conn_now(c->bus), &c->pull, err);
    if (rc != 0) {
        return rc;
    }
    if (pthread_create(&c->thread, NULL, unit_thread, c) != 0) {
        return gust_err_set(err, GUST_EIO, "%s: cannot start a thread", c->durable);
    }
    c->started = 1;
    gust_info("[%s] consuming %s (batch %d)", c->durable, c->conf.filter, c->conf.batch);
    return 0;
}

void gust_consumer_request_stop(struct gust_consumer *c)
{
    atomic_store(&c->stopping, 1);
    if (c->edge != NULL) {
        gust_edge_wake(c->edge);
    }
}

int gust_consumer_stopped(const struct gust_consumer *c)
{
    return !c->started;
}

void gust_consumer_stop(struct gust_consumer *c)
{
    if (c->started) {
        gust_consumer_request_stop(c);
        pthread_join(c->thread, NULL);
        c->started = 0;
    }
}

void gust_consumer_destroy(struct gust_consumer *c)
{
    if (c == NULL) {
        return;
    }
    gust_consumer_stop(c);
    gust_pull_close(c->pull);
    gust_edge_destroy(c->edge);
    if (c->handler.destroy != NULL) {
        c->handler.destroy(c->handler.impl);
    }
    gust_emits_free(&c->batch.emits);
    gust_buf_free(&c->envelope);
    free(c->msgs);
    free(c->outcome);
    free(c->error);
    free(c->emit_end);
    free(c->publish_failed);
    free(c->fate);
    free(c->tickets);
    free((char *)c->conf.unit);
    free((char *)c->conf.kind);
    free((char *)c->conf.filter);
    free((char *)c->conf.stream);
    free((char *)c->conf.dlq_prefix);
    pthread_cond_destroy(&c->acked);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

const char *gust_consumer_name(const struct gust_consumer *c)
{
    return c->conf.unit;
}

const char *gust_consumer_kind(const struct gust_consumer *c)
{
    return c->conf.kind;
}

const char *gust_consumer_filter(const struct gust_consumer *c)
{
    return c->conf.filter;
}

struct gust_edge *gust_consumer_edge(const struct gust_consumer *c)
{
    return c->edge;
}

const struct gust_unit_stats *gust_consumer_stats(const struct gust_consumer *c)
{
    return &c->stats;
}

const char *gust_consumer_state(const struct gust_consumer *c)
{
    return state_names[atomic_load(&c->state)];
}

void gust_consumer_last_error(struct gust_consumer *c, char *out, size_t size)
{
    pthread_mutex_lock(&c->lock);
    snprintf(out, size, "%s", c->last_error);
    pthread_mutex_unlock(&c->lock);
}
