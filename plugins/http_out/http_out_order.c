/* ordered_by's memory across deliver calls: per key, the stream sequences of the
 * messages that went back to the bus unsent or failed (a RETRY), so that a later message
 * of that key waits (a RETRY too) until every earlier one of its key went. The bus gives
 * them back in no particular order: each is let go only when no earlier one of its key
 * is still held.
 *
 * Only keys holding something are kept: a key failing for long holds its messages on
 * the bus, up to the consumer's max_ack_pending, and then the whole sink waits. A
 * message not seen again for FORGET_MS (removed from the stream by its limits, taken by
 * another process) is forgotten, so that its key does not wait for it for ever. Keys are
 * looked up one after another: few are held at once unless the far end is down, and then
 * the outage pause sends nothing anyway. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "http_out.h"

#define FORGET_MS (10 * 60 * 1000)

struct held_key {
    char *key;
    size_t len;
    uint64_t *seq;
    int64_t *seen; /* when each was last seen (gust_clock_mono_ms) */
    size_t n, cap;
};

struct http_out_order {
    struct held_key *k;
    size_t n, cap;
    int64_t swept; /* the last sweep for forgotten messages */
    _Atomic uint64_t keys, events; /* for the counters */
};

int http_out_order_create(struct http_out_order **out)
{
    *out = calloc(1, sizeof(**out));
    return *out != NULL ? 0 : -1;
}

void http_out_order_destroy(struct http_out_order *o)
{
    if (!o) {
        return;
    }
    for (size_t i = 0; i < o->n; i++) {
        free(o->k[i].key);
        free(o->k[i].seq);
        free(o->k[i].seen);
    }
    free(o->k);
    free(o);
}

static struct held_key *find(struct http_out_order *o, const char *key, size_t len)
{
    for (size_t i = 0; i < o->n; i++) {
        if (o->k[i].len == len && memcmp(o->k[i].key, key, len) == 0) {
            return &o->k[i];
        }
    }
    return NULL;
}

static void count(struct http_out_order *o)
{
    size_t events = 0;
    for (size_t i = 0; i < o->n; i++) {
        events += o->k[i].n;
    }
    atomic_store(&o->keys, o->n);
    atomic_store(&o->events, events);
}

/* Drops key k once it holds nothing. */
static void drop_if_empty(struct http_out_order *o, struct held_key *k)
{
    if (k->n > 0) {
        return;
    }
    free(k->key);
    free(k->seq);
    free(k->seen);
    *k = o->k[--o->n];
}

uint64_t http_out_order_before(struct http_out_order *o, const char *key, size_t len, uint64_t seq)
{
    struct held_key *k = find(o, key, len);
    uint64_t first = 0;
    for (size_t i = 0; k && i < k->n; i++) {
        if (k->seq[i] < seq && (first == 0 || k->seq[i] < first)) {
            first = k->seq[i];
        }
    }
    return first;
}

int http_out_order_between(struct http_out_order *o, const char *key, size_t len, uint64_t lo, uint64_t hi)
{
    struct held_key *k = find(o, key, len);
    for (size_t i = 0; k && i < k->n; i++) {
        if (k->seq[i] > lo && k->seq[i] < hi) {
            return 1;
        }
    }
    return 0;
}

int http_out_order_holds(struct http_out_order *o, const char *key, size_t len)
{
    return find(o, key, len) != NULL;
}

int http_out_order_hold(struct http_out_order *o, const char *key, size_t len, uint64_t seq, int64_t now)
{
    struct held_key *k = find(o, key, len);
    if (!k) {
        if (o->n == o->cap) {
            size_t cap = o->cap ? 2 * o->cap : 16;
            struct held_key *v = realloc(o->k, cap * sizeof(*v));
            if (!v) {
                return -1;
            }
            o->k = v;
            o->cap = cap;
        }
        k = &o->k[o->n];
        *k = (struct held_key){.key = malloc(len + 1), .len = len};
        if (!k->key) {
            return -1;
        }
        memcpy(k->key, key, len);
        o->n++;
    }
    for (size_t i = 0; i < k->n; i++) {
        if (k->seq[i] == seq) {
            k->seen[i] = now;
            return 0;
        }
    }
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 8;
        uint64_t *s = realloc(k->seq, cap * sizeof(*s));
        if (s) {
            k->seq = s;
        }
        int64_t *t = s ? realloc(k->seen, cap * sizeof(*t)) : NULL;
        if (!t) {
            drop_if_empty(o, k);
            return -1;
        }
        k->seen = t;
        k->cap = cap;
    }
    k->seq[k->n] = seq;
    k->seen[k->n++] = now;
    count(o);
    return 0;
}

void http_out_order_done(struct http_out_order *o, const char *key, size_t len, uint64_t seq)
{
    struct held_key *k = find(o, key, len);
    for (size_t i = 0; k && i < k->n; i++) {
        if (k->seq[i] == seq) {
            k->seq[i] = k->seq[--k->n];
            k->seen[i] = k->seen[k->n];
            drop_if_empty(o, k);
            count(o);
            return;
        }
    }
}

void http_out_order_sweep(struct http_out_order *o, int64_t now)
{
    if (now - o->swept < 1000) {
        return;
    }
    o->swept = now;
    for (size_t i = o->n; i-- > 0;) {
        struct held_key *k = &o->k[i];
        for (size_t j = k->n; j-- > 0;) {
            if (now - k->seen[j] > FORGET_MS) {
                k->seq[j] = k->seq[--k->n];
                k->seen[j] = k->seen[k->n];
            }
        }
        drop_if_empty(o, k);
    }
    count(o);
}

void http_out_order_counts(const struct http_out_order *o, uint64_t *keys, uint64_t *events)
{
    *keys = atomic_load(&((struct http_out_order *)o)->keys);
    *events = atomic_load(&((struct http_out_order *)o)->events);
}
