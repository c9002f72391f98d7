/* Interned names of a program: event types, stream names and field names share one
 * table so an input key or event_type is looked up once and then compared as an id. */
#ifndef VPL_SYMTAB_H
#define VPL_SYMTAB_H

#include <stdint.h>

#include "hmap.h"
#include "util.h"

#define SYM_NONE UINT32_MAX

struct sym {
    struct hnode node; /* key = the name, in the program arena */
    uint32_t id;
    int32_t type;  /* routing type index, or -1 when no stream reads this name */
    uint8_t field; /* some expression reads a field of this name: the decoder keeps it */
};

struct symtab {
    struct hmap map;
    struct sym **v; /* by id */
    uint32_t n, cap;
    struct arena *arena; /* borrowed: the program's */
};

/* The id of name[0..len), created if new. 0 or VPL_ENOMEM. */
int symtab_intern(struct symtab *t, const char *name, size_t len, uint32_t *id);
const struct sym *symtab_find(const struct symtab *t, const char *name, size_t len);
void symtab_free(struct symtab *t);

#endif
