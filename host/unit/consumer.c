#include "consumer.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/tally.h"
#include "dlq.h"
#include "recent.h"
#include "trace_hops.h"
#include "waits.h"

#define FAILING_PAUSE_MS 100
#define IDLE_PAUSE_MS 100
#define REPUBLISH_PAUSE_MS 200
/* Opening a feed again: from this, doubling, up to OPEN_MAX_DELAY_MS (so every unit runs
 * within a few seconds of the bus answering again). */
/* A failing unit whose reads come back empty is running again once none has failed for
 * this long: an empty read is no proof (a pull feed's requests to a frozen server
 * expire empty, between the failures that say so), a quiet spell is. */
#define RECOVER_QUIET_MS 5000
#define OPEN_FIRST_DELAY_MS 250
#define OPEN_MAX_DELAY_MS 5000
/* An ordered unit more than a batch behind (a detect unit replaying what was stored
 * while it was down) reads this many batches at once: each batch ends with a barrier,
 * whose last PubAcks it waits for with the bus idle, so fewer of them shorten the
 * catch-up. Live, it reads its configured batch again. */
#define CATCH_UP_BATCHES 4

enum state { STATE_STARTING, STATE_RUNNING, STATE_FAILING, STATE_STOPPED };
static const char *const state_names[] = {"starting", "running", "failing", "stopped"};

/* One publish of a batch waiting for its PubAck: which input it belongs to, and what
 * it is, so that an ordered unit can send it again. */
struct ticket {
    struct gust_consumer *c;
    size_t msg;
    struct gust_pub pub;
    uint8_t failed;
    uint8_t refused; /* for good (GUST_PUBLISH_REFUSED): never sent again */
    uint8_t dlq;     /* a dead-letter envelope: 1, 2 without its payload */
    char id[GUST_MSG_ID_MAX];
};

struct gust_consumer {
    struct gust_consumer_conf conf;
    char name[160]; /* <kind>_<unit>: the log prefix (and a durable consumer's name) */
    char *source;   /* for /units */
    char *identity;
    atomic_int kept;
    struct gust_handler handler;
    struct gust_outlet *outlet;
    struct gust_feed *feed;
    pthread_t thread;
    int started;
    atomic_int stopping;
    atomic_int state;
    atomic_int_fast64_t state_since; /* CLOCK_MONOTONIC ms of the last change of state */
    atomic_uint_fast64_t retries;    /* failed opens of the feed */
    /* While the handler runs a batch: when that batch counts as stuck (CLOCK_MONOTONIC
     * ms), else 0. */
    atomic_int_fast64_t handler_deadline;
    struct gust_unit_stats stats;
    struct gust_waits waits; /* deliveries that were not rejections, by sequence */

    pthread_mutex_t lock; /* the barrier and last_error */
    pthread_cond_t acked;
    size_t awaiting;
    char last_error[GUST_ERROR_MAX];
    int64_t last_error_at; /* Unix time in ms */

    /* Per-batch arrays, grown to the largest batch and reused. */
    size_t cap;
    struct gust_in *in;
    uint8_t *tick; /* per message of the batch: the unit's own idle tick */
    const char **reply_to; /* per message of the batch: its call's inbox, or NULL */
    struct gust_msg *msgs;
    int *outcome;
    char (*error)[GUST_ERROR_MAX];
    size_t *emit_end;
    uint8_t *publish_failed;
    uint8_t *refused; /* an emit of it was refused for good: a rejection */
    uint8_t *fate; /* enum gust_fate per message, for GET /events */
    struct gust_recent *recent;
    struct gust_tally emitted; /* the subjects of its stored emits, for GET /topology */
    struct ticket *tickets;
    size_t nticket, ntickets_cap;
    struct gust_batch batch;
    struct gust_buf envelopes; /* the batch's dead-letter envelopes, end to end */
    size_t *envelope_at;       /* per ticket of a dead letter: its offset in envelopes */
    struct gust_trace_hops hops; /* the batch's spans (messages with a traceparent) */
    uint64_t behind;             /* what the feed held after its last read */
};

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Sets the state, and since when the unit is in it; returns the state before. */
static int set_state(struct gust_consumer *c, int state)
{
    int was = atomic_exchange(&c->state, state);
    if (was != state) {
        atomic_store(&c->state_since, gust_clock_mono_ms());
    }
    return was;
}

/* With c->lock held. */
static void set_last_error_locked(struct gust_consumer *c, const char *msg)
{
    snprintf(c->last_error, sizeof(c->last_error), "%s", msg);
    c->last_error_at = gust_clock_wall_ms();
}

static void set_last_error(struct gust_consumer *c, const char *msg)
{
    pthread_mutex_lock(&c->lock);
    set_last_error_locked(c, msg);
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
    GROW(in);
    GROW(msgs);
    GROW(outcome);
    GROW(error);
    GROW(emit_end);
    GROW(publish_failed);
    GROW(refused);
    GROW(fate);
    GROW(tick);
    GROW(reply_to);
#undef GROW
    c->cap = n;
    return 0;
}

