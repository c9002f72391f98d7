#include "heap.h"

#include <stdlib.h>

#include "vpl.h"

static int less(const struct heap_item *a, const struct heap_item *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void set(struct heap *h, uint32_t i, struct heap_item *it)
{
    h->a[i] = it;
    it->idx = i;
}

static void up(struct heap *h, uint32_t i)
{
    struct heap_item *it = h->a[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!less(it, h->a[p])) {
            break;
        }
        set(h, i, h->a[p]);
        i = p;
    }
    set(h, i, it);
}

static void down(struct heap *h, uint32_t i)
{
    struct heap_item *it = h->a[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n) {
            break;
        }
        if (c + 1 < h->n && less(h->a[c + 1], h->a[c])) {
            c++;
        }
        if (!less(h->a[c], it)) {
            break;
        }
        set(h, i, h->a[c]);
        i = c;
    }
    set(h, i, it);
}

int heap_push(struct heap *h, struct heap_item *it)
{
    if (h->n == h->cap) {
        uint32_t cap = h->cap ? h->cap * 2 : 64;
        struct heap_item **a = realloc(h->a, (size_t)cap * sizeof(*a));
        if (a == NULL) {
            return VPL_ENOMEM;
        }
        h->a = a;
        h->cap = cap;
    }
    set(h, h->n++, it);
    up(h, it->idx);
    return 0;
}

void heap_remove(struct heap *h, struct heap_item *it)
{
    uint32_t i = it->idx;
    it->idx = HEAP_NONE;
    struct heap_item *last = h->a[--h->n];
    if (i == h->n) {
        return;
    }
    set(h, i, last);
    up(h, i);
    down(h, last->idx);
}

void heap_fix(struct heap *h, struct heap_item *it)
{
    up(h, it->idx);
    down(h, it->idx);
}

void heap_free(struct heap *h)
{
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}
