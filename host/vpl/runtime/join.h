/* The hash join: the events a join holds, indexed by their key in an equality of its
 * .on() between an expression of each source (struct window's key), so that a new
 * event is offered only the held events of the other source with its own key. The
 * index is derived from the held events: snapshots do not carry it, a restore rebuilds
 * it (window.c). */
#ifndef VPL_JOIN_H
#define VPL_JOIN_H

#include <stdint.h>

#include "runtime.h"

struct jgroup;

/* Beside a join window's ev[]: slot[i] says where ev[i] is in the index. Events are
 * numbered in arrival order (ev[i] is number base + i), which survives the window
 * sliding its array to the front. */
struct jslot {
    struct jgroup *g; /* NULL: not indexed (its key is missing: it equals nothing) */
    uint32_t next;    /* the next event of g is this one's number + next; 0: none */
};

struct jindex {
    struct hmap map[2]; /* by source: key bytes -> struct jgroup */
    struct jslot *slot;
    uint32_t cap;
    uint64_t base;
};

/* The key of ev (of the join source `side`) in e->jkey and its hash: 1, or 0 when the
 * key is missing (== is never true for it), -1 on OOM. Numbers are keyed by their
 * value as a double, since == compares an int and a float so. */
int join_key(struct vpl_engine *e, const struct window *win, const struct vpl_event *ev, int side,
             uint64_t *hash);

/* The group of source side with the key in e->jkey (hash h), or NULL. */
struct jgroup *join_find(struct jindex *jx, int side, uint64_t h, const struct vpl_engine *e);
/* The same, made when absent (empty); NULL on OOM. */
struct jgroup *join_make(struct vpl_engine *e, struct jindex *jx, int side, uint64_t h);

/* How many events g holds, the number of its oldest, and of the one after number n. */
uint32_t join_count(const struct jgroup *g);
uint64_t join_first(const struct jgroup *g);
uint64_t join_next(const struct jindex *jx, uint64_t n);

/* ev[i] (number base + i) joins g, after its others; g NULL: not indexed. */
void join_link(struct jindex *jx, uint32_t i, struct jgroup *g);
/* Frees g when it holds nothing (an event refused by the window). */
void join_drop_empty(struct vpl_engine *e, struct jindex *jx, struct jgroup *g);
/* ev[i], the oldest held, leaves. */
void join_unlink_oldest(struct vpl_engine *e, struct jindex *jx, uint32_t i);
/* The window moved ev[head..head+n) to the front. */
void join_slide(struct jindex *jx, uint32_t head, uint32_t n);
/* Room for cap slots: 0 or -1 (OOM). */
int join_reserve(struct vpl_engine *e, struct jindex *jx, uint32_t cap);

struct jindex *join_new(struct vpl_engine *e); /* NULL on OOM */
void join_free(struct vpl_engine *e, struct jindex *jx);

#endif