/* Acks and hands back the idle ticks that are not this unit's (they share its input
 * subject with the detect unit that stored them); returns how many messages are left,
 * in order, with c->tick saying which are its own ticks. */
static size_t skip_ticks(struct gust_consumer *c, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        struct gust_in *in = &c->in[i];
        int own = in->tick != NULL && c->handler.reads_ticks && strcmp(in->tick, c->conf.unit) == 0;
        if (in->tick != NULL && !own) {
            c->feed->ops->settle(c->feed, in, -1);
            c->feed->ops->release(c->feed, in, 1);
            continue;
        }
        c->tick[kept] = (uint8_t)own;
        c->in[kept++] = *in;
    }
    return kept;
}

static size_t emit_start(const struct gust_consumer *c, size_t i)
{
    return i > 0 ? c->emit_end[i - 1] : 0;
}

/* Bus thread: one PubAck (or failure) of the current batch. */
static void on_stored(void *ud, int status, uint64_t seq, const char *error)
{
    (void)seq;
    struct ticket *t = ud;
    struct gust_consumer *c = t->c;
    pthread_mutex_lock(&c->lock);
    if (status == GUST_PUBLISH_REFUSED) {
        /* Sending it again cannot store it: the message is rejected (a dead letter
         * after max_deliver), not waited for. */
        t->refused = 1;
        if (!c->refused[t->msg] && !t->dlq) { /* a dead letter keeps its message's error */
            snprintf(c->error[t->msg], sizeof(c->error[0]), "emit to %s %s", t->pub.subject,
                     error != NULL ? error : "refused");
        }
        c->refused[t->msg] = 1;
        snprintf(c->last_error, sizeof(c->last_error), "publish %s", error != NULL ? error : "refused");
    } else if (status != 0) {
        t->failed = 1;
        c->publish_failed[t->msg] = 1;
        char why[GUST_ERROR_MAX];
        snprintf(why, sizeof(why), "publish failed: %.900s", error != NULL ? error : "");
        set_last_error_locked(c, why);
    }
    if (--c->awaiting == 0) {
        pthread_cond_signal(&c->acked);
    }
    pthread_mutex_unlock(&c->lock);
}

/* Starts the publish of ticket t. A full pending ring is back-pressure: wait for room.
 * A bus that is down fails it (redelivered, or sent again, later). */
