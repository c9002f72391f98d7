/* A JetStream key-value bucket (the leases' and the node directory's GUST_LEASES, the
 * flows' state GUST_FLOW_STATE). Every call blocks (at most the wait the bucket was
 * opened with): not on an event loop. Errors return GUST_EIO (or GUST_ENOTFOUND,
 * GUST_EAGAIN for a lost compare-and-set) with the reason in why. A bucket is used by
 * one thread at a time. */
#ifndef GUST_BUS_KV_H
#define GUST_BUS_KV_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

struct gust_kv;

/* Binds bucket, or makes it (file storage, one revision kept, `replicas` copies). */
int gust_kv_open(struct gust_bus *bus, const char *bucket, int replicas, int64_t wait_ms, struct gust_kv **out,
                 char *why, size_t why_size);
/* Binds bucket only if it exists: GUST_ENOTFOUND when it does not. */
int gust_kv_open_existing(struct gust_bus *bus, const char *bucket, int64_t wait_ms, struct gust_kv **out, char *why,
                          size_t why_size);
void gust_kv_close(struct gust_kv *kv);

/* The value of key (up to size - 1 bytes, NUL-terminated) and its revision. */
int gust_kv_get(struct gust_kv *kv, const char *key, char *value, size_t size, uint64_t *rev, char *why,
                size_t why_size);
/* Writes key only when it does not exist: GUST_EAGAIN when it does. */
int gust_kv_create(struct gust_kv *kv, const char *key, const void *value, size_t len, uint64_t *rev, char *why,
                   size_t why_size);
/* Writes key only when its revision is still `expected`: GUST_EAGAIN otherwise. */
int gust_kv_update(struct gust_kv *kv, const char *key, const void *value, size_t len, uint64_t expected,
                   uint64_t *rev, char *why, size_t why_size);
int gust_kv_put(struct gust_kv *kv, const char *key, const void *value, size_t len, uint64_t *rev, char *why,
                size_t why_size);
int gust_kv_delete(struct gust_kv *kv, const char *key);
/* The value of key, any bytes: *value (malloc'd, NUL-terminated after its *len bytes;
 * NULL when the key is absent or deleted) and *rev, the revision a compare-and-set
 * of it must name: 0 when the key was never written, the deletion's when it was
 * deleted. 0, or an error. */
int gust_kv_read(struct gust_kv *kv, const char *key, char **value, size_t *len, uint64_t *rev, char *why,
                 size_t why_size);

/* One write of gust_kv_write_all. */
struct gust_kv_write {
    const char *key;
    const void *value;
    size_t len;
    int cas;           /* only if the key's revision is still `expected` (0: the key must be new) */
    uint64_t expected;
    /* Filled by gust_kv_write_all: */
    int rc;            /* 0; GUST_EAGAIN: the revision was another (nothing written);
                          GUST_EINVAL: over the server's max_payload (never sent);
                          GUST_EIO: not known to be written (it may have been) */
    uint64_t revision; /* the new revision, when rc is 0 */
    char why[160];
};

/* Sends every write at once, as the bus's own publishes (bus.h), and waits until each
 * is answered or the bus gives it up (its publish_timeout; `wait_ms` bounds the flush):
 * one round trip for all, instead of one each. The keys must be distinct. Returns how
 * many did not succeed (their rc says why). */
size_t gust_kv_write_all(struct gust_kv *kv, struct gust_kv_write *w, size_t n, int64_t wait_ms);

/* Calls fn with the last value of every key matching `keys` (a wildcard such as
 * "unit.>"): value NULL for a deletion or purge marker, rev the revision a
 * compare-and-set of the key must name. One streaming read instead of a request per key.
 * 0 once every key was seen (within the bucket's wait), else an error. */
int gust_kv_each(struct gust_kv *kv, const char *keys,
                 void (*fn)(void *ud, const char *key, const char *value, size_t len, uint64_t rev), void *ud,
                 char *why, size_t why_size);

/* Calls fn once per key (an empty bucket: never). */
int gust_kv_keys(struct gust_kv *kv, void (*fn)(void *ud, const char *key), void *ud, char *why, size_t why_size);

#endif
