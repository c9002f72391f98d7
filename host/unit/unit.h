/* Units on the consumer core.
 *
 * A unit is a feed of messages (a durable consumer, an ordered read, an edge queue:
 * host/bus/port.h) plus something that handles them: a Lua flow, a VPL program, or a
 * sink plugin. The consumer core (consumer.c) is the same for all: take a batch, let
 * the handler run it, publish what it emitted (and what goes to the dead-letter
 * stream), wait for every PubAck, then settle the inputs. */
#ifndef GUST_UNIT_UNIT_H
#define GUST_UNIT_UNIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/emits.h"
#include "gust/plugin.h" /* struct gust_msg */

/* What became of one message of a batch. */
enum gust_outcome {
    GUST_OUTCOME_OK = 0,  /* done: ack once its emits are stored */
    GUST_OUTCOME_RETRY,   /* failed: redeliver later; dead-letter after max_deliver */
    GUST_OUTCOME_WAIT,    /* the far end is unavailable: redeliver later, never dead-letter
                             (the bus keeps it until the sink is back) */
    GUST_OUTCOME_DEAD,    /* cannot succeed (undecodable): dead-letter now */
};

#define GUST_ERROR_MAX 1024
#define GUST_MSG_ID_MAX 160

/* The answer to message `msg`'s call: status and the JSON text at data[at, at + len). */
struct gust_reply {
    size_t msg;
    int status;
    size_t at, len;
};

struct gust_replies {
    struct gust_reply *v;
    size_t n, cap;
    struct gust_buf data;
};

/* Appends message msg's reply (json copied): 0 or GUST_ENOMEM. */
int gust_replies_push(struct gust_replies *r, size_t msg, int status, const char *json, size_t len);

/* One batch as a handler sees it. The core fills msgs and sets every outcome to OK;
 * the handler sets outcome[i] and writes error[i] (a NUL-terminated reason) when it
 * fails a message, and appends msgs[i]'s emits to `emits`, recording
 * emit_end[i] = emits.n after message i. error[i] is undefined for messages that
 * succeeded: it is never cleared, so that its memory is only touched on failures. */
struct gust_batch {
    const struct gust_msg *msgs;
    size_t n;
    int *outcome;
    char (*error)[GUST_ERROR_MAX];
    struct gust_emits emits;
    size_t *emit_end;
    /* Set while the unit is asked to stop (NULL when the feed cannot redeliver): a
     * handler whose messages may each run long leaves the rest of the batch
     * (outcome GUST_OUTCOME_WAIT) once it is. */
    const atomic_int *stopping;
    /* tick[i]: message i is this unit's own stored idle tick ({"@tick": ms}); only for
     * a handler with reads_ticks. */
    const uint8_t *tick;
    /* reply_to[i]: message i is a call, a request waits for its reply there (bus
     * reply.h); NULL when not. Only for a handler with answers_calls. */
    const char *const *reply_to;
    /* The replies the handler gives (at most one a message, appended in message
     * order); the core sends each once its message succeeded and its emits are
     * stored, just before the ack. */
    struct gust_replies replies;
    /* Marks message i as still being worked on, so the bus does not deliver it again
     * while the handler holds it (an ordered sink retrying in place). NULL when the feed
     * cannot: call it as progress(progress_ud, i). */
    void (*progress)(void *ud, size_t i);
    void *progress_ud;
    /* Acks message i now, before the rest of the batch is done (progress_ud too): for a
     * message that succeeded without emits, whose outcome stays OK (the core's own ack
     * at the end is then a repeat the bus ignores). An ordered sink holding the rest of
     * its batch acks what went, so that a crash does not send it again. NULL when the
     * feed does not ack. */
    void (*ack_now)(void *ud, size_t i);
    /* How many messages of the feed came after the batch's last one when it was read
     * (0: none, or a feed that cannot say): a unit far behind reads larger batches. */
    uint64_t pending;
};

