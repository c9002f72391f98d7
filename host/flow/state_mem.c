/* The in-memory state store (state.h): a map of key -> value, revision, expiry, with
 * the committer's contract applied in full (all or nothing per batch). */
#include <stdlib.h>
#include <string.h>

#include "../common/mem.h"
#include "keyidx.h"
#include "state.h"

struct mem_entry {
    struct gust_key key; /* first, for the index */
    char *json;          /* NULL: deleted */
    size_t len;
    uint64_t revision;
    int64_t expires_ms;
};

struct gust_state_mem {
    struct mem_entry *v; /* in the order keys were first written */
    size_t n, cap;
    struct gust_keyidx index;
    uint64_t last_revision;
};

int gust_state_mem_create(struct gust_state_mem **out)
{
    *out = calloc(1, sizeof(**out));
    return *out != NULL ? 0 : GUST_ENOMEM;
}

void gust_state_mem_destroy(struct gust_state_mem *m)
{
    if (m == NULL) {
        return;
    }
    for (size_t i = 0; i < m->n; i++) {
        free((char *)m->v[i].key.s);
        free(m->v[i].json);
    }
    free(m->v);
    gust_keyidx_free(&m->index);
    free(m);
}

static struct mem_entry *find(const struct gust_state_mem *m, const char *key, size_t len)
{
    size_t i = gust_keyidx_find(&m->index, m->v, sizeof(*m->v), key, len, gust_key_hash(key, len));
    return i == SIZE_MAX ? NULL : &m->v[i];
}

static int mem_read(void *ud, const char *key, size_t key_len, int64_t now_ms, struct gust_state_value *out,
                    struct gust_err *err)
{
    (void)err;
    const struct mem_entry *e = find(ud, key, key_len);
    *out = (struct gust_state_value){0};
    if (e == NULL) {
        return 0;
    }
    out->revision = e->revision;
    int expired = e->expires_ms != 0 && now_ms != 0 && now_ms >= e->expires_ms;
    if (e->json != NULL && !expired) {
        out->json = malloc(e->len + 1);
        if (out->json == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        memcpy(out->json, e->json, e->len + 1);
        out->len = e->len;
        out->expires_ms = e->expires_ms;
    }
    return 0;
}

struct gust_state_store gust_state_mem_store(struct gust_state_mem *m)
{
    return (struct gust_state_store){.read = mem_read, .ud = m};
}

/* The entry of key, made (deleted, revision 0) when there is none. */
static struct mem_entry *get_or_add(struct gust_state_mem *m, const char *key, size_t len)
{
    struct mem_entry *e = find(m, key, len);
    if (e != NULL) {
        return e;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct mem_entry *v = realloc(m->v, cap * sizeof(*v));
        if (v == NULL) {
            return NULL;
        }
        m->v = v;
        m->cap = cap;
    }
    char *copy = gust_memdup(key, len);
    if (copy == NULL) {
        return NULL;
    }
    m->v[m->n] = (struct mem_entry){.key = {.s = copy, .len = len, .hash = gust_key_hash(key, len)}};
    if (gust_keyidx_add(&m->index, m->v, sizeof(*m->v), m->n + 1, m->n) != 0) {
        free(copy);
        return NULL;
    }
    return &m->v[m->n++];
}

int gust_state_mem_put(struct gust_state_mem *m, const char *key, size_t key_len, const char *json,
                       size_t len, int64_t expires_ms)
{
    char *copy = NULL;
    if (json != NULL && (copy = gust_memdup(json, len)) == NULL) {
        return GUST_ENOMEM;
    }
    struct mem_entry *e = get_or_add(m, key, key_len);
    if (e == NULL) {
        free(copy);
        return GUST_ENOMEM;
    }
    free(e->json);
    e->json = copy;
    e->len = len;
    e->expires_ms = json != NULL ? expires_ms : 0;
    e->revision = ++m->last_revision;
    return 0;
}

int gust_state_mem_commit(struct gust_state_mem *m, const struct gust_state_write *writes, size_t n,
                          unsigned char *conflict)
{
    int conflicts = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gust_state_write *w = &writes[i];
        const struct mem_entry *e = find(m, w->key, w->key_len);
        conflict[i] = w->has_revision && (e != NULL ? e->revision : 0) != w->revision;
        conflicts += conflict[i];
    }
    if (conflicts > 0) {
        return conflicts;
    }
    /* Allocate everything first, so that running out of memory writes nothing (an
     * entry made for nothing is a deleted key of revision 0, as if absent). */
    char **copies = calloc(n + 1, sizeof(*copies));
    int rc = copies != NULL ? 0 : GUST_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct gust_state_write *w = &writes[i];
        if ((w->json != NULL && (copies[i] = gust_memdup(w->json, w->len)) == NULL) ||
            get_or_add(m, w->key, w->key_len) == NULL) {
            rc = GUST_ENOMEM;
        }
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct gust_state_write *w = &writes[i];
        struct mem_entry *e = find(m, w->key, w->key_len);
        free(e->json);
        e->json = copies[i];
        copies[i] = NULL;
        e->len = w->len;
        e->expires_ms = w->json != NULL ? w->expires_ms : 0;
        e->revision = ++m->last_revision;
    }
    for (size_t i = 0; copies != NULL && i < n; i++) {
        free(copies[i]);
    }
    free(copies);
    return rc;
}

void gust_state_mem_each(const struct gust_state_mem *m, int64_t now_ms,
                         void (*fn)(void *ud, const char *key, size_t key_len, const char *json, size_t len,
                                    uint64_t revision),
                         void *ud)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct mem_entry *e = &m->v[i];
        int expired = e->expires_ms != 0 && now_ms != 0 && now_ms >= e->expires_ms;
        if (e->json != NULL && !expired) {
            fn(ud, e->key.s, e->key.len, e->json, e->len, e->revision);
        }
    }
}
