/* Open-addressing hash map (linear probing, backward-shift deletion) from byte
 * strings to items. Items embed a struct hnode holding their key, so the map stores
 * one pointer per slot and a lookup compares hashes before bytes. */
#ifndef VPL_HMAP_H
#define VPL_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hnode {
    uint64_t hash;
    const char *key; /* owned by the item */
    uint32_t klen;
};

struct hmap {
    struct hnode **slot;
    size_t cap; /* power of two, or 0 */
    size_t count;
};

struct hnode *hmap_get(const struct hmap *m, uint64_t hash, const char *key, size_t len);
int hmap_put(struct hmap *m, struct hnode *n); /* n's key must be absent; 0 or VPL_ENOMEM */
void hmap_del(struct hmap *m, struct hnode *n); /* n must be in the map */
void hmap_free(struct hmap *m);                 /* frees the table, not the items */

#endif
