/* The table of a sequence's partitions by key text: open addressing, linear probing,
 * backward-shift deletion, like hmap, but kept apart from it because partitions are
 * the items there can be a million of (one per host, user, ...). An item stores
 * neither its hash nor a pointer to its key, which hmap's struct hnode costs (24
 * bytes an item): it begins with the key's length (struct pkey) and holds the key's
 * bytes `key_off` bytes in, the same offset for every item of a table. The table
 * keeps 32 bits of each item's hash beside its slot (4 bytes a slot instead of 8 an
 * item in the item), so a probe compares them before it reads the item, and growing
 * the table or shifting items after a deletion needs no key hashed again. */
#ifndef VPL_PTAB_H
#define VPL_PTAB_H

#include <stddef.h>
#include <stdint.h>

struct pkey {
    uint32_t klen; /* the key's bytes are at (char *)item + key_off */
};

struct ptab {
    struct pkey **slot;
    uint32_t *hash; /* of slot[i]'s key, low 32 bits */
    size_t cap; /* power of two, or 0 */
    size_t count;
    size_t key_off;
};

void ptab_init(struct ptab *t, size_t key_off);
static inline const char *ptab_key(const struct ptab *t, const struct pkey *it)
{
    return (const char *)it + t->key_off;
}
/* `hash` is hash_bytes(key, len). */
struct pkey *ptab_get(const struct ptab *t, uint64_t hash, const char *key, size_t len);
int ptab_put(struct ptab *t, struct pkey *it, uint64_t hash); /* key absent; 0 or VPL_ENOMEM */
void ptab_del(struct ptab *t, struct pkey *it);                /* it must be in the table */
void ptab_free(struct ptab *t); /* frees the table, not the items */

#endif
