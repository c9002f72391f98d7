/* Units on the consumer core.
 *
 * A unit is a durable pull consumer plus something that handles its messages: a Lua
 * flow, a VPL program, or a sink plugin. The consumer core (consumer.c) is the same
 * for all: fetch a batch, let the handler run it, publish what it emitted (and what
 * goes to the dead-letter stream), wait for every PubAck, then ack the inputs. */
#ifndef GUST_UNIT_UNIT_H
#define GUST_UNIT_UNIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../flow/flow.h" /* struct gust_emits */
#include "gust/plugin.h"  /* struct gust_msg */

/* What became of one message of a batch. */
enum gust_outcome {
    GUST_OUTCOME_OK = 0,  /* done: ack once its emits are stored */
    GUST_OUTCOME_RETRY,   /* failed: redeliver later; dead-letter after max_deliver */
    GUST_OUTCOME_WAIT,    /* the far end is unavailable: redeliver later, never dead-letter
                             (the bus keeps it until the sink is back) */
    GUST_OUTCOME_DEAD,    /* cannot succeed (undecodable): dead-letter now */
};

#define GUST_ERROR_MAX 1024

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
};

struct gust_handler {
    const char *kind; /* "flow", "detect", "sink" */
    void *impl;
    /* Called on the unit's thread, once per batch. */
    void (*run_batch)(void *impl, struct gust_batch *b);
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
};

#endif
