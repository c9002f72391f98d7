#include "hmap.h"

#include <stdlib.h>
#include <string.h>

#include "vpl.h"

struct hnode *hmap_get(const struct hmap *m, uint64_t hash, const char *key, size_t len)
{
    if (m->cap == 0) {
        return NULL;
    }
    size_t mask = m->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        struct hnode *n = m->slot[i];
        if (n == NULL) {
            return NULL;
        }
        if (n->hash == hash && n->klen == len && memcmp(n->key, key, len) == 0) {
            return n;
        }
    }
}

static void place(struct hnode **slot, size_t mask, struct hnode *n)
{
    size_t i = n->hash & mask;
    while (slot[i] != NULL) {
        i = (i + 1) & mask;
    }
    slot[i] = n;
}

int hmap_put(struct hmap *m, struct hnode *n)
{
    if ((m->count + 1) * 4 > m->cap * 3) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct hnode **slot = calloc(cap, sizeof(*slot));
        if (slot == NULL) {
            return VPL_ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (m->slot[i] != NULL) {
                place(slot, cap - 1, m->slot[i]);
            }
        }
        free(m->slot);
        m->slot = slot;
        m->cap = cap;
    }
    place(m->slot, m->cap - 1, n);
    m->count++;
    return 0;
}

void hmap_del(struct hmap *m, struct hnode *n)
{
    size_t mask = m->cap - 1;
    size_t i = n->hash & mask;
    while (m->slot[i] != n) {
        i = (i + 1) & mask;
    }
    /* Backward shift: pull later entries of the probe run into the hole so lookups
     * never need tombstones. */
    for (size_t j = (i + 1) & mask; m->slot[j] != NULL; j = (j + 1) & mask) {
        size_t home = m->slot[j]->hash & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->slot[i] = m->slot[j];
            i = j;
        }
    }
    m->slot[i] = NULL;
    m->count--;
}

void hmap_free(struct hmap *m)
{
    free(m->slot);
    m->slot = NULL;
    m->cap = m->count = 0;
}
