#include "symtab.h"

#include <stdlib.h>

int symtab_intern(struct symtab *t, const char *name, size_t len, uint32_t *id)
{
    uint64_t h = hash_bytes(name, len);
    struct hnode *n = hmap_get(&t->map, h, name, len);
    if (n != NULL) {
        *id = ((struct sym *)n)->id;
        return 0;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct sym **v = realloc(t->v, cap * sizeof(*v));
        if (v == NULL) {
            return VPL_ENOMEM;
        }
        t->v = v;
        t->cap = cap;
    }
    struct sym *s = arena_alloc(t->arena, sizeof(*s));
    char *key = arena_strndup(t->arena, name, len);
    if (s == NULL || key == NULL) {
        return VPL_ENOMEM;
    }
    s->node.hash = h;
    s->node.key = key;
    s->node.klen = (uint32_t)len;
    s->id = t->n;
    s->type = -1;
    s->field = 0;
    if (hmap_put(&t->map, &s->node) != 0) {
        return VPL_ENOMEM;
    }
    t->v[t->n++] = s;
    *id = s->id;
    return 0;
}

const struct sym *symtab_find(const struct symtab *t, const char *name, size_t len)
{
    return (const struct sym *)hmap_get(&t->map, hash_bytes(name, len), name, len);
}

void symtab_free(struct symtab *t)
{
    hmap_free(&t->map);
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}
