/* The consumer core: one thread per unit running fetch -> handle -> publish -> wait
 * for every PubAck -> ack (publish before ack). See DESIGN.md §3. */
#ifndef GUST_UNIT_CONSUMER_H
#define GUST_UNIT_CONSUMER_H

#include <stdint.h>

#include "gust/err.h"
#include "unit.h"

struct gust_bus;

struct gust_consumer_conf {
    const char *unit;       /* unit name, for logs and dead letters */
    const char *kind;       /* "flow", "detect", "sink" */
    const char *filter;     /* subject filter of the durable consumer */
    const char *stream;     /* the event stream */
    const char *dlq_prefix; /* "dlq.": dead letters go to <prefix><unit> */
    int batch;
    int64_t max_deliver;
    int64_t ack_wait_ms;
    int64_t retry_delay_ms;     /* first redelivery delay; doubles per attempt */
    int64_t retry_max_delay_ms; /* up to this */
    /* The edge path (edge.h): non-NULL, the source unit whose messages come in memory,
     * into a queue of edge_queue messages; filter is then unused. */
    const char *edge_source;
    size_t edge_queue;
};

struct gust_consumer;

/* Creates the unit (not started). conf's strings are copied; handler is owned from
 * here on (destroyed with the consumer, also on failure); bus is borrowed. */
int gust_consumer_create(const struct gust_consumer_conf *conf, struct gust_bus *bus, struct gust_handler handler,
                         struct gust_consumer **out, struct gust_err *err);
/* Creates or binds the durable consumer <kind>_<unit> (blocking JetStream calls: not
 * on an event loop) and starts the unit's thread. */
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
const char *gust_consumer_filter(const struct gust_consumer *c);
/* The unit's edge queue (owned by the consumer), or NULL for a bus consumer. */
struct gust_edge *gust_consumer_edge(const struct gust_consumer *c);
const struct gust_unit_stats *gust_consumer_stats(const struct gust_consumer *c);
/* "starting", "running", "stopped", "failing" (fetch errors). */
const char *gust_consumer_state(const struct gust_consumer *c);
/* Copies the last error (empty when none) into out. Thread-safe. */
void gust_consumer_last_error(struct gust_consumer *c, char *out, size_t size);

#endif
