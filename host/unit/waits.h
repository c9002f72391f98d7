/* How many deliveries of a message ended without a rejection (the far end
 * unavailable, an emit not stored), by stream sequence. JetStream counts every
 * delivery; a message is dead-lettered after max_deliver rejections, so the waits are
 * taken off. Kept in memory by the unit that saw them: after a restart, or in another
 * process of a cluster, they count from 0 again (so a message gets more attempts, never
 * fewer). Bounded: past GUST_WAITS_MAX entries, one is forgotten for each new one. */
#ifndef GUST_UNIT_WAITS_H
#define GUST_UNIT_WAITS_H

#include <stddef.h>
#include <stdint.h>

#define GUST_WAITS_MAX 65536

struct gust_waits {
    uint64_t *seq; /* 0: empty */
    uint32_t *n;
    size_t cap, count;
};

uint32_t gust_waits_get(const struct gust_waits *w, uint64_t seq);
void gust_waits_add(struct gust_waits *w, uint64_t seq); /* one more; out of memory: not counted */
void gust_waits_forget(struct gust_waits *w, uint64_t seq);
void gust_waits_free(struct gust_waits *w);

#endif
