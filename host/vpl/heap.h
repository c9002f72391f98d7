/* Binary min-heap of deadlines. Items embed a struct heap_item that records their
 * position, so a run or window can be removed or re-keyed in O(log n) when it
 * completes, is cancelled or moves its deadline. Ties break on seq (creation order),
 * which is the order alerts of one event must come out in. */
#ifndef VPL_HEAP_H
#define VPL_HEAP_H

#include <stdint.h>

#define HEAP_NONE UINT32_MAX

struct heap_item {
    int64_t due;
    uint64_t seq;
    uint32_t idx; /* HEAP_NONE when not in a heap */
    uint32_t aux; /* the owner's: fills what would be padding (a run keeps its list here) */
};

struct heap {
    struct heap_item **a;
    uint32_t n, cap;
};

int heap_push(struct heap *h, struct heap_item *it); /* 0 or VPL_ENOMEM */
void heap_remove(struct heap *h, struct heap_item *it);
void heap_fix(struct heap *h, struct heap_item *it); /* after changing it->due */
static inline struct heap_item *heap_top(const struct heap *h)
{
    return h->n ? h->a[0] : 0;
}
void heap_free(struct heap *h);

#endif
