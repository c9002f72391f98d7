#include "fold.h"

#include <string.h>

#include "builtins.h"
#include "eval.h"
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
    if (a->kind != b->kind) {
        return 0;
    }
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
    if (x->kind != X_IF) {
        return 0;
    }
    const struct expr *c = x->kid[0];
    if (c->kind != X_BINARY || c->op != T_EQ || c->kid[1]->kind != X_LIT || !is_subject(c->kid[0])) {
        return 0;
    }
    return subject == NULL || same_subject(c->kid[0], subject);
}

/* x, an arm, with the arms in its else branches on the same subject: an X_CASE node
 * [S, l1, r1, ..., lk, rk, else] when k >= 2. */
static int fold_chain(struct expr *x, struct arena *a)
{
    const struct expr *s = x->kid[0]->kid[0];
    uint32_t k = 0;
    for (const struct expr *y = x; is_arm(y, s); y = y->kid[2]) {
        k++;
    }
    if (k < 2 || 2 * k + 2 > UINT16_MAX) {
        return 0;
    }
    struct expr **kid = arena_alloc(a, (2 * k + 2) * sizeof(*kid));
    if (kid == NULL) {
        return VPL_ENOMEM;
    }
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

/* ---- fused calls ---- */

/* split(s, sep).first() / .last() (first(split(s, sep)) as checked) becomes one call of
 * split.first / split.last over s and sep: the orders program's order reference built
 * an array to keep its last part. */
static void fuse_split_end(struct expr *e)
{
    if (e->kind != X_FUNC || e->n != 1 || e->kid[0]->kind != X_FUNC) {
        return;
    }
    const struct expr *s = e->kid[0];
    int first = (int)e->id == builtin_find("first", 5), last = (int)e->id == builtin_find("last", 4);
    if (!(first || last) || (int)s->id != builtin_find("split", 5) || s->n != 2) {
        return;
    }
    e->id = (uint32_t)(first ? builtin_find("split.first", 11) : builtin_find("split.last", 10));
    e->n = 2;
    e->kid = s->kid;
}

static int fold_expr(struct expr *e, struct arena *a)
{
    if (e == NULL) {
        return 0;
    }
    if (is_arm(e, NULL) && fold_chain(e, a) != 0) {
        return VPL_ENOMEM;
    }
    fuse_split_end(e);
    for (uint16_t i = 0; i < e->n; i++) {
        if (fold_expr(e->kid[i], a) != 0) {
            return VPL_ENOMEM;
        }
    }
    return 0;
}

/* ---- shared subexpressions ---- */

/* Whether a and b are the same literal: the same type and value, bit for bit (1 and 1.0
 * are not: they print differently). */
static int same_lit(const struct vval *a, const struct vval *b)
{
    if (a->t != b->t || a->n != b->n) {
        return 0;
    }
    if (a->t == V_STR) {
        return a->n == 0 || memcmp(a->u.s, b->u.s, a->n) == 0;
    }
    return a->t == V_NULL || a->t == V_MISSING || memcmp(&a->u, &b->u, sizeof(a->u)) == 0;
}

/* Whether e is a call (of builtins, all of them pure) over fields, members, literals
 * and other such calls: what a context computes the same every time. A builtin that is
 * not pure (a clock, a random number) must be refused here. */
static int pure_call(const struct expr *e)
{
    if (e->kind != X_FUNC) {
        return 0;
    }
    for (uint16_t i = 0; i < e->n; i++) {
        const struct expr *k = e->kid[i];
        if (k->kind != X_LIT && !is_subject(k) && !pure_call(k)) {
            return 0;
        }
    }
    return 1;
}

/* Whether a and b, pure calls or their arguments, compute the same value. */
static int same_value_expr(const struct expr *a, const struct expr *b)
{
    if (a->kind != b->kind) {
        return 0;
    }
    if (a->kind == X_LIT) {
        return same_lit(&a->lit, &b->lit);
    }
    if (a->kind != X_FUNC) {
        return same_subject(a, b);
    }
    if (a->id != b->id || a->n != b->n) {
        return 0;
    }
    for (uint16_t i = 0; i < a->n; i++) {
        if (!same_value_expr(a->kid[i], b->kid[i])) {
            return 0;
        }
    }
    return 1;
}

#define MAX_CALLS 64 /* pure calls compared per group of stages */

struct calls {
    struct expr *v[MAX_CALLS];
    uint32_t n;
};

static void collect_calls(struct expr *e, struct calls *cs)
{
    if (e == NULL || cs->n == MAX_CALLS) {
        return;
    }
    if (pure_call(e)) {
        cs->v[cs->n++] = e;
    }
    for (uint16_t i = 0; i < e->n; i++) {
        collect_calls(e->kid[i], cs);
    }
}

/* e becomes an X_MEMO node in slot over a copy of itself (once: a node reached twice
 * is one node). */
static int memoize(struct expr *e, int32_t slot, struct arena *a)
{
    if (e->kind == X_MEMO) {
        return 0;
    }
    struct expr *copy = arena_alloc(a, sizeof(*copy));
    struct expr **kid = arena_alloc(a, sizeof(*kid));
    if (copy == NULL || kid == NULL) {
        return VPL_ENOMEM;
    }
    *copy = *e;
    kid[0] = copy;
    e->kind = X_MEMO;
    e->n = 1;
    e->kid = kid;
    e->slot = slot;
    return 0;
}

/* Stages st[0..n) read one event through one context, up to and including the first
 * projection (run_stages starts a new context with the projected event): a pure call
 * written in more than one place there (to_float(total_price) in a .where and in the
 * .emit after it) is computed once. *slots: memo slots used so far. */
static int share_calls(struct stage *st, uint32_t n, uint32_t *slots, struct arena *a)
{
    for (uint32_t g = 0; g < n;) {
        struct calls cs = {.n = 0};
        uint32_t end = g;
        while (end < n && st[end].kind != SG_PROJECT) {
            end++;
        }
        end = end < n ? end + 1 : n; /* the projection closes the group */
        for (uint32_t i = g; i < end; i++) {
            for (uint32_t j = 0; j < st[i].n; j++) {
                collect_calls(st[i].e[j], &cs);
            }
        }
        int32_t slot_of[MAX_CALLS];
        for (uint32_t i = 0; i < cs.n; i++) {
            slot_of[i] = -1;
            for (uint32_t j = 0; j < i && slot_of[i] < 0; j++) {
                if (same_value_expr(cs.v[i], cs.v[j])) {
                    if (slot_of[j] < 0 && *slots < MEMO_SLOTS) {
                        slot_of[j] = (int32_t)(*slots)++;
                    }
                    slot_of[i] = slot_of[j];
                }
            }
        }
        /* Copies are made after every comparison: memoize changes the nodes compared. */
        for (uint32_t i = 0; i < cs.n; i++) {
            if (slot_of[i] >= 0 && memoize(cs.v[i], slot_of[i], a) != 0) {
                return VPL_ENOMEM;
            }
        }
        g = end;
    }
    return 0;
}

static int fold_list(struct expr **e, uint32_t n, struct arena *a)
{
    for (uint32_t i = 0; i < n; i++) {
        if (fold_expr(e[i], a) != 0) {
            return VPL_ENOMEM;
        }
    }
    return 0;
}

static int fold_negs(struct neg *g, uint32_t n, struct arena *a)
{
    for (uint32_t i = 0; i < n; i++) {
        if (fold_expr(g[i].pred, a) != 0) {
            return VPL_ENOMEM;
        }
    }
    return 0;
}

static int fold_stages(struct stage *st, uint32_t n, struct arena *a)
{
    for (uint32_t i = 0; i < n; i++) {
        if (fold_list(st[i].e, st[i].n, a) != 0) {
            return VPL_ENOMEM;
        }
    }
    return 0;
}

int fold_program(struct vpl_program *p)
{
    struct arena *a = &p->arena;
    uint32_t slots = 0; /* slots are only ever live within one context: shared by all */
    for (uint32_t i = 0; i < p->nstreams; i++) {
        struct stream *s = &p->streams[i];
        int rc = fold_stages(s->pre, s->npre, a) | fold_stages(s->post, s->npost, a);
        /* Pattern streams evaluate through the captures of a run; only the stages of
         * plain streams before a window share an event's context. */
        if (s->pat == NULL) {
            rc |= share_calls(s->pre, s->npre, &slots, a);
        }
        s->idle = s->pat == NULL && s->win == NULL && s->npre == 0 && !s->emits && p->routes[s->type].n == 0;
        const struct pattern *pat = s->pat;
        if (pat != NULL) {
            for (uint32_t j = 0; j < pat->nsteps; j++) {
                rc |=
                    fold_expr(pat->steps[j].pred, a) | fold_negs(pat->steps[j].negs, pat->steps[j].nnegs, a);
            }
            rc |= fold_negs(pat->absent, pat->nabsent, a) | fold_negs(pat->cancel, pat->ncancel, a) |
                  fold_list(pat->first_where, pat->nfirst_where, a);
        }
        if (rc != 0) {
            return VPL_ENOMEM;
        }
    }
    return 0;
}
