/* Reading and tending a stream's stored messages without a consumer: the dead-letter
 * routes (list, replay, purge) and the checkpoint store use these. Every call is a
 * JetStream API request that blocks (at most API_WAIT): not on an event loop. Errors
 * are GUST_EAGAIN (the bus is not connected or JetStream did not answer),
 * GUST_ENOTFOUND, or GUST_EIO (JetStream refused; the answer does not parse), with the
 * reason in why. */
#ifndef GUST_BUS_STREAM_OPS_H
#define GUST_BUS_STREAM_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

/* A stored message, as JetStream returns it. */
struct gust_stored {
    uint64_t seq;
    char subject[256];
    char time[64];       /* when it was stored, RFC 3339 as the server writes it */
    unsigned char *data; /* owned: free with gust_stored_free */
    size_t len;
};

void gust_stored_free(struct gust_stored *m);

int gust_stream_state(struct gust_bus *bus, const char *stream, uint64_t *last_seq, uint64_t *msgs, char *why,
                      size_t why_size);
/* The message with sequence seq (filter NULL), or the first at or after seq whose
 * subject matches filter (deleted ones skipped). */
int gust_stream_get(struct gust_bus *bus, const char *stream, uint64_t seq, const char *filter,
                    struct gust_stored *out, char *why, size_t why_size);
/* The newest message on subject. */
int gust_stream_last(struct gust_bus *bus, const char *stream, const char *subject, struct gust_stored *out,
                     char *why, size_t why_size);
int gust_stream_delete(struct gust_bus *bus, const char *stream, uint64_t seq, char *why, size_t why_size);
/* Removes the messages on filter (below sequence `below` when it is not 0; JetStream
 * reads 1 as 0: everything); *purged (may be NULL) is how many. */
int gust_stream_purge(struct gust_bus *bus, const char *stream, const char *filter, uint64_t below,
                      uint64_t *purged, char *why, size_t why_size);

#endif
