/* The one rate limiter of the sinks: a token bucket, and a bounded set of them by key.
 *
 * Tokens are fractional (a rate of 10/m refills 1/6000 of a token per ms) and may go
 * into debt: taking n > burst waits for a full bucket, then leaves it below zero, so a
 * long run still averages the rate. A key's bucket that was pushed out of the limiter's
 * LRU comes back full, which is what it would be anyway once it has been unused for
 * burst/rate: with max_keys above the keys active within that time, eviction changes
 * nothing. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gust/sdk.h"

int gust_rate_parse(const char *text, double *per_sec)
{
    char *end = NULL;
    double v;

    if (text == NULL || !isdigit((unsigned char)text[0])) {
        return -1;
    }
    v = strtod(text, &end);
    if (end == text || *end != '/' || !(v > 0) || v > 1e9) {
        return -1;
    }
    end++;
    if (strcmp(end, "s") == 0) {
        *per_sec = v;
    } else if (strcmp(end, "m") == 0) {
        *per_sec = v / 60.0;
    } else if (strcmp(end, "h") == 0) {
        *per_sec = v / 3600.0;
    } else {
        return -1;
    }
    return 0;
}

void gust_bucket_init(struct gust_bucket *b, double per_sec, double burst, int64_t now_ms)
{
    b->per_ms = per_sec / 1000.0;
    b->burst = burst >= 1.0 ? burst : 1.0;
    b->tokens = b->burst;
    b->at_ms = now_ms;
}

int64_t gust_bucket_take(struct gust_bucket *b, double n, int64_t now_ms)
{
    if (now_ms > b->at_ms) {
        b->tokens += (double)(now_ms - b->at_ms) * b->per_ms;
        if (b->tokens > b->burst) {
            b->tokens = b->burst;
        }
        b->at_ms = now_ms;
    }
    double need = n < b->burst ? n : b->burst;
    if (b->tokens >= need) {
        b->tokens -= n;
        return 0;
    }
    int64_t wait = (int64_t)((need - b->tokens) / b->per_ms) + 1;
    return wait > 0 ? wait : 1;
}

struct node {
    struct node *next_in_slot;
    struct node *newer, *older; /* the LRU list */
    struct gust_bucket bucket;
    uint64_t hash;
    size_t len;
    char key[];
};

struct gust_limiter {
    double per_sec, burst;
    size_t max_keys, nkeys;
    struct node **slots;
    size_t nslots;           /* a power of two, at least 2 * max_keys */
    struct node *newest, *oldest;
    struct gust_bucket spare; /* for keys that found no memory */
};

static uint64_t hash_of(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    }
    return h;
}

int gust_limiter_create(struct gust_limiter **out, double per_sec, double burst, size_t max_keys)
{
    struct gust_limiter *l = calloc(1, sizeof(*l));

    *out = NULL;
    if (l == NULL || per_sec <= 0 || max_keys == 0) {
        free(l);
        return l == NULL ? GUST_ENOMEM : GUST_EINVAL;
    }
    l->per_sec = per_sec;
    l->burst = burst;
    l->max_keys = max_keys;
    for (l->nslots = 16; l->nslots < 2 * max_keys; l->nslots *= 2) {
    }
    if ((l->slots = calloc(l->nslots, sizeof(*l->slots))) == NULL) {
        free(l);
        return GUST_ENOMEM;
    }
    gust_bucket_init(&l->spare, per_sec, burst, gust_clock_mono_ms());
    *out = l;
    return 0;
}

static void unlink_lru(struct gust_limiter *l, struct node *n)
{
    if (n->newer) {
        n->newer->older = n->older;
    } else {
        l->newest = n->older;
    }
    if (n->older) {
        n->older->newer = n->newer;
    } else {
        l->oldest = n->newer;
    }
    n->newer = n->older = NULL;
}

static void push_newest(struct gust_limiter *l, struct node *n)
{
    n->older = l->newest;
    n->newer = NULL;
    if (l->newest) {
        l->newest->newer = n;
    }
    l->newest = n;
    if (l->oldest == NULL) {
        l->oldest = n;
    }
}

static void evict_oldest(struct gust_limiter *l)
{
    struct node *n = l->oldest;
    struct node **p = &l->slots[n->hash & (l->nslots - 1)];

    while (*p != n) {
        p = &(*p)->next_in_slot;
    }
    *p = n->next_in_slot;
    unlink_lru(l, n);
    free(n);
    l->nkeys--;
}

int64_t gust_limiter_take(struct gust_limiter *l, const char *key, size_t len, double n, int64_t now_ms)
{
    uint64_t h = hash_of(key, len);
    struct node **slot = &l->slots[h & (l->nslots - 1)];
    struct node *e;

    for (e = *slot; e != NULL; e = e->next_in_slot) {
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0) {
            break;
        }
    }
    if (e == NULL) {
        if (l->nkeys == l->max_keys) {
            evict_oldest(l);
        }
        if ((e = malloc(sizeof(*e) + len)) == NULL) {
            return gust_bucket_take(&l->spare, n, now_ms);
        }
        memcpy(e->key, key, len);
        e->len = len;
        e->hash = h;
        gust_bucket_init(&e->bucket, l->per_sec, l->burst, now_ms);
        e->next_in_slot = *slot;
        *slot = e;
        l->nkeys++;
    } else {
        unlink_lru(l, e);
    }
    push_newest(l, e);
    return gust_bucket_take(&e->bucket, n, now_ms);
}

size_t gust_limiter_keys(const struct gust_limiter *l)
{
    return l->nkeys;
}

void gust_limiter_destroy(struct gust_limiter *l)
{
    if (l == NULL) {
        return;
    }
    while (l->oldest) {
        evict_oldest(l);
    }
    free(l->slots);
    free(l);
}
