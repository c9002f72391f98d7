/* The consumer core: one thread per unit running take a batch -> handle -> publish ->
 * wait for every PubAck -> settle (publish before ack). See docs/ARCHITECTURE.md. */
#ifndef GUST_UNIT_CONSUMER_H
#define GUST_UNIT_CONSUMER_H

#include <stdint.h>

#include "../bus/port.h"
#include "gust/err.h"
#include "unit.h"

struct gust_edge;

/* Opens a unit's feed from the unit's own thread: a feed that cannot be opened yet (the
 * bus is gone, consumer creation timed out) is tried again with backoff until it opens
 * or the unit stops, the unit showing `starting`, its retries and the last error. */
struct gust_feed_opener {
    int (*open)(void *ud, struct gust_feed **out, struct gust_err *err);
    void (*free)(void *ud); /* frees ud once the feed is open or the unit is destroyed */
    void *ud;               /* owned by the consumer from gust_consumer_create on */
};

struct gust_consumer_conf {
    const char *unit;       /* unit name, for logs, dead letters and message ids */
    const char *kind;       /* "flow", "detect", "sink", "relay" */
    const char *source;     /* where its messages come from, for /units: a subject
                               filter, "edge:<source unit>" */
    const char *identity;   /* what the unit is made of (its block as written, its
                               program's text): a reload keeps a running unit whose
                               identity is the same (NULL: never kept) */
    const char *dlq_prefix; /* "dlq.": dead letters go to <prefix><unit> */
    int batch;
    int64_t max_deliver;        /* rejections before a message is dead-lettered */
    int64_t retry_delay_ms;     /* first redelivery delay; doubles per attempt */
    int64_t retry_max_delay_ms; /* up to this */
    /* How the feed settles: acks (a durable consumer: a failed message is redelivered),
     * an ordered read (a failed publish is sent again until it is stored, never skipped:
     * the unit's position only moves past what is stored), or none (the edge path: a
     * failed message is dead-lettered at once, there is no redelivery). */
    enum { GUST_SETTLE_ACK, GUST_SETTLE_ORDERED, GUST_SETTLE_NONE } settle;
    struct gust_edge *edge; /* the edge path's queue, for /units (borrowed from the feed) */
    /* How long one message may take in the handler (a flow's `timeout`): a batch still
     * in the handler after that per message plus GUST_STUCK_MARGIN_MS is stuck (/healthz).
     * 0: never judged. */
    int64_t handler_timeout_ms;
    /* With feed NULL at create: how the unit's thread opens it. */
    struct gust_feed_opener opener;
};

/* What a batch may take beyond its messages' timeouts before it counts as stuck. */
#define GUST_STUCK_MARGIN_MS 5000

struct gust_consumer;

/* Creates the unit (not started) reading feed, or with feed NULL the feed
 * conf->opener opens (from the unit's thread, retried). conf's strings are copied;
 * feed, the opener's ud and handler are owned from here on (closed and destroyed with
 * the consumer, also on failure); outlet is borrowed. */
int gust_consumer_create(const struct gust_consumer_conf *conf, struct gust_feed *feed, struct gust_outlet *outlet,
                         struct gust_handler handler, struct gust_consumer **out, struct gust_err *err);
/* Starts the unit's thread. */
int gust_consumer_start(struct gust_consumer *c, struct gust_err *err);
/* Asks the thread to stop after its current batch; returns at once. */
void gust_consumer_request_stop(struct gust_consumer *c);
/* Stops the thread between batches and waits for it (nothing in flight is acked without
 * its emits stored). The consumer stays readable (/units) until destroyed. */
void gust_consumer_stop(struct gust_consumer *c);
/* Whether the thread has been stopped (or never started). */
int gust_consumer_stopped(const struct gust_consumer *c);
/* Stops the thread if it runs, then frees. NULL is a no-op. */
void gust_consumer_destroy(struct gust_consumer *c);

const char *gust_consumer_name(const struct gust_consumer *c);
const char *gust_consumer_kind(const struct gust_consumer *c);
/* Where its messages come from, for /units: a subject filter, "edge:<source>". */
const char *gust_consumer_source(const struct gust_consumer *c);
/* Reads through a durable consumer on the stream (named <kind>_<unit>). */
int gust_consumer_durable(const struct gust_consumer *c);
/* The unit's edge queue, or NULL for a bus consumer. */
struct gust_edge *gust_consumer_edge(const struct gust_consumer *c);
const struct gust_unit_stats *gust_consumer_stats(const struct gust_consumer *c);
const char *gust_consumer_identity(const struct gust_consumer *c);
/* A kept unit goes on running when the generation that started it stops: a reload
 * hands it over to the next generation, state and all. */
void gust_consumer_set_kept(struct gust_consumer *c, int kept);
int gust_consumer_kept(const struct gust_consumer *c);
/* The handler, for what /units and /metrics show of it. */
const struct gust_handler *gust_consumer_handler(const struct gust_consumer *c);
/* "starting" (its feed is not open yet), "running", "stopped", "failing" (the feed
 * fails). */
const char *gust_consumer_state(const struct gust_consumer *c);
/* Whether it is running, and since when (CLOCK_MONOTONIC ms) it is in its state. */
int gust_consumer_running(const struct gust_consumer *c, int64_t *since_ms);
/* The subjects of its emits stored since it started, with their counts (any thread). */
struct gust_tally;
struct gust_tally *gust_consumer_emitted(struct gust_consumer *c);
/* Failed attempts to open the unit's feed. */
uint64_t gust_consumer_retries(const struct gust_consumer *c);
/* How long (ms) the handler has been in its current batch past that batch's bound
 * (handler_timeout_ms per message plus the margin), or 0 when it is not stuck. */
int64_t gust_consumer_stuck_ms(const struct gust_consumer *c);
/* Copies the last error (empty when none) into out, and when it happened (Unix time in
 * ms, 0: never) into at_ms (may be NULL). Thread-safe. */
void gust_consumer_last_error(struct gust_consumer *c, char *out, size_t size);
void gust_consumer_last_error_at(struct gust_consumer *c, char *out, size_t size, int64_t *at_ms);

#endif
