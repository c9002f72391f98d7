/* Replies we are waiting for: confirmed publishes and requests.
 *
 * Each publish gets the next id and a reply subject `<inbox>.<id>`; JetStream sends its
 * PubAck there. Ids are sequential and every entry has the same timeout, so the ring's
 * oldest live entry is always the first to expire: the sweeper only looks at its head.
 * The ring starts small and doubles when it is full, up to the configured bound on how
 * many publishes can wait at once (back-pressure). It must not start at that bound: ids
 * walk the whole ring, so every slot of it would become resident memory (2.5 MB for the
 * default 65536) however few publishes wait at a time. */
#ifndef GUST_BUS_PENDING_H
#define GUST_BUS_PENDING_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/plugin.h" /* gust_publish_done_fn: called once, never with a lock held */


struct gust_pending_slot {
    uint64_t id;  /* 0: free */
    int64_t deadline_ms;
    gust_publish_done_fn fn;
    void *ud;
    atomic_int *inflight; /* the owner's count of its entries, or NULL */
    uint32_t tag;         /* gust_pending_tag of its subject, 0: none */
};

struct gust_pending {
    pthread_mutex_t lock;
    struct gust_pending_slot *slots;
    size_t size;        /* a power of two */
    size_t max_size;    /* the power of two it may grow to */
    uint64_t next_id;   /* ids start at 1 */
    uint64_t oldest_id; /* no live entry below it */
    size_t live;
};

/* Room for at least max_size entries at once, allocated as they are needed. */
int gust_pending_init(struct gust_pending *p, size_t max_size);
void gust_pending_dispose(struct gust_pending *p);
/* Reserves an id, or returns 0 when the ring is full at its largest. inflight (may be NULL) counts the
 * entry until its fn has returned, so an owner can wait for its last callback. */
uint64_t gust_pending_add(struct gust_pending *p, int64_t deadline_ms, gust_publish_done_fn fn, void *ud,
                          atomic_int *inflight);
/* Completes id; unknown or expired ids are ignored. */
void gust_pending_complete(struct gust_pending *p, uint64_t id, int status, uint64_t seq, const char *error);
/* Fails every entry whose deadline is before now_ms (or every entry when now_ms < 0). */
void gust_pending_expire(struct gust_pending *p, int64_t now_ms, int status, const char *why);
size_t gust_pending_live(struct gust_pending *p);

/* A publish's subject as a tag (never 0): the server names the subject, not the
 * publish, when it refuses one (a permissions violation). */
uint32_t gust_pending_tag(const char *subject);
void gust_pending_set_tag(struct gust_pending *p, uint64_t id, uint32_t tag);
/* Fails every live entry of that tag. */
void gust_pending_fail_tag(struct gust_pending *p, uint32_t tag, int status, const char *why);

#endif