/* What a handler's between() asks of the core before the next batch. */
enum gust_between {
    GUST_GO_ON = 0, /* take the next batch */
    GUST_SEEK,      /* ordered feeds: read again from *seq */
    GUST_IDLE,      /* nothing to do now (a detect unit owning no slice): wait a moment */
};

struct gust_handler {
    const char *kind; /* "flow", "detect", "sink", "relay" */
    void *impl;
    int wants_headers; /* msgs carry their headers (they cost a parse each) */
    int reads_ticks;   /* the unit's own idle ticks reach run_batch (detect); every
                          other tick is acked unseen */
    int answers_calls; /* batch.reply_to is filled (a header lookup each) and its
                          replies are sent (flows: reply()) */
    /* Called on the unit's thread, once per batch. */
    void (*run_batch)(void *impl, struct gust_batch *b);
    /* Optional. After run_batch, before anything of the batch is published: commits what
     * the batch staged besides its emits (a flow's durable state). It may fail messages
     * (outcome GUST_OUTCOME_RETRY or WAIT, with their error): their emits are then not
     * published and they are not acked. On the unit's thread; may block. */
    void (*commit)(void *impl, struct gust_batch *b);
    /* Optional. The Nats-Msg-Id of emit e (of message i) into out (GUST_MSG_ID_MAX);
     * without it, the core's "<unit>:<stream seq>:<index in the message's emits>". */
    void (*emit_id)(void *impl, const struct gust_batch *b, size_t i, size_t e, char *out);
    /* Optional. Once, on the unit's thread, before the first fetch: may change *max
     * (the most messages a batch takes; in: the unit's `batch`) and set *linger_ms (once
     * a first message is there, how long to wait for max). */
    void (*fetch_limits)(void *impl, size_t *max, int64_t *linger_ms);
    /* Optional. Between batches, before taking the next one, on the unit's thread. */
    int (*between)(void *impl, uint64_t *seq);
    /* Optional. The unit's reads came back empty after work: it is quiet, a moment to
     * give back what a burst grew (a flow's Lua garbage). On the unit's thread. */
    void (*quiet)(void *impl);
    /* Optional. Every publish of the batch is stored (the barrier passed). */
    void (*stored)(void *impl, const struct gust_batch *b);
    /* Optional. The unit's thread has stopped between batches: clean is 0 when what
     * was fed last was not all stored (a bus down at the stop). */
    void (*stopped)(void *impl, int clean);
    /* Optional. The lowest stream sequence the unit may still read again (a detect
     * unit: its checkpoints' positions): what is below it may be removed. 0: not known
     * (nothing may be). Any thread. */
    uint64_t (*floor)(void *impl);
    /* Optional. Members for /units: "," then "key": value pairs. Any thread. */
    void (*render_json)(void *impl, struct gust_buf *out);
    /* Optional. Lines of /metrics' gust_plugin_value family for unit `unit` (the header
     * is the registry's). Any thread. */
    void (*render_metrics)(void *impl, const char *unit, struct gust_buf *out);
    void (*destroy)(void *impl);
};

/* Counters shown by /metrics and /units. Updated by the unit's thread, read by the
 * HTTP thread. */
struct gust_unit_stats {
    atomic_uint_fast64_t events_ok;
    atomic_uint_fast64_t events_failed; /* failed attempts (each retry counts) */
    atomic_uint_fast64_t emits;
    atomic_uint_fast64_t dead_letters;
    atomic_uint_fast64_t fetches;
    atomic_uint_fast64_t fetch_ns;
    atomic_uint_fast64_t process_ns;
    atomic_uint_fast64_t barrier_ns;
    /* Its last read that brought messages: when (monotonic ms), and how many its
     * consumer still had to deliver after it (JetStream's count in the ack subject). */
    atomic_int_fast64_t read_ms;
    atomic_uint_fast64_t behind;
};

#endif
