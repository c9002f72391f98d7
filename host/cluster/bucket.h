/* What the leases and the node directory share: the cluster's KV bucket (GUST_LEASES),
 * bound if it exists, made if not (each with its own handle), and the clocks their
 * entries and threads go by. */
#ifndef GUST_CLUSTER_BUCKET_H
#define GUST_CLUSTER_BUCKET_H

#include <nats/nats.h>
#include <pthread.h>
#include <stdint.h>

struct gust_bus;

/* Opens bucket over the bus's buffered connection; *js is made on first use and kept by
 * the caller (KV calls give up after wait_ms). Returns NATS_OK, or the status with the
 * reason in nats_GetLastError. */
natsStatus gust_bucket_open(struct gust_bus *bus, const char *bucket, int replicas, int64_t wait_ms, jsCtx **js,
                            kvStore **kv);
/* Reads one of our own entries, {"holder": "...", ["config": "...",] "expires_ms": N}
 * (written by us: no escapes): holder and, when config is not NULL, config; returns
 * expires_ms. Anything else reads as holder "" and 0: a free lease, an expired node. */
int64_t gust_entry_read(kvEntry *e, char *holder, size_t hsize, char *config, size_t csize);
/* nats_GetLastError when set, else the status's text. */
const char *gust_nats_reason(natsStatus s);
/* Unix time in ms: entries expire by it, so that peers on other machines agree (their
 * clocks kept in sync). */
int64_t gust_wall_ms(void);
/* pthread_cond_timedwait for ms at most; lock held. */
void gust_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t ms);

#endif
