#include "fold.h"

#include <string.h>

#include "lexer.h"

/* Whether e reads a value that is the same every time it is read within one evaluation
 * (a field of the event or of a capture, or a member of one), so reading it once for
 * several comparisons changes nothing. */
static int is_subject(const struct expr *e)
{
    switch (e->kind) {
    case X_FIELD:
    case X_ALIAS_FIELD:
        return 1;
    case X_MEMBER:
        return is_subject(e->kid[0]);
    default:
        return 0;
    }
}

/* Whether two subjects read the same value. */
static int same_subject(const struct expr *a, const struct expr *b)
{
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case X_FIELD:
        return a->id == b->id;
    case X_ALIAS_FIELD:
        return a->id == b->id && a->slot == b->slot;
    case X_MEMBER:
        return a->nlen == b->nlen && memcmp(a->name, b->name, a->nlen) == 0 &&
               same_subject(a->kid[0], b->kid[0]);
    default:
        return 0;
    }
}

/* Whether x is `if S == literal then ... else ...` with S the same as subject (or any
 * subject when subject is NULL). */
static int is_arm(const struct expr *x, const struct expr *subject)
{
    if (x->kind != X_IF)
        return 0;
    const struct expr *c = x->kid[0];
    if (c->kind != X_BINARY || c->op != T_EQ || c->kid[1]->kind != X_LIT || !is_subject(c->kid[0]))
        return 0;
    return subject == NULL || same_subject(c->kid[0], subject);
}

/* x, an arm, with the arms in its else branches on the same subject: an X_CASE node
 * [S, l1, r1, ..., lk, rk, else] when k >= 2. */
static int fold_chain(struct expr *x, struct arena *a)
{
    const struct expr *s = x->kid[0]->kid[0];
    uint32_t k = 0;
    for (const struct expr *y = x; is_arm(y, s); y = y->kid[2])
        k++;
    if (k < 2 || 2 * k + 2 > UINT16_MAX)
        return 0;
    struct expr **kid = arena_alloc(a, (2 * k + 2) * sizeof(*kid));
    if (kid == NULL)
        return VPL_ENOMEM;
    kid[0] = (struct expr *)s;
    struct expr *y = x;
    for (uint32_t i = 0; i < k; i++, y = y->kid[2]) {
        kid[1 + 2 * i] = y->kid[0]->kid[1];
        kid[2 + 2 * i] = y->kid[1];
    }
    kid[2 * k + 1] = y;
    x->kind = X_CASE;
    x->n = (uint16_t)(2 * k + 2);
    x->kid = kid;
    return 0;
}

static int fold_expr(struct expr *e, struct arena *a)
{
    if (e == NULL)
        return 0;
    if (is_arm(e, NULL) && fold_chain(e, a) != 0)
        return VPL_ENOMEM;
    for (uint16_t i = 0; i < e->n; i++)
        if (fold_expr(e->kid[i], a) != 0)
            return VPL_ENOMEM;
    return 0;
}

static int fold_list(struct expr **e, uint32_t n, struct arena *a)
{
    for (uint32_t i = 0; i < n; i++)
        if (fold_expr(e[i], a) != 0)
            return VPL_ENOMEM;
    return 0;
}

static int fold_negs(struct neg *g, uint32_t n, struct arena *a)
{
    for (uint32_t i = 0; i < n; i++)
        if (fold_expr(g[i].pred, a) != 0)
            return VPL_ENOMEM;
    return 0;
}

static int fold_stages(struct stage *st, uint32_t n, struct arena *a)
{
    for (uint32_t i = 0; i < n; i++)
        if (fold_list(st[i].e, st[i].n, a) != 0)
            return VPL_ENOMEM;
    return 0;
}

int fold_program(struct vpl_program *p)
{
    struct arena *a = &p->arena;
    for (uint32_t i = 0; i < p->nstreams; i++) {
        struct stream *s = &p->streams[i];
        int rc = fold_stages(s->pre, s->npre, a) | fold_stages(s->post, s->npost, a);
        const struct pattern *pat = s->pat;
        if (pat != NULL) {
            for (uint32_t j = 0; j < pat->nsteps; j++)
                rc |= fold_expr(pat->steps[j].pred, a) | fold_negs(pat->steps[j].negs, pat->steps[j].nnegs, a);
            rc |= fold_negs(pat->absent, pat->nabsent, a) | fold_negs(pat->cancel, pat->ncancel, a) |
                  fold_list(pat->first_where, pat->nfirst_where, a);
        }
        if (rc != 0)
            return VPL_ENOMEM;
    }
    return 0;
}
