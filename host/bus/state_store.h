/* Named blobs in the state stream (nats { state_stream; state_subjects; }): the detect
 * units' checkpoints. A blob of any size is stored as chunks on <prefix>.<name>.data
 * (each under the server's max_payload), then a head on <prefix>.<name>.head that
 * lists them, with its size and hash and a small JSON object of the caller's. The head
 * is a rollup: storing it removes the older head, so the newest blob is the one read
 * back; the older chunks are purged after it. A crash at any point leaves the previous
 * blob whole: its head and chunks go only once the new ones are stored.
 * Blocking calls (PubAcks, API requests): not on an event loop. */
#ifndef GUST_BUS_STATE_STORE_H
#define GUST_BUS_STATE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

/* What a put did, for /units and the benchmarks. */
struct gust_state_put_stats {
    size_t chunks;
    size_t bytes;
};

/* Stores data[0..len) as `name` (tokens of [A-Za-z0-9_-], dot-separated), with info
 * (a JSON object of the caller's, or NULL). 0, or an error with why. */
int gust_state_put(struct gust_bus *bus, const char *name, const char *info, const void *data, size_t len,
                   struct gust_state_put_stats *stats, char *why, size_t why_size);
/* The newest blob of `name`: *data (free it) and *len, and its info into info
 * (NUL-terminated, cut at info_size). GUST_ENOTFOUND when there is none; GUST_EINVAL
 * when it is there but not whole (a head that does not parse, a chunk missing, a wrong
 * size or hash: info is filled when the head parsed); GUST_EAGAIN or GUST_EIO when it
 * cannot be read now (the bus away, JetStream refusing); with why. */
int gust_state_get(struct gust_bus *bus, const char *name, char *info, size_t info_size, void **data,
                   size_t *len, char *why, size_t why_size);

#endif