static void publish(struct gust_consumer *c, struct ticket *t)
{
    t->failed = 0;
    t->refused = 0;
    pthread_mutex_lock(&c->lock);
    c->awaiting++;
    pthread_mutex_unlock(&c->lock);
    for (;;) {
        if (c->outlet->ops->publish(c->outlet, &t->pub, on_stored, t) == 0) {
            return;
        }
        if (!c->outlet->ops->connected(c->outlet) || atomic_load(&c->stopping)) {
            on_stored(t, GUST_EAGAIN, 0, "bus unavailable");
            return;
        }
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

static void barrier(struct gust_consumer *c)
{
    pthread_mutex_lock(&c->lock);
    int none = c->awaiting == 0;
    pthread_mutex_unlock(&c->lock);
    /* Every PubAck is back (a sink publishes nothing): no flush, which is a round trip
     * to the server (PING, PONG) that the batch's acks would wait behind. They leave
     * with the library's flusher, within a millisecond. */
    if (none) {
        return;
    }
    c->outlet->ops->flush(c->outlet);
    pthread_mutex_lock(&c->lock);
    while (c->awaiting > 0) {
        pthread_cond_wait(&c->acked, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
}

/* Rejections so far, this delivery included: JetStream's count of deliveries less the
 * ones that ended without a rejection. */
static int64_t rejections(const struct gust_consumer *c, size_t i)
{
    return (int64_t)c->msgs[i].attempt - (int64_t)gust_waits_get(&c->waits, c->msgs[i].stream_seq);
}

static int dead_now(const struct gust_consumer *c, size_t i)
{
    /* Without redelivery (the edge path, an ordered read) a failure dead-letters at once. */
    return c->outcome[i] == GUST_OUTCOME_DEAD ||
           (c->outcome[i] == GUST_OUTCOME_RETRY &&
            (c->conf.settle != GUST_SETTLE_ACK || rejections(c, i) >= c->conf.max_deliver));
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

static size_t count_publishes(const struct gust_consumer *c, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += c->outcome[i] == GUST_OUTCOME_OK ? c->emit_end[i] - emit_start(c, i) : (size_t)dead_now(c, i);
    }
    return total;
}

static struct ticket *next_ticket(struct gust_consumer *c, size_t msg)
{
    struct ticket *t = &c->tickets[c->nticket++];
    t->c = c;
    t->msg = msg;
    t->id[0] = '\0';
    t->pub = (struct gust_pub){0};
    t->dlq = 0;
    return t;
}

/* Message i's stored emits, by subject: a run of one subject is counted at once. */
static void tally_emits(struct gust_consumer *c, size_t i)
{
    size_t e = emit_start(c, i), end = c->emit_end[i];
    while (e < end) {
        const char *subject = c->batch.emits.v[e].subject;
        size_t run = e + 1;
        while (run < end && strcmp(c->batch.emits.v[run].subject, subject) == 0) {
            run++;
        }
        gust_tally_add(&c->emitted, subject, run - e);
        e = run;
    }
}

/* The batch's publishes: every emit of a message that succeeded, and every dead letter.
 * Each has a deterministic Nats-Msg-Id (a message redelivered after a crash produces
 * the same ids, which JetStream stores once), except on the edge path, whose messages
 * have no stream sequence. Returns 0 or GUST_ENOMEM. */
static int prepare_publishes(struct gust_consumer *c, size_t n, const char *dlq_subject)
{
    size_t total = count_publishes(c, n);
    c->nticket = 0;
    if (total > c->ntickets_cap) {
        /* The tickets must not move while publishes are in flight: sized first. */
        struct ticket *p = realloc(c->tickets, total * sizeof(*p));
        size_t *at = realloc(c->envelope_at, total * sizeof(*at));
        if (p != NULL) {
            c->tickets = p;
        }
        if (at != NULL) {
            c->envelope_at = at;
        }
        if (p == NULL || at == NULL) {
            return GUST_ENOMEM;
        }
        c->ntickets_cap = total;
    }
    c->envelopes.len = 0;
    /* Without room, the emits go out without the unit's traceparent: a broken trace,
     * not a lost event. */
    (void)gust_trace_hops_reserve(&c->hops, &c->batch.emits, c->emit_end, n);
    int ids = c->conf.settle != GUST_SETTLE_NONE;
    for (size_t i = 0; i < n; i++) {
        const struct gust_msg *m = &c->msgs[i];
        if (c->outcome[i] == GUST_OUTCOME_OK) {
            for (size_t e = emit_start(c, i); e < c->emit_end[i]; e++) {
                const struct gust_emit *em = &c->batch.emits.v[e];
                struct ticket *t = next_ticket(c, i);
                t->pub = (struct gust_pub){.subject = em->subject, .data = em->payload, .len = em->len,
                                           .headers = em->headers, .nheaders = em->nheaders};
                gust_trace_hops_emit_headers(&c->hops, i, &t->pub.headers, &t->pub.nheaders);
                if (ids && c->handler.emit_id != NULL) {
                    c->handler.emit_id(c->handler.impl, &c->batch, i, e, t->id);
                } else if (ids) {
                    snprintf(t->id, sizeof(t->id), "%s:%" PRIu64 ":%zu", c->conf.unit, m->stream_seq,
                             e - emit_start(c, i));
                }
                t->pub.msg_id = t->id[0] != '\0' ? t->id : NULL;
            }
        } else if (dead_now(c, i)) {
            size_t at = c->envelopes.len;
            if (gust_dlq_envelope(&c->envelopes, c->conf.unit, m, c->error[i]) != 0) {
                c->publish_failed[i] = 1;
                continue;
            }
            struct ticket *t = next_ticket(c, i);
            c->envelope_at[t - c->tickets] = at;
            t->dlq = 1;
            t->pub = (struct gust_pub){.subject = dlq_subject, .len = c->envelopes.len - at};
            if (ids) {
                snprintf(t->id, sizeof(t->id), "%s:%" PRIu64 ":dlq", c->conf.unit, m->stream_seq);
                t->pub.msg_id = t->id;
            }
        }
    }
    /* The envelopes are in place now that their buffer no longer grows. */
    for (size_t k = 0; k < c->nticket; k++) {
        if (c->tickets[k].pub.subject == dlq_subject) {
            c->tickets[k].pub.data = c->envelopes.data + c->envelope_at[k];
        }
    }
    return 0;
}

/* Appends message i's dead letter to the batch's tickets (room is there), without its
 * payload when omit. Returns it, or NULL (out of memory: the message is failed). */
static struct ticket *add_dead_letter(struct gust_consumer *c, size_t i, int omit, const char *dlq_subject)
{
    const struct gust_msg *m = &c->msgs[i];
    size_t at = c->envelopes.len;
    if (gust_dlq_envelope_as(&c->envelopes, c->conf.unit, m, c->error[i], omit) != 0) {
        c->publish_failed[i] = 1;
        return NULL;
    }
    struct ticket *t = next_ticket(c, i);
    c->envelope_at[t - c->tickets] = at;
    t->dlq = 1 + (omit != 0);
    t->pub = (struct gust_pub){.subject = dlq_subject, .len = c->envelopes.len - at};
    if (c->conf.settle != GUST_SETTLE_NONE) {
        snprintf(t->id, sizeof(t->id), "%s:%" PRIu64 ":dlq", c->conf.unit, m->stream_seq);
        t->pub.msg_id = t->id;
    }
    return t;
}

/* Publishes the tickets from `from` on (their envelopes are in place now) and waits. */
static void publish_from(struct gust_consumer *c, size_t from)
{
    for (size_t k = from; k < c->nticket; k++) {
        c->tickets[k].pub.data = c->envelopes.data + c->envelope_at[k];
        publish(c, &c->tickets[k]);
    }
    barrier(c);
}

/* After the barrier: the messages whose publishes the server refused for good. An emit
 * refused is a rejection of its message (retried up to max_deliver, then dead-lettered
 * here); a dead letter refused (too large itself) is sent again without its payload.
 * Their new publishes are appended to the batch's tickets (none is in flight now) and
 * waited for; a dead letter not stored leaves its message failed (publish_failed). */
static void settle_refused(struct gust_consumer *c, size_t n, const char *dlq_subject)
{
    size_t more = 0, old = c->nticket;
    for (size_t i = 0; i < n; i++) {
        more += c->refused[i];
    }
    if (more == 0) {
        return;
    }
    if (old + 2 * more > c->ntickets_cap) { /* a dead letter, and one without payload */
        struct ticket *p = realloc(c->tickets, (old + 2 * more) * sizeof(*p));
        size_t *at = realloc(c->envelope_at, (old + 2 * more) * sizeof(*at));
        c->tickets = p != NULL ? p : c->tickets;
        c->envelope_at = at != NULL ? at : c->envelope_at;
        if (p == NULL || at == NULL) {
            for (size_t i = 0; i < n; i++) {
                c->publish_failed[i] |= c->refused[i]; /* redelivered: counted again then */
            }
            return;
        }
        c->ntickets_cap = old + 2 * more;
    }
    for (size_t i = 0; i < n; i++) {
        if (!c->refused[i]) {
            continue;
        }
        const struct gust_msg *m = &c->msgs[i];
        int envelope_refused = 0;
        for (size_t k = 0; k < old; k++) {
            envelope_refused |= c->tickets[k].msg == i && c->tickets[k].dlq && c->tickets[k].refused;
        }
        c->refused[i] = 0;
        if (c->outcome[i] == GUST_OUTCOME_OK) {
            c->outcome[i] = GUST_OUTCOME_RETRY; /* c->error[i] says which emit and why */
            gust_warn("[%s] %s seq %" PRIu64 " rejected (attempt %u of %" PRId64 "): %s", c->name, m->subject,
                      m->stream_seq, m->attempt, c->conf.max_deliver, c->error[i]);
            if (dead_now(c, i)) {
                add_dead_letter(c, i, 0, dlq_subject);
            }
        } else if (envelope_refused) {
            add_dead_letter(c, i, 1, dlq_subject);
        }
    }
    size_t second = c->nticket;
    publish_from(c, old);
    for (size_t k = old; k < second; k++) {
        if (c->tickets[k].refused && c->tickets[k].dlq == 1) {
            add_dead_letter(c, c->tickets[k].msg, 1, dlq_subject);
        }
    }
    publish_from(c, second);
    for (size_t k = old; k < c->nticket; k++) {
        struct ticket *t = &c->tickets[k];
        if (t->refused && (t->dlq == 2 || k >= second)) { /* even without its payload: kept, and said */
            c->publish_failed[t->msg] = 1;
            gust_error("[%s] the dead letter of seq %" PRIu64 " is refused: %s", c->name, c->msgs[t->msg].stream_seq,
                       c->error[t->msg]);
        }
    }
}

/* An ordered unit's position moves only past what is stored: what failed is sent
 * again (the same ids: what did get stored is not stored twice) until it is, or the
 * unit stops. Returns 1 when everything is stored. */
static int republish_failed(struct gust_consumer *c)
{
    for (int round = 1;; round++) {
        size_t failed = 0;
        for (size_t k = 0; k < c->nticket; k++) {
            failed += c->tickets[k].failed;
        }
        if (failed == 0) {
            return 1;
        }
        if (atomic_load(&c->stopping)) {
            return 0;
        }
        if (round == 1 || round % 50 == 0) {
            char why[GUST_ERROR_MAX];
            gust_consumer_last_error(c, why, sizeof(why));
            gust_warn("[%s] %zu publish(es) of a batch not stored (%s): sending them again", c->name, failed, why);
        }
        pause_ms(REPUBLISH_PAUSE_MS);
        for (size_t k = 0; k < c->nticket; k++) {
            if (c->tickets[k].failed) {
                publish(c, &c->tickets[k]);
            }
        }
        barrier(c);
    }
}

/* Sends message i's reply, if the handler gave one (*next: the first of the batch's
 * replies not looked at yet; they are in message order). Fire and forget: the request
 * may be answered already (a redelivery) or gone. */
static void send_reply(struct gust_consumer *c, size_t i, size_t *next)
{
    const struct gust_replies *r = &c->batch.replies;
    while (*next < r->n && r->v[*next].msg < i) {
        (*next)++;
    }
    if (*next >= r->n || r->v[*next].msg != i || c->reply_to[i] == NULL || c->outlet->ops->reply == NULL) {
        return;
    }
    const struct gust_reply *p = &r->v[*next];
    char why[256];
    if (c->outlet->ops->reply(c->outlet, c->reply_to[i], p->status, r->data.data + p->at, p->len, why,
                              sizeof(why)) != 0) {
        gust_warn("[%s] seq %" PRIu64 ": reply not sent: %s", c->name, c->msgs[i].stream_seq, why);
    }
}

int gust_replies_push(struct gust_replies *r, size_t msg, int status, const char *json, size_t len)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        struct gust_reply *v = realloc(r->v, cap * sizeof(*v));
        if (v == NULL) {
            return GUST_ENOMEM;
        }
        r->v = v;
        r->cap = cap;
    }
    size_t at = r->data.len;
    if (gust_buf_append(&r->data, json, len) != 0) {
        return GUST_ENOMEM;
    }
    r->v[r->n++] = (struct gust_reply){.msg = msg, .status = status, .at = at, .len = len};
    return 0;
}

/* gust_batch.progress: message i of the batch is still being worked on. */
static void batch_progress(void *ud, size_t i)
{
    struct gust_consumer *c = ud;
    c->feed->ops->progress(c->feed, &c->in[i]);
}

/* gust_batch.ack_now: message i of the batch went (an ordered sink holding the rest). */
static void batch_ack_now(void *ud, size_t i)
{
    struct gust_consumer *c = ud;
    c->feed->ops->settle(c->feed, &c->in[i], -1);
}

/* One batch of n messages in c->in. Returns 0 when it was all stored (ordered units
 * may go on), -1 when not (the unit is stopping with output that was not stored). */
static int run_batch(struct gust_consumer *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        c->outcome[i] = GUST_OUTCOME_OK;
        c->publish_failed[i] = 0;
        c->refused[i] = 0;
        c->msgs[i] = c->in[i].msg;
        c->reply_to[i] = c->in[i].reply_to;
    }
    if (gust_trace_hops_begin(&c->hops, c->in, c->msgs, n) != 0) {
        gust_warn("[%s] out of memory for a batch's trace spans: traced as none", c->name);
    }

    /* Handle. */
    uint64_t t0 = gust_clock_mono_ns();
    gust_emits_clear(&c->batch.emits);
    c->batch.msgs = c->msgs;
    c->batch.n = n;
    c->batch.outcome = c->outcome;
    c->batch.error = c->error;
    c->batch.emit_end = c->emit_end;
    c->batch.tick = c->tick;
    c->batch.reply_to = c->handler.answers_calls ? c->reply_to : NULL;
    c->batch.replies.n = 0;
    c->batch.replies.data.len = 0;
    if (c->conf.handler_timeout_ms > 0) {
        atomic_store(&c->handler_deadline,
                     (int64_t)(t0 / 1000000u) + c->conf.handler_timeout_ms * (int64_t)n + GUST_STUCK_MARGIN_MS);
    }
    c->batch.stopping = c->conf.settle == GUST_SETTLE_ACK ? &c->stopping : NULL;
    c->batch.progress = c->feed->ops->progress != NULL ? batch_progress : NULL;
    c->batch.progress_ud = c;
    c->batch.ack_now = c->conf.settle == GUST_SETTLE_ACK ? batch_ack_now : NULL;
    c->batch.pending = c->behind;
    c->handler.run_batch(c->handler.impl, &c->batch);
    if (c->handler.commit != NULL) {
        c->handler.commit(c->handler.impl, &c->batch);
    }
    atomic_store(&c->handler_deadline, 0);
    uint64_t t1 = gust_clock_mono_ns();

    char dlq_subject[300];
    snprintf(dlq_subject, sizeof(dlq_subject), "%s%s", c->conf.dlq_prefix, c->conf.unit);
    while (prepare_publishes(c, n, dlq_subject) != 0) {
        gust_error("[%s] out of memory for a batch's publishes", c->name);
        c->nticket = 0;
        if (c->conf.settle != GUST_SETTLE_ORDERED) {
            memset(c->publish_failed, 1, n); /* redelivered */
            break;
        }
        if (atomic_load(&c->stopping)) {
            return -1; /* read again after the restart */
        }
        pause_ms(REPUBLISH_PAUSE_MS); /* an ordered unit cannot skip the batch */
    }
    for (size_t k = 0; k < c->nticket; k++) {
        publish(c, &c->tickets[k]);
    }
    /* The barrier: nothing is settled before everything it produced is stored. */
    barrier(c);
    settle_refused(c, n, dlq_subject);
    int stored = 1;
    if (c->conf.settle == GUST_SETTLE_ORDERED) {
        stored = republish_failed(c);
        if (stored) {
            memset(c->publish_failed, 0, n);
        }
    }
    uint64_t t2 = gust_clock_mono_ns();

    uint64_t ok = 0, failed = 0, dead = 0, emitted = 0;
    size_t next_reply = 0;
    for (size_t i = 0; i < n; i++) {
        struct gust_in *in = &c->in[i];
        uint64_t seq = c->msgs[i].stream_seq;
        c->fate[i] = c->publish_failed[i]               ? GUST_FATE_PUBLISH_FAILED
                     : c->outcome[i] == GUST_OUTCOME_OK   ? GUST_FATE_OK
                     : dead_now(c, i)                     ? GUST_FATE_DEAD
                     : c->outcome[i] == GUST_OUTCOME_WAIT ? GUST_FATE_WAIT
                                                          : GUST_FATE_RETRY;
        switch (c->fate[i]) {
        case GUST_FATE_OK:
            ok++;
            emitted += c->emit_end[i] - emit_start(c, i);
            send_reply(c, i, &next_reply);
            tally_emits(c, i);
            c->feed->ops->settle(c->feed, in, -1);
            gust_waits_forget(&c->waits, seq);
            break;
        case GUST_FATE_DEAD:
            dead++;
            c->feed->ops->settle(c->feed, in, -1);
            gust_waits_forget(&c->waits, seq);
            gust_warn("[%s] dead-lettered %s seq %" PRIu64 " after %u attempt(s): %s", c->name,
                      c->msgs[i].subject, seq, c->msgs[i].attempt, c->error[i]);
            break;
        default: /* redelivered after a delay that grows with the attempts */
            failed++;
            if (c->fate[i] != GUST_FATE_RETRY) {
                gust_waits_add(&c->waits, seq); /* not a rejection of the message */
            }
            if (c->fate[i] != GUST_FATE_PUBLISH_FAILED) { /* that one set its own */
                set_last_error(c, c->error[i]);
            }
            c->feed->ops->settle(c->feed, in, retry_delay(c, c->msgs[i].attempt));
        }
    }
    if (stored && c->handler.stored != NULL) {
        c->handler.stored(c->handler.impl, &c->batch);
    }
    gust_trace_hops_end(&c->hops, c->handler.kind, c->conf.unit, c->msgs, n, c->fate,
                        (const char (*)[GUST_ERROR_MAX])c->error);
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
    return stored ? 0 : -1;
}

/* Waits up to ms, less when the unit is asked to stop or the bus comes back (a
 * connection that was down is up again: worth trying at once). */
static void open_backoff(struct gust_consumer *c, int64_t ms)
{
    int was_connected = c->outlet->ops->connected(c->outlet);
    for (int64_t waited = 0; waited < ms && !atomic_load(&c->stopping); waited += 50) {
        pause_ms(50);
        if (!was_connected && c->outlet->ops->connected(c->outlet)) {
            return;
        }
    }
}

/* The unit went quiet after work: what its batches grew to (the emits, the publish
 * tickets, the dead-letter envelopes) goes back to the allocator, and its handler may
 * do the same. Fifty idle flows otherwise keep the peak of their last burst for good;
 * the next batch grows them again, once per burst. */
static void give_back(struct gust_consumer *c)
{
    gust_emits_free(&c->batch.emits);
    gust_buf_free(&c->envelopes);
    free(c->tickets);
    free(c->envelope_at);
    c->tickets = NULL;
    c->envelope_at = NULL;
    c->ntickets_cap = 0;
    if (c->handler.quiet != NULL) {
        c->handler.quiet(c->handler.impl);
    }
}

/* Opens the unit's feed through its opener until it opens (1) or the unit is asked to
 * stop (0). */
static int open_feed(struct gust_consumer *c)
{
    int64_t delay = OPEN_FIRST_DELAY_MS;
    while (!atomic_load(&c->stopping)) {
        struct gust_feed *feed = NULL;
        struct gust_err err = {{0}};
        if (c->conf.opener.open(c->conf.opener.ud, &feed, &err) == 0) {
            pthread_mutex_lock(&c->lock);
            c->feed = feed;
            pthread_mutex_unlock(&c->lock);
            if (atomic_load(&c->retries) > 0) {
                gust_info("[%s] consumer created after %" PRIu64 " retries", c->name, atomic_load(&c->retries));
            }
            return 1;
        }
        uint64_t n = atomic_fetch_add(&c->retries, 1) + 1;
        set_last_error(c, err.msg);
        if (n == 1 || n % 20 == 0) {
            gust_warn("[%s] %s; trying again (attempt %" PRIu64 ", every %.1f s at most)", c->name, err.msg, n + 1,
                      OPEN_MAX_DELAY_MS / 1e3);
        }
        open_backoff(c, delay);
        delay = delay * 2 < OPEN_MAX_DELAY_MS ? delay * 2 : OPEN_MAX_DELAY_MS;
    }
    return 0;
}

static void *unit_thread(void *arg)
{
    struct gust_consumer *c = arg;
    size_t max = (size_t)(c->conf.batch > 0 ? c->conf.batch : 1);
    int clean = 1;
    if (grow(c, max) != 0) {
        gust_error("[%s] out of memory for a batch of %zu", c->name, max);
        set_state(c, STATE_FAILING);
        return NULL;
    }
    /* Asked to stop before its feed opened: nothing was read. */
    int opened = c->feed != NULL || open_feed(c);
    if (opened) {
        set_state(c, STATE_RUNNING);
        /* A batching or rate-limited sink shapes its fetches: how many a call gets (a
         * slow sender must not hold messages past ack_wait), and a linger to fill them. */
        if (c->handler.fetch_limits != NULL) {
            size_t want = max;
            int64_t linger_ms = 0;
            c->handler.fetch_limits(c->handler.impl, &want, &linger_ms);
            if (want > 0 && grow(c, want) == 0) {
                max = want;
            }
            c->feed->linger_ms = linger_ms > 0 ? linger_ms : 0;
            if (max != (size_t)c->conf.batch || linger_ms > 0) {
                gust_info("[%s] fetching up to %zu messages at once, lingering %lld ms", c->name, max,
                          (long long)c->feed->linger_ms);
            }
        }
    }
    size_t drained = 0;     /* messages taken since the stop was asked for */
    int worked = 0;         /* a batch ran since the unit was last quiet */
    int64_t failed_at = 0;  /* the last read that failed (CLOCK_MONOTONIC ms) */
    while (opened) {
        int stopping = atomic_load(&c->stopping);
        if (stopping && drained >= c->feed->drain_on_stop) {
            break;
        }
        if (!stopping && c->handler.between != NULL) {
            uint64_t seq = 0;
            int what = c->handler.between(c->handler.impl, &seq);
            if (what == GUST_SEEK && c->feed->ops->seek != NULL) {
                c->feed->ops->seek(c->feed, seq);
            } else if (what == GUST_IDLE) {
                /* Waiting for a slice is not failing: with the bus back it runs. */
                if (c->outlet->ops->connected(c->outlet) && gust_clock_mono_ms() - failed_at > RECOVER_QUIET_MS &&
                    set_state(c, STATE_RUNNING) == STATE_FAILING) {
                    gust_info("[%s] running again", c->name);
                }
                pause_ms(IDLE_PAUSE_MS);
                continue;
            }
        }
        uint64_t t0 = gust_clock_mono_ns();
        char why[256];
        int with = (c->handler.wants_headers ? GUST_FEED_HEADERS : 0) |
                   (c->handler.answers_calls ? GUST_FEED_REPLY_TO : 0) | GUST_FEED_TRACE;
        size_t take = max;
        if (c->conf.settle == GUST_SETTLE_ORDERED && c->behind > max &&
            grow(c, max * CATCH_UP_BATCHES) == 0) {
            take = max * CATCH_UP_BATCHES;
        }
        int n = c->feed->ops->next(c->feed, c->in, take, with, why, sizeof(why));
        atomic_fetch_add(&c->stats.fetches, 1);
        atomic_fetch_add(&c->stats.fetch_ns, gust_clock_mono_ns() - t0);
        if (n < 0) {
            failed_at = gust_clock_mono_ms();
            if (set_state(c, STATE_FAILING) != STATE_FAILING) {
                gust_warn("[%s] %s", c->name, why);
                set_last_error(c, why);
            }
            if (stopping) {
                break;
            }
            pause_ms(FAILING_PAUSE_MS);
            continue;
        }
        /* Messages, or an idle unit's reads quiet for a while: it works again. */
        if ((n > 0 || gust_clock_mono_ms() - failed_at > RECOVER_QUIET_MS) && set_state(c, STATE_RUNNING) == STATE_FAILING) {
            gust_info("[%s] reading again", c->name);
        }
        c->behind = n > 0 ? c->in[n - 1].pending : 0;
        if (n > 0) {
            atomic_store(&c->stats.behind, c->behind);
            atomic_store(&c->stats.read_ms, gust_clock_mono_ms());
        }
        if (n == 0) {
            if (stopping) {
                break;
            }
            if (worked) {
                give_back(c);
                worked = 0;
            }
            continue;
        }
        drained += stopping ? (size_t)n : 0;
        n = (int)skip_ticks(c, (size_t)n);
        if (n == 0) {
            continue;
        }
        int rc = run_batch(c, (size_t)n);
        worked = 1;
        c->feed->ops->release(c->feed, c->in, (size_t)n);
        if (rc != 0) {
            clean = 0;
            break;
        }
    }
    if (c->handler.stopped != NULL) {
        c->handler.stopped(c->handler.impl, clean);
    }
    set_state(c, STATE_STOPPED);
    return NULL;
}

int gust_consumer_create(const struct gust_consumer_conf *conf, struct gust_feed *feed, struct gust_outlet *outlet,
                         struct gust_handler handler, struct gust_consumer **out, struct gust_err *err)
{
    struct gust_consumer *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        if (feed != NULL) {
            feed->ops->close(feed);
        }
        if (conf->opener.free != NULL) {
            conf->opener.free(conf->opener.ud);
        }
        if (handler.destroy != NULL) {
            handler.destroy(handler.impl);
        }
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    c->feed = feed;
    c->conf = *conf;
    c->conf.unit = strdup(conf->unit);
    c->conf.kind = strdup(conf->kind);
    c->conf.dlq_prefix = strdup(conf->dlq_prefix);
    c->source = strdup(conf->source != NULL ? conf->source : "");
    c->identity = conf->identity != NULL ? strdup(conf->identity) : NULL;
    c->handler = handler;
    c->outlet = outlet;
    atomic_store(&c->state_since, gust_clock_mono_ms());
    pthread_mutex_init(&c->lock, NULL);
    gust_tally_init(&c->emitted);
    pthread_cond_init(&c->acked, NULL);
    snprintf(c->name, sizeof(c->name), "%s_%s", conf->kind, conf->unit);
    if (c->conf.unit == NULL || c->conf.kind == NULL || c->conf.dlq_prefix == NULL || c->source == NULL) {
        gust_consumer_destroy(c);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    *out = c;
    return 0;
}

int gust_consumer_start(struct gust_consumer *c, struct gust_err *err)
{
    if (pthread_create(&c->thread, NULL, unit_thread, c) != 0) {
        return gust_err_set(err, GUST_EIO, "%s: cannot start a thread", c->name);
    }
    c->started = 1;
    gust_info("[%s] consuming %s (batch %d)", c->name, c->source, c->conf.batch);
    return 0;
}

void gust_consumer_request_stop(struct gust_consumer *c)
{
    atomic_store(&c->stopping, 1);
    /* The unit's thread sets the feed once it opens it. */
    pthread_mutex_lock(&c->lock);
    if (c->feed != NULL && c->feed->ops->wake != NULL) {
        c->feed->ops->wake(c->feed);
    }
    pthread_mutex_unlock(&c->lock);
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
    if (c->feed != NULL) {
        c->feed->ops->close(c->feed);
    }
    if (c->handler.destroy != NULL) {
        c->handler.destroy(c->handler.impl);
    }
    if (c->conf.opener.free != NULL) {
        c->conf.opener.free(c->conf.opener.ud);
    }
    gust_emits_free(&c->batch.emits);
    gust_trace_hops_free(&c->hops);
    free(c->batch.replies.v);
    gust_buf_free(&c->batch.replies.data);
    gust_tally_destroy(&c->emitted);
    gust_buf_free(&c->envelopes);
    gust_waits_free(&c->waits);
    free(c->in);
    free(c->msgs);
    free(c->outcome);
    free(c->error);
    free(c->emit_end);
    free(c->publish_failed);
    free(c->refused);
    free(c->fate);
    free(c->tick);
    free(c->reply_to);
    free(c->tickets);
    free(c->envelope_at);
    free(c->source);
    free(c->identity);
    free((char *)c->conf.unit);
    free((char *)c->conf.kind);
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

const char *gust_consumer_source(const struct gust_consumer *c)
{
    return c->source;
}

int gust_consumer_durable(const struct gust_consumer *c)
{
    return c->conf.settle == GUST_SETTLE_ACK && c->conf.edge == NULL;
}

struct gust_edge *gust_consumer_edge(const struct gust_consumer *c)
{
    return c->conf.edge;
}

const struct gust_unit_stats *gust_consumer_stats(const struct gust_consumer *c)
{
    return &c->stats;
}

const char *gust_consumer_identity(const struct gust_consumer *c)
{
    return c->identity;
}

void gust_consumer_set_kept(struct gust_consumer *c, int kept)
{
    atomic_store(&c->kept, kept);
}

int gust_consumer_kept(const struct gust_consumer *c)
{
    return atomic_load(&((struct gust_consumer *)c)->kept);
}

const struct gust_handler *gust_consumer_handler(const struct gust_consumer *c)
{
    return &c->handler;
}

const char *gust_consumer_state(const struct gust_consumer *c)
{
    return state_names[atomic_load(&c->state)];
}

int gust_consumer_running(const struct gust_consumer *c, int64_t *since_ms)
{
    struct gust_consumer *m = (struct gust_consumer *)c;
    *since_ms = atomic_load(&m->state_since);
    return atomic_load(&m->state) == STATE_RUNNING;
}

struct gust_tally *gust_consumer_emitted(struct gust_consumer *c)
{
    return &c->emitted;
}

uint64_t gust_consumer_retries(const struct gust_consumer *c)
{
    return atomic_load(&((struct gust_consumer *)c)->retries);
}

int64_t gust_consumer_stuck_ms(const struct gust_consumer *c)
{
    int64_t deadline = atomic_load(&((struct gust_consumer *)c)->handler_deadline);
    int64_t now = gust_clock_mono_ms();
    return deadline > 0 && now > deadline ? now - deadline : 0;
}

void gust_consumer_last_error_at(struct gust_consumer *c, char *out, size_t size, int64_t *at_ms)
{
    pthread_mutex_lock(&c->lock);
    snprintf(out, size, "%s", c->last_error);
    if (at_ms != NULL) {
        *at_ms = c->last_error_at;
    }
    pthread_mutex_unlock(&c->lock);
}

void gust_consumer_last_error(struct gust_consumer *c, char *out, size_t size)
{
    gust_consumer_last_error_at(c, out, size, NULL);
}
