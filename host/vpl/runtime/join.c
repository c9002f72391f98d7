/* The hash join's index (join.h). */
#include <stdlib.h>
#include <string.h>

#include "join.h"

/* The held events of one source with one key, oldest first through their slots. */
struct jgroup {
    struct hnode node;
    uint64_t first, last; /* numbers of the oldest and the newest */
    uint32_t count, size;
    int side; /* the map it is in */
};

static int put_tag(struct buf *b, char tag, const void *p, size_t n)
{
    return buf_putc(b, tag) != 0 || buf_put(b, p, n) != 0 ? -1 : 0;
}

int join_key(struct vpl_engine *e, const struct window *win, const struct vpl_event *ev, int side,
             uint64_t *hash)
{
    union capture caps[2];
    caps[0].ev = caps[1].ev = (struct vpl_event *)ev;
    struct ectx c;
    rt_ectx(e, &c, ev, ev->time);
    c.caps = caps;
    c.pat = win->layout;
    c.memo = NULL; /* the key reads one source only: no memo of a pair's */
    struct vval v = eval(win->key[side], &c);
    struct buf *b = &e->jkey;
    b->len = 0;
    int rc = 0;
    switch (v.t) {
    case V_MISSING:
        return 0;
    case V_NULL:
        rc = buf_putc(b, 'n');
        break;
    case V_BOOL:
        rc = buf_putc(b, v.u.i ? 't' : 'f');
        break;
    case V_INT:
    case V_FLOAT: {
        double d = v_as_f(&v);
        d = d == 0 ? 0 : d; /* -0.0 == 0 */
        rc = put_tag(b, 'd', &d, sizeof(d));
        break;
    }
    case V_STR:
        rc = put_tag(b, 's', v.u.s, v.n);
        break;
    default:
        rc = buf_putc(b, 'c'); /* arrays and maps: one group, .on() decides */
        break;
    }
    if (rc != 0 || *c.oom) {
        e->oom = 1;
        return -1;
    }
    *hash = hash_bytes(b->p, b->len);
    return 1;
}

struct jgroup *join_find(struct jindex *jx, int side, uint64_t h, const struct vpl_engine *e)
{
    return (struct jgroup *)hmap_get(&jx->map[side], h, e->jkey.p, e->jkey.len);
}

struct jgroup *join_make(struct vpl_engine *e, struct jindex *jx, int side, uint64_t h)
{
    struct jgroup *g = join_find(jx, side, h, e);
    if (g != NULL) {
        return g;
    }
    size_t size = sizeof(*g) + e->jkey.len;
    if ((g = rt_alloc(e, size)) == NULL) {
        return NULL;
    }
    memset(g, 0, sizeof(*g));
    memcpy(g + 1, e->jkey.p, e->jkey.len);
    g->node.hash = h;
    g->node.key = (const char *)(g + 1);
    g->node.klen = (uint32_t)e->jkey.len;
    g->size = (uint32_t)size;
    g->side = side;
    if (hmap_put(&jx->map[side], &g->node) != 0) {
        rt_free(e, g, size);
        e->oom = 1;
        return NULL;
    }
    return g;
}

uint32_t join_count(const struct jgroup *g)
{
    return g->count;
}

uint64_t join_first(const struct jgroup *g)
{
    return g->first;
}

uint64_t join_next(const struct jindex *jx, uint64_t n)
{
    return n + jx->slot[n - jx->base].next;
}

void join_link(struct jindex *jx, uint32_t i, struct jgroup *g)
{
    uint64_t n = jx->base + i;
    jx->slot[i].g = g;
    jx->slot[i].next = 0;
    if (g == NULL) {
        return;
    }
    if (g->count++ == 0) {
        g->first = n;
    } else {
        jx->slot[g->last - jx->base].next = (uint32_t)(n - g->last);
    }
    g->last = n;
}

static void group_free(struct vpl_engine *e, struct jindex *jx, struct jgroup *g)
{
    hmap_del(&jx->map[g->side], &g->node);
    rt_free(e, g, g->size);
}

void join_drop_empty(struct vpl_engine *e, struct jindex *jx, struct jgroup *g)
{
    if (g != NULL && g->count == 0) {
        group_free(e, jx, g);
    }
}

void join_unlink_oldest(struct vpl_engine *e, struct jindex *jx, uint32_t i)
{
    struct jgroup *g = jx->slot[i].g;
    if (g == NULL) {
        return;
    }
    if (--g->count == 0) {
        group_free(e, jx, g);
    } else {
        g->first += jx->slot[i].next;
    }
}

void join_slide(struct jindex *jx, uint32_t head, uint32_t n)
{
    memmove(jx->slot, jx->slot + head, n * sizeof(*jx->slot));
    jx->base += head;
}

int join_reserve(struct vpl_engine *e, struct jindex *jx, uint32_t cap)
{
    if (cap <= jx->cap) {
        return 0;
    }
    struct jslot *s = rt_realloc(e, jx->slot, jx->cap * sizeof(*s), cap * sizeof(*s));
    if (s == NULL) {
        return -1;
    }
    jx->slot = s;
    jx->cap = cap;
    return 0;
}

struct jindex *join_new(struct vpl_engine *e)
{
    struct jindex *jx = rt_alloc(e, sizeof(*jx));
    if (jx != NULL) {
        memset(jx, 0, sizeof(*jx));
    }
    return jx;
}

void join_free(struct vpl_engine *e, struct jindex *jx)
{
    if (jx == NULL) {
        return;
    }
    for (int side = 0; side < 2; side++) {
        struct hmap *m = &jx->map[side];
        for (size_t i = 0; i < m->cap; i++) {
            struct jgroup *g = (struct jgroup *)m->slot[i];
            if (g != NULL) {
                rt_free(e, g, g->size);
            }
        }
        hmap_free(m);
    }
    rt_free(e, jx->slot, jx->cap * sizeof(*jx->slot));
    rt_free(e, jx, sizeof(*jx));
}
