#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gust/sdk.h"

#include "sink_handler.h"

#include "../common/log.h"
#include "../unit/plugin_counters.h"

/* How often a held batch is marked in progress: well within ack_wait. */
#define PROGRESS_PARTS 3
/* A held batch looks at the unit's stop this often while it waits. */
#define HOLD_SLICE_MS 50
/* The stream sequences settled last, remembered to know a copy from a message the bus
 * hands out late (its first delivery lost on the way, a reconnect): more than the
 * consumer's max_ack_pending holds. */
#define SETTLED_KEEP 8192

struct sink {
    struct gust_instance *inst;
    struct gust_sink_opts o;
    struct gust_result *results;
    size_t cap;
    /* In stream order: the messages of the batch still held (not settled), compacted,
     * and where each is in the batch. */
    struct gust_msg *held_msgs;
    size_t *held_at;
    uint8_t *copy;      /* per message of the batch: a copy of an earlier one of it */
    uint64_t done_seq;  /* the highest stream sequence settled */
    uint64_t settled[SETTLED_KEEP]; /* the last ones settled, a ring */
    size_t settled_at;
    atomic_size_t held; /* for /units */
};

static int grow(struct sink *s, size_t n)
{
    if (n <= s->cap) {
        return 0;
    }
    struct gust_result *r = realloc(s->results, n * sizeof(*r));
    if (r != NULL) {
        s->results = r;
    }
    struct gust_msg *m = r != NULL ? realloc(s->held_msgs, n * sizeof(*m)) : NULL;
    if (m != NULL) {
        s->held_msgs = m;
    }
    size_t *at = m != NULL ? realloc(s->held_at, n * sizeof(*at)) : NULL;
    if (at != NULL) {
        s->held_at = at;
    }
    uint8_t *copy = at != NULL ? realloc(s->copy, n) : NULL;
    if (copy == NULL) {
        return -1;
    }
    s->copy = copy;
    s->cap = n;
    return 0;
}

/* Message i's outcome from what the sink said of it (r), or from the whole call failing
 * (rc != 0). */
static void set_outcome(struct sink *s, struct gust_batch *b, size_t i, const struct gust_result *r, int rc)
{
    if (rc != 0) {
        b->outcome[i] = GUST_OUTCOME_WAIT;
        snprintf(b->error[i], GUST_ERROR_MAX, "%s: the whole batch failed (%d)", s->inst->name, rc);
    } else if (r->status == GUST_DELIVERED) {
        b->outcome[i] = GUST_OUTCOME_OK;
    } else {
        /* A sink that is down or overloaded holds messages on the bus until it is back;
         * one that rejects them gets max_deliver attempts, then the DLQ; an ordered one
         * dead-letters a rejection at once: tried again later, it would go after the
         * messages behind it. */
        b->outcome[i] = r->status == GUST_RETRY            ? GUST_OUTCOME_WAIT
                        : s->o.order != GUST_ORDER_NONE ? GUST_OUTCOME_DEAD
                                                           : GUST_OUTCOME_RETRY;
        snprintf(b->error[i], GUST_ERROR_MAX, "%s", r->error);
    }
}

static void run_unordered(struct sink *s, struct gust_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        s->results[i] = (struct gust_result){.status = GUST_RETRY};
    }
    int rc = gust_instance_deliver(s->inst, b->msgs, b->n, s->results);
    for (size_t i = 0; i < b->n; i++) {
        set_outcome(s, b, i, &s->results[i], rc);
    }
}

static int64_t mono_ms(void)
{
    return (int64_t)(gust_clock_mono_ns() / 1000000u);
}

/* Waits ms before the held messages are tried again (less when the unit stops), marking
 * them in progress every third of ack_wait so that the bus keeps them here. */
