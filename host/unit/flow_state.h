/* A flow unit's durable state on NATS KV: the store its script reads through and the
 * committer of what a batch staged (host/flow/state.h has the contract).
 *
 * One bucket (nats { state_bucket GUST_FLOW_STATE; }) holds every flow's state, under
 * keys <unit>.<escaped key>: a state key is any bytes but NUL, and NATS keys allow
 * [-/_=.a-zA-Z0-9] only, so [A-Za-z0-9_-] stay and every other byte is written =XX
 * (hex): injective, and no state key can reach another unit's prefix. Each value is an
 * envelope, JSON:
 *
 *     {"v": <the value, null when deleted>, "x": <expires_ms, 0 never>,
 *      "a": [[lo, hi], ...]}
 *
 * where "a" are ranges of stream sequences of the unit's messages whose effect the
 * value includes. A message redelivered after its state was committed (a crash before
 * its ack, a conflict on another key, emits that were not stored) finds itself there,
 * and the flow library makes its operations on that key no-ops: each key takes each
 * message's effect once. The ranges at or below the durable consumer's ack floor, read
 * before each commit, are dropped as values are written (nothing there can be
 * redelivered); and a key touched by a message at or below it (acked by another process
 * while this batch ran past ack_wait) is not written.
 *
 * The commit, after the batch ran and before its emits are published: one
 * compare-and-set per written key, all sent at once. The new "a" is the old plus every
 * message of the batch that ran successfully (touching the key or not: the batch's
 * messages make few ranges). A write whose revision was stale makes the messages that
 * touched the key wait (not published, not acked, redelivered; a conflict is never a
 * rejection, so it does not count toward max_deliver); the other writes are committed.
 *
 * Values may be kept in memory between batches (cache_bytes): only where no other
 * process writes the unit's keys, since a read the cache answers is not checked (a
 * write still is: its compare-and-set fails on a stale revision, the entry is dropped
 * and the retry reads the bucket). When the cache outgrows its bytes it is emptied. At
 * its first miss the cache loads every key of the unit in one read (a KV watcher); while
 * it holds them all, a key it lacks is absent without a request (its write, a
 * compare-and-set against "no value yet", still fails if the key exists after all).
 *
 * Everything here runs on the unit's thread and blocks on the bus. */
#ifndef GUST_UNIT_FLOW_STATE_H
#define GUST_UNIT_FLOW_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"
#include "unit.h"

struct gust_bus;
struct gust_flow;        /* flow/flow.h: only flow_state.c and the flow handler run one */
struct gust_state_store; /* flow/state.h */

struct gust_kv_state_conf {
    struct gust_bus *bus;
    const char *bucket; /* nats { state_bucket } */
    int replicas;       /* of the bucket, when this makes it */
    const char *unit;
    const char *stream;  /* the event stream the unit reads ... */
    const char *durable; /* ... through this durable consumer, for its ack floor; NULL: none
                            (the edge path, whose messages have no stream sequence) */
    size_t cache_bytes;  /* 0: no cache */
    int64_t wait_ms;     /* for each read and each batch's writes */
    int read_only;       /* replay: never makes the bucket (a missing one reads empty),
                            gives no ranges (nothing is taken as applied), commits nothing */
};

/* What /units and /metrics show. */
struct gust_kv_state_stats {
    uint64_t reads;      /* keys asked of the store (a batch asks each of its keys once) */
    uint64_t cache_hits; /* ... of them answered from memory */
    uint64_t writes;     /* values committed */
    uint64_t conflicts;  /* compare-and-sets that found a newer revision */
    uint64_t errors;     /* reads and writes the bucket did not answer */
    uint64_t skipped;    /* operations of messages applied before (gust_kv_state_add_skipped) */
    uint64_t commit_ns;  /* spent committing batches: the writes sent and their answers awaited */
};

struct gust_kv_state;

/* Copies conf's strings. Connects to nothing yet: the bucket is opened (made) at the
 * first read. */
int gust_kv_state_create(const struct gust_kv_state_conf *conf, struct gust_kv_state **out, struct gust_err *err);
void gust_kv_state_destroy(struct gust_kv_state *s); /* NULL is a no-op */

/* The store for the flow's opts.state (valid while s lives). */
struct gust_state_store gust_kv_state_store(struct gust_kv_state *s);

/* Whether a read failed because the bucket did not answer since the last call (the
 * message that asked failed: it should wait for the bus, not count as rejected). */
int gust_kv_state_take_read_failure(struct gust_kv_state *s);

/* Commits what `flow` staged for batch b (run by it, outcomes set), as above; sets
 * outcome and error of the messages that must be redelivered. */
void gust_kv_state_commit(struct gust_kv_state *s, struct gust_flow *flow, struct gust_batch *b);

void gust_kv_state_add_skipped(struct gust_kv_state *s, uint64_t n);
/* Any thread. */
void gust_kv_state_stats(const struct gust_kv_state *s, struct gust_kv_state_stats *out);
const char *gust_kv_state_bucket(const struct gust_kv_state *s);

/* The KV key of state key key[0..len) of `unit` into out (size bytes: at least
 * strlen(unit) + 2 + 3 * GUST_STATE_KEY_MAX); returns its length. */
size_t gust_kv_state_key(const char *unit, const char *key, size_t len, char *out, size_t size);

#endif
