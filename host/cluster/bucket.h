/* What the leases and the node directory share: the format of their entries in the
 * cluster's KV bucket (GUST_LEASES, host/bus/kv.h), this process's identity in them, and
 * the clocks their entries and threads go by. */
#ifndef GUST_CLUSTER_BUCKET_H
#define GUST_CLUSTER_BUCKET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"

#define GUST_INSTANCE_LEN 32 /* hex digits of a process's instance id */
#define GUST_ENTRY_MAX 1024  /* the longest entry we write: what a reader reserves */

/* One entry: {"holder", "instance", "host", "pid", "space", ["config",] "expires_ms"}. The
 * holder is the node_name (shared by whoever was started with it); the instance is
 * drawn at random by each process, so that two processes with one node_name, or a
 * process restarted after kill -9, are told apart: a lease is ours only when its
 * instance is. */
struct gust_entry {
    char holder[128];
    char instance[GUST_INSTANCE_LEN + 1];
    char host[64];
    long pid;
    char space[64]; /* the kernel (boot id) and pid namespace the pid is in */
    char config[17]; /* a node's digest of its units; "" in a lease */
    int64_t expires_ms;
};

/* This process's identity: holder, instance, host and pid set once, on first use
 * (holder ""), expires_ms 0. Never NULL. */
const struct gust_entry *gust_self_entry(void);

/* Whether e was written by a process that is gone for sure: one in this process's
 * kernel and pid namespace whose pid is free (or is ours: an entry of our own
 * predecessor). A live process, one elsewhere, or an entry without a space is not
 * gone: its entry runs out after the TTL. This is what lets a process restarted after
 * kill -9 take its predecessor's leases back at once. */
int gust_entry_gone(const struct gust_entry *e);

/* Reads an entry (value, NUL-terminated) into e. Anything that is not an entry, a
 * deleted or given-back one included, reads as all empty and expires_ms 0: a free
 * lease, an expired node. */
void gust_entry_read(const char *value, struct gust_entry *e);
/* Writes e as JSON into out (its config member only when not ""). 0 or GUST_ENOMEM. */
int gust_entry_write(const struct gust_entry *e, struct gust_buf *out);

/* Makes s (NUL-terminated) usable in a key: what is not a letter, a digit, '-', '_' or
 * '=' becomes '_' (the default name host:pid has a ':'; a configured node_name is
 * checked at config time to need no change). */
void gust_key_safe(char *s);
/* pthread_cond_timedwait for ms at most; lock held. */
void gust_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t ms);

#endif
