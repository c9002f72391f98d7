/* Bounded storage (nats { max_bytes; max_age; keep; }): a thread of the bus that, every
 * 250 ms, reads the streams' sizes (for /metrics), the configured units' durable
 * consumers (their backlog and ack floor) and the in-process readers' floor (the detect
 * checkpoints), and purges the event stream below the lowest sequence that every reader
 * is done with: once older than keep, or at once while the stream nears max_bytes.
 * JetStream itself refuses new events past max_bytes (discard new, streams.c), so
 * nothing unconsumed is ever dropped to make room. Per pass: three stream infos, one
 * consumer info per unit that may have moved (one done with all the stream holds is not
 * read again until the stream grows, or for 10 s) and at most one purge. */
#ifndef GUST_BUS_RETENTION_H
#define GUST_BUS_RETENTION_H

#include "bus.h"

struct gust_retention;

int gust_retention_start(struct gust_bus *bus, struct gust_retention **out, struct gust_err *err);
void gust_retention_stop(struct gust_retention *r);

/* A publish was refused because the store is full: the bus says so for a while. Any
 * thread, any connection (ingest's too). */
void gust_retention_note_full(void);
/* A durable consumer was made, changed or deleted: the next pass reads every consumer
 * again. Any thread. */
void gust_retention_note_consumer_change(void);

#endif
