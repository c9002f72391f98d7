/* Counting for the sink. Ids go into an open-addressing set whose keys live in one growing
 * arena (a benchmark sees millions of short ids; one allocation each would dominate).
 * Latencies go into a log-linear histogram, 64 buckets per power of two (under 1.6% error
 * on a percentile), so memory stays fixed however long the run. */
#include "sink_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUB_BITS 6
#define SUB (1u << SUB_BITS)
#define NBUCKETS (SUB * 60)

struct slot {
    uint64_t hash; /* 0: empty */
    uint32_t off;  /* into the arena */
    uint32_t len;
};

struct sink_stats {
    uint64_t received, unique, duplicates, no_id, connections, bodies;
    int64_t first_us, last_us;

    struct slot *slots;
    size_t nslots; /* a power of two */
    char *arena;
    size_t arena_len, arena_cap;

    uint64_t hist[NBUCKETS];
    uint64_t nlat;
    int64_t max_lat;
};

static void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size);
    if (!p) {
        fprintf(stderr, "gust-bench-sink: out of memory\n");
        exit(1);
    }
    return p;
}

struct sink_stats *sink_stats_create(void)
{
    struct sink_stats *st = xrealloc(NULL, sizeof(*st));
    memset(st, 0, sizeof(*st));
    st->nslots = 1 << 16;
    st->slots = xrealloc(NULL, st->nslots * sizeof(*st->slots));
    memset(st->slots, 0, st->nslots * sizeof(*st->slots));
    return st;
}

void sink_stats_destroy(struct sink_stats *st)
{
    if (!st) {
        return;
    }
    free(st->slots);
    free(st->arena);
    free(st);
}

static uint64_t hash_id(const char *id, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)id[i]) * 1099511628211ull;
    }
    return h ? h : 1;
}

static void grow_set(struct sink_stats *st)
{
    size_t n = st->nslots * 2;
    struct slot *slots = xrealloc(NULL, n * sizeof(*slots));
    memset(slots, 0, n * sizeof(*slots));
    for (size_t i = 0; i < st->nslots; i++) {
        if (st->slots[i].hash) {
            struct slot *s = &slots[st->slots[i].hash & (n - 1)];
            while (s->hash) {
                s = s + 1 == slots + n ? slots : s + 1;
            }
            *s = st->slots[i];
        }
    }
    free(st->slots);
    st->slots = slots;
    st->nslots = n;
}

/* Returns 1 when id was new. */
static int set_insert(struct sink_stats *st, const char *id, size_t len)
{
    uint64_t h = hash_id(id, len);
    size_t i = h & (st->nslots - 1);

    for (; st->slots[i].hash; i = (i + 1) & (st->nslots - 1)) {
        struct slot *s = &st->slots[i];
        if (s->hash == h && s->len == len && memcmp(st->arena + s->off, id, len) == 0) {
            return 0;
        }
    }
    if (st->arena_len + len > st->arena_cap) {
        st->arena_cap = (st->arena_cap + len) * 2;
        st->arena = xrealloc(st->arena, st->arena_cap);
    }
    memcpy(st->arena + st->arena_len, id, len);
    st->slots[i] = (struct slot){h, (uint32_t)st->arena_len, (uint32_t)len};
    st->arena_len += len;
    if (++st->unique * 10 > st->nslots * 7) {
        grow_set(st);
    }
    return 1;
}

static unsigned bucket_of(uint64_t v)
{
    if (v < 2 * SUB) {
        return (unsigned)v;
    }
    unsigned shift = 63 - (unsigned)__builtin_clzll(v) - SUB_BITS;
    return SUB * (shift + 1) + (unsigned)((v >> shift) - SUB);
}

/* The highest value that falls in bucket b. */
static uint64_t bucket_top(unsigned b)
{
    if (b < 2 * SUB) {
        return b;
    }
    unsigned shift = b / SUB - 1;
    return (((uint64_t)(b % SUB + SUB) + 1) << shift) - 1;
}

void sink_stats_add(struct sink_stats *st, int64_t now_us, const char *id, size_t id_len,
                    int64_t t_us)
{
    if (st->received++ == 0) {
        st->first_us = now_us;
    }
    st->last_us = now_us;
    if (!id) {
        st->no_id++;
    } else if (!set_insert(st, id, id_len)) {
        st->duplicates++;
    }
    if (t_us >= 0) {
        /* A t from the future (another host's clock) reads as 0, not as a huge number. */
        int64_t lat = now_us > t_us ? now_us - t_us : 0;
        st->hist[bucket_of((uint64_t)lat)]++;
        st->nlat++;
        if (lat > st->max_lat) {
            st->max_lat = lat;
        }
    }
}

void sink_stats_connection(struct sink_stats *st)
{
    st->connections++;
}

void sink_stats_body(struct sink_stats *st)
{
    st->bodies++;
}

uint64_t sink_stats_unique(const struct sink_stats *st)
{
    return st->unique;
}

static uint64_t percentile(const struct sink_stats *st, double p)
{
    uint64_t rank = (uint64_t)(p * (double)st->nlat + 0.5), seen = 0;
    if (st->nlat == 0) {
        return 0;
    }
    if (rank == 0) {
        rank = 1;
    }
    for (unsigned b = 0; b < NBUCKETS; b++) {
        seen += st->hist[b];
        if (seen >= rank) {
            uint64_t top = bucket_top(b);
            return top < (uint64_t)st->max_lat ? top : (uint64_t)st->max_lat;
        }
    }
    return (uint64_t)st->max_lat;
}

int sink_stats_json(const struct sink_stats *st, char *buf, size_t size)
{
    double span_s = (double)(st->last_us - st->first_us) / 1e6;
    return snprintf(buf, size,
                    "{\"received\":%llu,\"unique\":%llu,\"duplicates\":%llu,\"no_id\":%llu,"
                    "\"connections\":%llu,\"bodies\":%llu,\"first_ms\":%.3f,\"last_ms\":%.3f,\"rate\":%.1f,"
                    "\"latency_us\":{\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"max\":%lld}}",
                    (unsigned long long)st->received, (unsigned long long)st->unique,
                    (unsigned long long)st->duplicates, (unsigned long long)st->no_id,
                    (unsigned long long)st->connections, (unsigned long long)st->bodies, (double)st->first_us / 1e3,
                    (double)st->last_us / 1e3,
                    span_s > 0 ? (double)(st->received - 1) / span_s : 0.0,
                    (unsigned long long)percentile(st, 0.50),
                    (unsigned long long)percentile(st, 0.90),
                    (unsigned long long)percentile(st, 0.99), (long long)st->max_lat);
}
