/* A hash index over an array of entries keyed by byte strings: the state staging,
 * the in-memory store and the lookup tables each keep their entries in an array whose
 * elements begin with a struct gust_key, and find them through one of these. */
#ifndef GUST_FLOW_KEYIDX_H
#define GUST_FLOW_KEYIDX_H

#include <stddef.h>
#include <stdint.h>

struct gust_key {
    const char *s; /* len bytes, owned by the entry */
    size_t len;
    uint32_t hash; /* gust_key_hash(s, len) */
};

/* Open addressing, kept at most half full: slots hold entry index + 1, 0 is empty. */
struct gust_keyidx {
    size_t *slots;
    size_t nslots; /* 0 or a power of 2 */
};

uint32_t gust_key_hash(const char *s, size_t len);
/* The index of the entry of key s[0..len) (hash h) among entries (elements of
 * `stride` bytes), or SIZE_MAX. */
size_t gust_keyidx_find(const struct gust_keyidx *x, const void *entries, size_t stride, const char *s,
                        size_t len, uint32_t h);
/* Indexes entry i (its key not in the index yet), where n entries will then be
 * indexed. Returns 0 or GUST_ENOMEM (the index unchanged). */
int gust_keyidx_add(struct gust_keyidx *x, const void *entries, size_t stride, size_t n, size_t i);
/* Empties the index, keeping its memory. */
void gust_keyidx_clear(struct gust_keyidx *x);
void gust_keyidx_free(struct gust_keyidx *x);

#endif
