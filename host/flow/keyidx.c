#include "keyidx.h"

#include <stdlib.h>
#include <string.h>

#include "gust/err.h"

uint32_t gust_key_hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    }
    return h;
}

static const struct gust_key *key_at(const void *entries, size_t stride, size_t i)
{
    return (const struct gust_key *)(const void *)((const char *)entries + i * stride);
}

/* The slot holding key s, or the empty slot where it would go. */
static size_t *probe(const struct gust_keyidx *x, const void *entries, size_t stride, const char *s,
                     size_t len, uint32_t h)
{
    size_t mask = x->nslots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        size_t *slot = &x->slots[i];
        if (*slot == 0) {
            return slot;
        }
        const struct gust_key *k = key_at(entries, stride, *slot - 1);
        if (k->hash == h && k->len == len && memcmp(k->s, s, len) == 0) {
            return slot;
        }
    }
}

size_t gust_keyidx_find(const struct gust_keyidx *x, const void *entries, size_t stride, const char *s,
                        size_t len, uint32_t h)
{
    if (x->nslots == 0) {
        return SIZE_MAX;
    }
    size_t slot = *probe(x, entries, stride, s, len, h);
    return slot == 0 ? SIZE_MAX : slot - 1;
}

int gust_keyidx_add(struct gust_keyidx *x, const void *entries, size_t stride, size_t n, size_t i)
{
    if (2 * n >= x->nslots) {
        size_t nslots = x->nslots ? x->nslots : 64;
        while (2 * n >= nslots) {
            nslots *= 2;
        }
        size_t *slots = calloc(nslots, sizeof(*slots));
        if (slots == NULL) {
            return GUST_ENOMEM;
        }
        struct gust_keyidx bigger = {.slots = slots, .nslots = nslots};
        for (size_t k = 0; k < x->nslots; k++) {
            size_t e = x->slots[k];
            if (e != 0) {
                const struct gust_key *key = key_at(entries, stride, e - 1);
                *probe(&bigger, entries, stride, key->s, key->len, key->hash) = e;
            }
        }
        free(x->slots);
        *x = bigger;
    }
    const struct gust_key *key = key_at(entries, stride, i);
    *probe(x, entries, stride, key->s, key->len, key->hash) = i + 1;
    return 0;
}

void gust_keyidx_clear(struct gust_keyidx *x)
{
    if (x->slots != NULL) {
        memset(x->slots, 0, x->nslots * sizeof(*x->slots));
    }
}

void gust_keyidx_free(struct gust_keyidx *x)
{
    free(x->slots);
    *x = (struct gust_keyidx){0};
}
