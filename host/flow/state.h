/* Durable flow state: the store interface the flow library reads through, the writes
 * it stages per batch, and an in-memory store.
 *
 * A script sees `state` (see flow.h). The library never writes to a store: reads go
 * through struct gust_state_store, writes are staged in the flow, and after a batch
 * the caller takes them (gust_flow_state_writes) and commits them.
 *
 * Keys are strings of 1..GUST_STATE_KEY_MAX bytes, any bytes but NUL; a store maps them
 * to its own key syntax (NATS KV allows [-/_=.a-zA-Z0-9] only: escape the rest, the
 * mapping must be injective). Values are JSON texts of at most GUST_STATE_VALUE_MAX
 * bytes, as the flow's encoder writes them.
 *
 * What the library guarantees, per batch (gust_flow_state_begin .. the next begin):
 *   - it reads a key from the store at most once, the first time a message of the
 *     batch touches it, and remembers the revision the store gave;
 *   - every later read of the key in the batch sees the batch's own staged writes;
 *   - the writes of a message whose run failed are undone (as are its reads' marks),
 *     so what is staged is exactly the effect of the messages that succeeded, applied
 *     in batch order;
 *   - for each written key, `msgs` lists every message that read or wrote it
 *     (ascending batch indices: the i-th gust_flow_run since the begin is message i).
 *
 * What it expects from the committer, between the handler and the acks:
 *   1. Commit each write: a key with has_revision replaces the value the store had at
 *      that revision (compare-and-set; revision 0: the key must still be absent); one
 *      without was written before any read (state.set first) and may be put
 *      unconditionally. json NULL deletes the key.
 *   2. A write whose compare-and-set fails was computed from a stale value: none of the
 *      messages in its `msgs` may be acked, nor their emits published; they are retried
 *      (redelivered) and see the new value then. Their other writes were computed
 *      together with the failed one, so the batch must not stay half applied for them:
 *      either
 *        a. commit no write of a batch until every key's revision is confirmed current
 *           (the in-memory store), or re-run the batch without the retried messages
 *           (gust_flow_state_begin, the runs again, the first runs' emits dropped), or
 *        b. record in each value which messages it includes (the NATS KV store, see
 *           "Messages already applied" below): then each write may be committed on
 *           its own, and a retried message is applied once to each key, the keys
 *           committed before included. What stays is one message's writes committed
 *           on some keys when they were derived from another key whose write failed
 *           (a value read from b written to a): a is committed, and the retry, which
 *           skips a, does not write a again from b's new value.
 *   3. Only then ack: the same barrier as the emits. A crash before the commit leaves
 *      neither acks nor state behind (the inputs are redelivered and recomputed).
 *   4. expires_ms, when not 0, is when the value stops being visible (ms since the
 *      epoch, computed from the stored time of the message that set it); the store
 *      hides an expired value from reads made at or after that time.
 *
 * Messages already applied. A store may give with a value the stream sequences of the
 * messages whose effect it includes (`applied`: what the committer recorded with it).
 * A message whose meta.seq is among the applied of a key it touches has been applied
 * to that key before (it is a redelivery after its state was committed): its
 * operations on that key are no-ops. state.get returns the value as stored (not the
 * batch's staged value), state.incr returns the stored number (n when there is none)
 * and writes nothing, state.set and state.del write nothing; the message is not
 * listed in the key's msgs. Such a store sets read_first, so that every key is read
 * at its first touch (a state.set first included): its applied must be known before a
 * write, and is given back with the write for the committer to extend.
 * The library keeps nothing between batches: caching committed values (with their new
 * revisions) is the store's business, and safe only where nothing else writes. */
#ifndef GUST_FLOW_STATE_H
#define GUST_FLOW_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"

#define GUST_STATE_KEY_MAX 256
#define GUST_STATE_VALUE_MAX (64 * 1024)

/* What a store holds for one key. */
struct gust_state_value {
    char *json; /* malloc'd JSON text, ownership passes to the reader; NULL: absent */
    size_t len;
    uint64_t revision;  /* the store's revision of the key (0: never written or deleted) */
    int64_t expires_ms; /* 0: never */
    /* Messages already applied to the key: napplied ranges of stream sequences,
     * applied[2k] .. applied[2k + 1] inclusive, ascending and disjoint. malloc'd,
     * ownership passes to the reader; NULL when none (a revision 0 key may have some:
     * a deletion keeps them). */
    uint64_t *applied;
    size_t napplied;
};

struct gust_state_store {
    /* Reads key[0..key_len) as seen at now_ms (the stored time of the message that asks,
     * for expiry). Returns 0 with *out filled (json NULL when absent or expired), or a
     * negative GUST_E* with err filled when the store cannot answer (the message fails
     * and is retried). Called on the flow's thread, during gust_flow_run. */
    int (*read)(void *ud, const char *key, size_t key_len, int64_t now_ms, struct gust_state_value *out,
                struct gust_err *err);
    void *ud;
    int read_first; /* 1: read a key at its first touch even when that is a write */
};

/* One staged write of a batch. Every pointer is owned by the flow and valid until the
 * next gust_flow_state_begin, gust_flow_run or gust_flow_destroy. */
struct gust_state_write {
    const char *key; /* key_len bytes (NUL-terminated too) */
    size_t key_len;
    const char *json; /* the new value (NUL-terminated), or NULL: delete the key */
    size_t len;
    int64_t expires_ms; /* 0: never */
    int has_revision;   /* the store was read: compare-and-set against `revision` */
    uint64_t revision;
    const size_t *msgs; /* batch indices of the messages that touched the key, ascending */
    size_t nmsgs;
    const uint64_t *applied; /* what the store's read gave (struct gust_state_value) */
    size_t napplied;
};

/* An in-memory store, for `gust test-flow` and tests: one map, one revision counter
 * (every committed write takes the next number), no threads (use it from one thread). */
struct gust_state_mem;

int gust_state_mem_create(struct gust_state_mem **out);
void gust_state_mem_destroy(struct gust_state_mem *m); /* NULL is a no-op */
/* The store interface over m (which must outlive its use). */
struct gust_state_store gust_state_mem_store(struct gust_state_mem *m);
/* Sets a key outright (initial state): copies key and json; json NULL deletes. */
int gust_state_mem_put(struct gust_state_mem *m, const char *key, size_t key_len, const char *json,
                       size_t len, int64_t expires_ms);
/* Commits a batch's writes[0..n) as the contract above asks: when any compare-and-set
 * fails, nothing is written and conflict[i] is set to 1 for each failing write (the
 * caller retries its msgs); otherwise every write is applied. Returns the number of
 * conflicts (0: committed), or GUST_ENOMEM (nothing written). conflict has n slots. */
int gust_state_mem_commit(struct gust_state_mem *m, const struct gust_state_write *writes, size_t n,
                          unsigned char *conflict);
/* Calls fn for every key visible at now_ms, in the order the keys were first written. */
void gust_state_mem_each(const struct gust_state_mem *m, int64_t now_ms,
                         void (*fn)(void *ud, const char *key, size_t key_len, const char *json, size_t len,
                                    uint64_t revision),
                         void *ud);

#endif