static void hold_wait(struct sink *s, struct gust_batch *b, size_t n, int64_t ms)
{
    int64_t end = mono_ms() + ms, marked = 0, every = s->o.ack_wait_ms / PROGRESS_PARTS;
    for (int64_t now = mono_ms(); now < end; now = mono_ms()) {
        if (b->stopping != NULL && atomic_load(b->stopping)) {
            return;
        }
        if (b->progress != NULL && now - marked >= every) {
            for (size_t k = 0; k < n; k++) {
                b->progress(b->progress_ud, s->held_at[k]);
            }
            marked = now;
        }
        int64_t left = end - now < HOLD_SLICE_MS ? end - now : HOLD_SLICE_MS;
        struct timespec ts = {0, (long)left * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static int64_t retry_delay(const struct sink *s, unsigned round)
{
    int64_t d = s->o.retry_delay_ms > 0 ? s->o.retry_delay_ms : 1;
    for (unsigned r = 1; r < round && d < s->o.retry_max_delay_ms; r++) {
        d *= 2;
    }
    return d < s->o.retry_max_delay_ms ? d : s->o.retry_max_delay_ms;
}

/* A copy of a message of the batch (the bus delivered it again while it waited here)
 * settles as that message does: acked once it went, else back to the bus with it. */
static void settle_copies(struct sink *s, struct gust_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        if (!s->copy[i]) {
            continue;
        }
        b->outcome[i] = GUST_OUTCOME_WAIT; /* no original found: never acked unsent */
        snprintf(b->error[i], GUST_ERROR_MAX, "a copy of a message held");
        for (size_t j = 0; j < i; j++) {
            if (!s->copy[j] && b->msgs[j].stream_seq == b->msgs[i].stream_seq) {
                b->outcome[i] = b->outcome[j] == GUST_OUTCOME_WAIT ? GUST_OUTCOME_WAIT : GUST_OUTCOME_OK;
                break;
            }
        }
    }
}

static int settled_lately(const struct sink *s, uint64_t seq)
{
    for (size_t k = 0; k < SETTLED_KEEP; k++) {
        if (s->settled[k] == seq) {
            return 1;
        }
    }
    return 0;
}

/* GUST_ORDER_STREAM: the batch is held until every message of it is settled (head-of-
 * line blocking), or the unit stops. The bus hands messages out in stream order, and
 * again those it delivered before (after ack_wait, to the subscription that waited
 * meanwhile): one not above the highest taken is a copy, acked unsent when it was
 * settled lately, settled with its original when that is in the batch. One settled
 * long ago or never is sent, late (its first delivery was lost on the way): out of
 * order rather than lost. */
static void run_in_order(struct sink *s, struct gust_batch *b)
{
    size_t n = 0;
    uint64_t top = s->done_seq;
    for (size_t i = 0; i < b->n; i++) {
        uint64_t seq = b->msgs[i].stream_seq;
        s->copy[i] = seq != 0 && seq > s->done_seq && seq <= top;
        if (seq != 0 && seq <= s->done_seq && !settled_lately(s, seq)) {
            gust_warn("[%s] stream sequence %" PRIu64 " comes after %" PRIu64 " (its first delivery was lost): "
                      "sent out of order", s->inst->name, seq, s->done_seq);
        } else if (seq != 0 && seq <= top) {
            continue; /* settled already (acked now), or a copy of one of this batch */
        }
        top = seq > top ? seq : top;
        s->held_at[n] = i;
        s->held_msgs[n++] = b->msgs[i];
    }
    size_t acked = 0; /* the batch's first messages, acked as they went */
    for (unsigned round = 1; n > 0; round++) {
        atomic_store(&s->held, n);
        for (size_t k = 0; k < n; k++) {
            s->results[k] = (struct gust_result){.status = GUST_RETRY};
        }
        int rc = gust_instance_deliver(s->inst, s->held_msgs, n, s->results);
        size_t left = 0;
        for (size_t k = 0; k < n; k++) {
            size_t i = s->held_at[k];
            set_outcome(s, b, i, &s->results[k], rc);
            if (b->outcome[i] == GUST_OUTCOME_WAIT) {
                s->held_at[left] = i;
                s->held_msgs[left++] = s->held_msgs[k];
            } else {
                uint64_t seq = b->msgs[i].stream_seq;
                s->done_seq = seq > s->done_seq ? seq : s->done_seq;
                s->settled[s->settled_at++ % SETTLED_KEEP] = seq;
            }
        }
        n = left;
        /* What went in order before the first still held is acked now: killed while the
         * rest waits, it is not sent again (the bus's ack floor moves past it). A dead
         * letter waits for its envelope to be stored, at the end. */
        while (b->ack_now != NULL && n > 0 && acked < b->n && !s->copy[acked] &&
               b->outcome[acked] == GUST_OUTCOME_OK) {
            b->ack_now(b->progress_ud, acked++);
        }
        if (n == 0 || (b->stopping != NULL && atomic_load(b->stopping))) {
            break; /* stopping: the rest is redelivered (WAIT) */
        }
        hold_wait(s, b, n, retry_delay(s, round));
    }
    atomic_store(&s->held, 0);
    settle_copies(s, b);
}

static void sink_run_batch(void *impl, struct gust_batch *b)
{
    struct sink *s = impl;
    if (grow(s, b->n) != 0) {
        for (size_t i = 0; i < b->n; i++) {
            b->outcome[i] = GUST_OUTCOME_WAIT;
            snprintf(b->error[i], GUST_ERROR_MAX, "out of memory");
        }
        return;
    }
    for (size_t i = 0; i < b->n; i++) {
        b->emit_end[i] = 0;
    }
    if (s->o.order == GUST_ORDER_STREAM) {
        run_in_order(s, b);
    } else {
        run_unordered(s, b);
    }
}

/* ABI 1.5 types with a fetch_limits callback shape the unit's fetches. */
static void sink_fetch_limits(void *impl, size_t *max, int64_t *linger_ms)
{
    struct sink *s = impl;
    const struct gust_plugin_type *t = s->inst->type;
    if (t == NULL || t->fetch_limits == NULL || !s->inst->started) {
        return;
    }
    struct gust_fetch_limits l = {.ack_wait_ms = s->o.ack_wait_ms, .max = *max, .linger_ms = 0};
    t->fetch_limits(s->inst->ctx, &l);
    *max = l.max > 0 ? l.max : 1;
    *linger_ms = l.linger_ms;
}

/* The plugin's own counters (ABI 1.4 types with a counters callback). */
static size_t sink_counters(struct sink *s, struct gust_plugin_counter *c)
{
    const struct gust_plugin_type *t = s->inst->type;
    if (t == NULL || t->counters == NULL || !s->inst->started) {
        return 0;
    }
    return gust_plugin_counters_read(t->counters, s->inst->ctx, c);
}

static void sink_render_json(void *impl, struct gust_buf *out)
{
    struct gust_plugin_counter c[GUST_PLUGIN_COUNTERS_MAX];
    struct sink *s = impl;
    gust_plugin_counters_json(out, c, sink_counters(s, c), 0);
    if (s->o.order != GUST_ORDER_NONE) {
        char text[96];
        int len = snprintf(text, sizeof(text), ",\"ordered\":\"%s\"", s->o.order == GUST_ORDER_STREAM ? "stream" : "key");
        gust_buf_append(out, text, (size_t)len);
    }
    if (s->o.order == GUST_ORDER_STREAM) {
        char text[64];
        int len = snprintf(text, sizeof(text), ",\"held\":%zu", atomic_load(&s->held));
        gust_buf_append(out, text, (size_t)len);
    }
    if (s->inst->type != NULL) {
        gust_plugin_note_json(out, &s->inst->note);
    }
}

static void sink_render_metrics(void *impl, const char *unit, struct gust_buf *out)
{
    struct gust_plugin_counter c[GUST_PLUGIN_COUNTERS_MAX];
    gust_plugin_counters_metrics(out, unit, c, sink_counters(impl, c));
}

static void sink_destroy(void *impl)
{
    struct sink *s = impl;
    gust_instance_dispose(s->inst);
    free(s->inst);
    free(s->results);
    free(s->held_msgs);
    free(s->held_at);
    free(s->copy);
    free(s);
}

struct gust_handler gust_sink_handler(struct gust_instance *inst, const struct gust_sink_opts *o)
{
    struct sink *s = calloc(1, sizeof(*s));
    if (s != NULL) {
        s->inst = inst;
        s->o = *o;
    }
    return (struct gust_handler){.kind = "sink",
                                 .impl = s,
                                 .run_batch = sink_run_batch,
                                 .fetch_limits = sink_fetch_limits,
                                 .render_json = sink_render_json,
                                 .render_metrics = sink_render_metrics,
                                 /* broker sinks carry them on (Nats-Msg-Id as the broker's
                                    message id, the rest as its headers) */
                                 .wants_headers = inst->type != NULL && inst->type->wants_headers,
                                 .destroy = sink_destroy};
}
