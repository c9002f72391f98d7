#include "ptab.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "vpl.h"

void ptab_init(struct ptab *t, size_t key_off)
{
    memset(t, 0, sizeof(*t));
    t->key_off = key_off;
}

static size_t home(const struct ptab *t, const struct pkey *it)
{
    return hash_bytes(ptab_key(t, it), it->klen) & (t->cap - 1);
}

struct pkey *ptab_get(const struct ptab *t, uint64_t hash, const char *key, size_t len)
{
    if (t->cap == 0)
        return NULL;
    size_t mask = t->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        struct pkey *it = t->slot[i];
        if (it == NULL)
            return NULL;
        if (it->klen == len && memcmp(ptab_key(t, it), key, len) == 0)
            return it;
    }
}

static void place(struct ptab *t, size_t i, struct pkey *it)
{
    size_t mask = t->cap - 1;
    while (t->slot[i] != NULL)
        i = (i + 1) & mask;
    t->slot[i] = it;
}

static int grow(struct ptab *t)
{
    struct ptab bigger = *t;
    bigger.cap = t->cap ? t->cap * 2 : 16;
    bigger.slot = calloc(bigger.cap, sizeof(*bigger.slot));
    if (bigger.slot == NULL)
        return VPL_ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i] != NULL)
            place(&bigger, home(&bigger, t->slot[i]), t->slot[i]);
    free(t->slot);
    *t = bigger;
    return 0;
}

int ptab_put(struct ptab *t, struct pkey *it, uint64_t hash)
{
    if ((t->count + 1) * 4 > t->cap * 3 && grow(t) != 0)
        return VPL_ENOMEM;
    place(t, hash & (t->cap - 1), it);
    t->count++;
    return 0;
}

void ptab_del(struct ptab *t, struct pkey *it)
{
    size_t mask = t->cap - 1;
    size_t i = home(t, it);
    while (t->slot[i] != it)
        i = (i + 1) & mask;
    /* Backward shift: pull later items of the probe run into the hole so lookups
     * never need tombstones. */
    for (size_t j = (i + 1) & mask; t->slot[j] != NULL; j = (j + 1) & mask) {
        size_t h = home(t, t->slot[j]);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            t->slot[i] = t->slot[j];
            i = j;
        }
    }
    t->slot[i] = NULL;
    t->count--;
}

void ptab_free(struct ptab *t)
{
    free(t->slot);
    t->slot = NULL;
    t->cap = t->count = 0;
}
