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

struct pkey *ptab_get(const struct ptab *t, uint64_t hash, const char *key, size_t len)
{
    if (t->cap == 0) {
        return NULL;
    }
    size_t mask = t->cap - 1;
    for (size_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
        struct pkey *it = t->slot[i];
        if (it == NULL) {
            return NULL;
        }
        if (t->hash[i] == (uint32_t)hash && it->klen == len && memcmp(ptab_key(t, it), key, len) == 0) {
            return it;
        }
    }
}

static void place(struct ptab *t, struct pkey *it, uint32_t hash)
{
    size_t mask = t->cap - 1;
    size_t i = hash & mask;
    while (t->slot[i] != NULL) {
        i = (i + 1) & mask;
    }
    t->slot[i] = it;
    t->hash[i] = hash;
}

/* One block: the slots, then their hashes. */
static int grow(struct ptab *t)
{
    struct ptab bigger = *t;
    bigger.cap = t->cap ? t->cap * 2 : 16;
    bigger.slot = calloc(bigger.cap, sizeof(*bigger.slot) + sizeof(*bigger.hash));
    if (bigger.slot == NULL) {
        return VPL_ENOMEM;
    }
    bigger.hash = (uint32_t *)(bigger.slot + bigger.cap);
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slot[i] != NULL) {
            place(&bigger, t->slot[i], t->hash[i]);
        }
    }
    free(t->slot);
    *t = bigger;
    return 0;
}

int ptab_put(struct ptab *t, struct pkey *it, uint64_t hash)
{
    if ((t->count + 1) * 4 > t->cap * 3 && grow(t) != 0) {
        return VPL_ENOMEM;
    }
    place(t, it, (uint32_t)hash);
    t->count++;
    return 0;
}

void ptab_del(struct ptab *t, struct pkey *it)
{
    size_t mask = t->cap - 1;
    size_t i = (uint32_t)hash_bytes(ptab_key(t, it), it->klen) & mask; /* its home */
    while (t->slot[i] != it) {
        i = (i + 1) & mask;
    }
    /* Backward shift: pull later items of the probe run into the hole so lookups
     * never need tombstones. */
    for (size_t j = (i + 1) & mask; t->slot[j] != NULL; j = (j + 1) & mask) {
        size_t h = t->hash[j] & mask;
        if (((j - h) & mask) >= ((j - i) & mask)) {
            t->slot[i] = t->slot[j];
            t->hash[i] = t->hash[j];
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
    t->hash = NULL;
    t->cap = t->count = 0;
}
