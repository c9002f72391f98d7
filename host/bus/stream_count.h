/* Counting a stream's messages on a subject filter from a position, for reading the
 * last N of them or those since a time (gust replay). JetStream counts them for a
 * consumer when it is made (its pending messages); nothing else in its API does, so
 * an ephemeral consumer is made and deleted at once. Blocking: not on an event loop. */
#ifndef GUST_BUS_STREAM_COUNT_H
#define GUST_BUS_STREAM_COUNT_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

/* The messages of `stream` on `filter` with a sequence at or after start_seq (when
 * since_ms is 0), or stored at or after since_ms (ms since the epoch; start_seq is
 * then ignored): how many (*count), and the sequence of the first of them (*first; 0
 * when none: at or before it, a read on filter from there finds exactly them). 0, or
 * GUST_EAGAIN / GUST_EIO with why. */
int gust_stream_count(struct gust_bus *bus, const char *stream, const char *filter, uint64_t start_seq,
                      int64_t since_ms, uint64_t *first, uint64_t *count, char *why, size_t why_size);

#endif
