/* A JetStream key-value bucket (the leases' and the node directory's GUST_LEASES).
 * Every call blocks (at most the wait the bucket was opened with): not on an event
 * loop. Errors return GUST_EIO (or GUST_ENOTFOUND, GUST_EAGAIN for a lost
 * compare-and-set) with the reason in why. */
#ifndef GUST_BUS_KV_H
#define GUST_BUS_KV_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

struct gust_kv;

/* Binds bucket, or makes it (file storage, one revision kept, `replicas` copies). */
int gust_kv_open(struct gust_bus *bus, const char *bucket, int replicas, int64_t wait_ms, struct gust_kv **out,
                 char *why, size_t why_size);
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
/* Calls fn once per key (an empty bucket: never). */
int gust_kv_keys(struct gust_kv *kv, void (*fn)(void *ud, const char *key), void *ud, char *why, size_t why_size);

#endif
