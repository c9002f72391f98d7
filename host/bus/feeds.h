/* The feeds of host/bus (port.h): a unit's durable consumer, and an ordered read of a
 * stream from a sequence on. Both are created with blocking JetStream calls: not on an
 * event loop. */
#ifndef GUST_BUS_FEEDS_H
#define GUST_BUS_FEEDS_H

#include <stdint.h>

#include "bus.h"
#include "gust/err.h"
#include "port.h"

struct gust_durable_conf {
    const char *stream;
    const char *durable; /* the consumer's name: <kind>_<unit> */
    const char *filter;
    int batch;
    int64_t ack_wait_ms;
    int64_t max_ack_pending;
    int64_t expires_ms; /* a pull request's life, and the longest wait of next() */
    /* An ordered sink's: a consumer found with messages delivered and not acked is made
     * again from its ack floor, so that they come first and in stream order (the server
     * would redeliver them after ack_wait, behind the new ones it hands out at once). */
    int from_ack_floor;
};

/* The unit's durable pull consumer, created or brought to conf (a changed filter
 * recreates it: nats-server 2.9 cannot change one). Explicit acks: settle acks or naks
 * with a delay. Messages and requests go over the bus's connection that writes at
 * once, acks over the buffered one (a batch's acks leave in one write). */
int gust_durable_feed_open(struct gust_bus *bus, const struct gust_durable_conf *conf, struct gust_feed **out,
                           struct gust_err *err);

/* Every message of `stream` on `filter` from stream sequence start_seq (1 or 0: from
 * the first) on, each once and in stream order, through an ephemeral consumer without
 * acknowledgements that is made again from the next sequence wanted whenever a
 * delivery is missing (a gap in the consumer's sequence), the consumer is gone (a
 * server restart) or seek() moves. Nothing is kept on the server for it: the reader
 * holds its position itself. */
int gust_ordered_feed_open(struct gust_bus *bus, const char *stream, const char *filter, uint64_t start_seq,
                           int64_t expires_ms, struct gust_feed **out, struct gust_err *err);

/* An existing durable consumer's position: the stream sequence below which it has
 * acked everything (its ack floor), or 0 when it does not exist. For a unit that moves
 * from a durable consumer to an ordered read. */
uint64_t gust_durable_ack_floor(struct gust_bus *bus, const char *stream, const char *durable);
/* Deletes a durable consumer; 0, or GUST_EIO (a missing one is not an error). */
int gust_durable_delete(struct gust_bus *bus, const char *stream, const char *durable);

#endif
