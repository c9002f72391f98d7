/* What the leases and the node directory share: the format of their entries in the
 * cluster's KV bucket (GUST_LEASES, host/bus/kv.h), and the clocks their entries and
 * threads go by. */
#ifndef GUST_CLUSTER_BUCKET_H
#define GUST_CLUSTER_BUCKET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Reads one of our own entries, {"holder": "...", ["config": "...",] "expires_ms": N}
 * (written by us: no escapes): holder and, when config is not NULL, config; returns
 * expires_ms. Anything else reads as holder "" and 0: a free lease, an expired node. */
int64_t gust_entry_read(const char *value, char *holder, size_t hsize, char *config, size_t csize);
/* Makes s (NUL-terminated) usable in a key: what is not a letter, a digit, '-', '_' or
 * '=' becomes '_' (a host:pid name has a ':'). */
void gust_key_safe(char *s);
/* Unix time in ms: entries expire by it, so that peers on other machines agree (their
 * clocks kept in sync). */
int64_t gust_wall_ms(void);
/* pthread_cond_timedwait for ms at most; lock held. */
void gust_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t ms);

#endif
