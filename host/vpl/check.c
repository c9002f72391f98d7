#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "eval.h"
#include "parser.h"

static int err_at(struct checker *ck, const struct expr *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int err_at(struct checker *ck, const struct expr *e, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return vpl_err_at(ck->err, VPL_ESEMANTIC, e->line, e->col, "%s", msg);
}

static int nomem(struct checker *ck)
{
    return vpl_err_at(ck->err, VPL_ENOMEM, 0, 0, "out of memory");
}

int check_init(struct checker *ck, struct vpl_program *prog, const struct ast_program *ast,
               struct vpl_error *err)
{
    ck->prog = prog;
    ck->ast = ast;
    ck->err = err;
    size_t n = ast->nconsts ? ast->nconsts : 1;
    ck->const_state = calloc(n, sizeof(*ck->const_state));
    ck->const_val = calloc(n, sizeof(*ck->const_val));
    size_t nf = ast->nfns ? ast->nfns : 1;
    ck->fn_state = calloc(nf, 1);
    ck->fn_depth = calloc(nf, sizeof(*ck->fn_depth));
    ck->fn_names = calloc(nf, sizeof(*ck->fn_names));
    ck->loc = NULL;
    ck->nloc = ck->caploc = 0;
    ck->fn_nesting = 0;
    memset(&ck->fn_map, 0, sizeof(ck->fn_map));
    if (ck->const_state == NULL || ck->const_val == NULL || ck->fn_state == NULL || ck->fn_depth == NULL ||
        ck->fn_names == NULL) {
        check_fini(ck);
        return nomem(ck);
    }
    /* By name, the first declaration of each: check_fn refuses the others. */
    for (uint32_t i = 0; i < ast->nfns; i++) {
        struct fn_name *fn = &ck->fn_names[i];
        fn->node.hash = hash_bytes(ast->fns[i].name, ast->fns[i].nlen);
        fn->node.key = ast->fns[i].name;
        fn->node.klen = ast->fns[i].nlen;
        fn->idx = i;
        if (hmap_get(&ck->fn_map, fn->node.hash, fn->node.key, fn->node.klen) == NULL &&
            hmap_put(&ck->fn_map, &fn->node) != 0) {
            check_fini(ck);
            return nomem(ck);
        }
    }
    return 0;
}

void check_fini(struct checker *ck)
{
    free(ck->const_state);
    free(ck->const_val);
    free(ck->fn_state);
    free(ck->fn_names);
    hmap_free(&ck->fn_map);
    memset(&ck->fn_map, 0, sizeof(ck->fn_map));
    free(ck->fn_depth);
    free(ck->loc);
    ck->const_state = NULL;
    ck->const_val = NULL;
    ck->fn_state = NULL;
    ck->fn_names = NULL;
    ck->fn_depth = NULL;
    ck->loc = NULL;
}

int check_field(struct checker *ck, const char *name, uint32_t len, uint32_t *sym)
{
    if (symtab_intern(&ck->prog->syms, name, len, sym) != 0) {
        return nomem(ck);
    }
    ck->prog->syms.v[*sym]->field = 1;
    return 0;
}

static int same(const char *a, uint32_t alen, const char *b, size_t blen)
{
    return alen == blen && memcmp(a, b, blen) == 0;
}

static int find_alias(const struct scope *sc, const char *name, uint32_t len)
{
    for (uint32_t i = 0; i < sc->nal; i++) {
        if (sc->al[i].name != NULL && same(name, len, sc->al[i].name, sc->al[i].len)) {
            return (int)i;
        }
    }
    return -1;
}

static int is_self(const struct scope *sc, const char *name, uint32_t len)
{
    return sc->self != NULL && same(name, len, sc->self, sc->self_len);
}

/* Whether a checked tree reads nothing but literals (so it folds to a constant). */
static int is_constant(const struct expr *e)
{
    switch (e->kind) {
    case X_FIELD:
    case X_ALIAS_FIELD:
    case X_KLEENE_AT:
    case X_KLEENE_LEN:
    case X_KLEENE_AGG:
    case X_AGG:
        return 0;
    default:
        for (uint16_t i = 0; i < e->n; i++) {
            if (!is_constant(e->kid[i])) {
                return 0;
            }
        }
        return 1;
    }
}

/* 1 and *v when `name` is a constant that folds to a literal, 0 when it is not a
 * constant (or does not fold), < 0 on error. */
static int constant(struct checker *ck, struct expr *at, const char *name, uint32_t len, struct vval *v)
{
    const struct ast_program *ast = ck->ast;
    uint32_t i = 0;
    while (i < ast->nconsts && !same(name, len, ast->consts[i].name, ast->consts[i].nlen)) {
        i++;
    }
    if (i == ast->nconsts) {
        return 0;
    }
    switch (ck->const_state[i]) {
    case 1:
        return err_at(ck, at, "constant '%.*s' is defined in terms of itself", (int)len, name);
    case 2:
        *v = ck->const_val[i];
        return 1;
    case 3:
        return 0;
    }
    ck->const_state[i] = 1;
    struct scope sc = {.ctx = CX_EVENT};
    int rc = check_expr(ck, ast->consts[i].e, &sc);
    if (rc != 0) {
        return rc;
    }
    if (!is_constant(ast->consts[i].e)) {
        ck->const_state[i] = 3;
        return 0;
    }
    int oom = 0;
    struct ectx c = {.arena = &ck->prog->arena, .oom = &oom, .view_slot = -1};
    struct vval r = eval(ast->consts[i].e, &c);
    if (oom) {
        return nomem(ck);
    }
    ck->const_val[i] = r;
    ck->const_state[i] = r.t == V_MISSING ? 3 : 2;
    *v = r;
    return r.t != V_MISSING;
}

/* 1 when the constant named by e was written as a duration (`const W = 5m`). */
static int constant_is_duration(const struct checker *ck, const struct expr *e)
{
    for (uint32_t i = 0; i < ck->ast->nconsts; i++) {
        if (same(e->name, e->nlen, ck->ast->consts[i].name, ck->ast->consts[i].nlen)) {
            return ck->ast->consts[i].e->kind == X_LIT && ck->ast->consts[i].e->op == 'd';
        }
    }
    return 0;
}

static const struct {
    const char *name;
    uint8_t fn, nargs;
} aggs[] = {
    {"count", AGG_COUNT, 0},   {"count", AGG_COUNT, 1},
    {"sum", AGG_SUM, 1},       {"avg", AGG_AVG, 1},
    {"min", AGG_MIN, 1},       {"max", AGG_MAX, 1},
    {"first", AGG_FIRST, 1},   {"last", AGG_LAST, 1},
    {"stddev", AGG_STDDEV, 1}, {"count_distinct", AGG_COUNT_DISTINCT, 1},
    {"ema", AGG_EMA, 2},       {"collect", AGG_COLLECT, 1},
};

static int find_agg(const struct expr *e)
{
    for (size_t i = 0; i < sizeof(aggs) / sizeof(aggs[0]); i++) {
        if (same(e->name, e->nlen, aggs[i].name, strlen(aggs[i].name)) && e->n == aggs[i].nargs) {
            return aggs[i].fn;
        }
    }
    return -1;
}

static int check_window_agg(struct checker *ck, struct expr *e, const struct scope *sc, int fn)
{
    struct scope in = *sc;
    in.ctx = CX_EVENT;
    in.in_agg = 1;
    if (fn == AGG_COUNT && e->n == 1 && e->kid[0]->kind == X_CALL &&
        same(e->kid[0]->name, e->kid[0]->nlen, "distinct", 8) && e->kid[0]->n == 1) {
        fn = AGG_COUNT_DISTINCT; /* count(distinct(x)) */
        e->kid[0] = e->kid[0]->kid[0];
    }
    for (uint16_t i = 0; i < e->n; i++) {
        int rc = check_expr(ck, e->kid[i], i == 0 ? &in : sc);
        if (rc != 0) {
            return rc;
        }
    }
    e->kind = X_AGG;
    e->id = (uint32_t)fn;
    return 0;
}

/* count(xs), sum(xs.f), collect(xs.f), ... over a Kleene alias. 1 when e was one. */
static int check_kleene_agg(struct checker *ck, struct expr *e, const struct scope *sc)
{
    int fn = find_agg(e);
    if (fn < 0 || e->n != 1 || fn == AGG_STDDEV || fn == AGG_EMA || fn == AGG_COUNT_DISTINCT) {
        return 0;
    }
    struct expr *a = e->kid[0];
    int slot = -1;
    uint32_t field = SYM_NONE;
    if (a->kind == X_NAME) {
        slot = find_alias(sc, a->name, a->nlen);
    } else if (a->kind == X_MEMBER && a->kid[0]->kind == X_NAME) {
        slot = find_alias(sc, a->kid[0]->name, a->kid[0]->nlen);
        if (slot >= 0 && check_field(ck, a->name, a->nlen, &field) != 0) {
            return VPL_ENOMEM;
        }
    }
    if (slot < 0 || !sc->al[slot].kleene) {
        return 0;
    }
    if (field == SYM_NONE && fn != AGG_COUNT) {
        return err_at(ck, e, "%.*s() over a Kleene alias needs a field: %.*s(%.*s.field)", (int)e->nlen,
                      e->name, (int)e->nlen, e->name, (int)a->nlen, a->name);
    }
    e->kind = X_KLEENE_AGG;
    e->id = (uint32_t)fn;
    e->id2 = field;
    e->slot = slot;
    e->n = 0;
    return 1;
}

/* ---- fn ---- */

static int push_local(struct checker *ck, const char *name, uint32_t len, int32_t slot, uint8_t lam)
{
    if (ck->nloc == ck->caploc) {
        uint32_t cap = ck->caploc ? ck->caploc * 2 : 16;
        struct local *v = realloc(ck->loc, cap * sizeof(*v));
        if (v == NULL) {
            return nomem(ck);
        }
        ck->loc = v;
        ck->caploc = cap;
    }
    ck->loc[ck->nloc++] = (struct local){.name = name, .len = len, .slot = slot, .lam = lam};
    return 0;
}

/* The innermost local (a fn's parameter or let, a lambda's parameter) of that name. */
static const struct local *find_local(const struct checker *ck, const struct scope *sc, const char *name,
                                      uint32_t len)
{
    if (sc->fn == NULL && sc->nlam == 0) {
        return NULL;
    }
    for (uint32_t i = ck->nloc; i > sc->loc_base; i--) {
        if (same(name, len, ck->loc[i - 1].name, ck->loc[i - 1].len)) {
            return &ck->loc[i - 1];
        }
    }
    return NULL;
}

static int find_fn(const struct checker *ck, const char *name, uint32_t len)
{
    const struct fn_name *fn =
        (const struct fn_name *)hmap_get(&ck->fn_map, hash_bytes(name, len), name, len);
    return fn != NULL ? (int)fn->idx : -1;
}

/* The deepest evaluation a checked tree needs, through the bodies of the fns it calls
 * (checked before, so their depth is known). */
static uint32_t depth_of(const struct checker *ck, const struct expr *e)
{
    uint32_t d = 0;
    for (uint16_t i = 0; i < e->n; i++) {
        uint32_t k = depth_of(ck, e->kid[i]);
        d = k > d ? k : d;
    }
    if (e->kind == X_FNCALL) {
        uint32_t b = ck->fn_depth[(const struct ast_fn *)e->aux - ck->ast->fns];
        d = b > d ? b : d;
    }
    return d + 1;
}

static int check_fn(struct checker *ck, uint32_t i, const struct expr *at)
{
    const struct ast_fn *f = &ck->ast->fns[i];
    if (ck->fn_state[i] == 2) {
        return 0;
    }
    if (ck->fn_state[i] == 1) {
        return err_at(ck, at,
                      "fn '%.*s' calls itself (directly or through other fns): recursion is not supported",
                      (int)f->nlen, f->name);
    }
    if (builtin_find(f->name, f->nlen) >= 0) {
        return vpl_err_at(ck->err, VPL_ESEMANTIC, f->line, f->col,
                          "fn '%.*s' has the name of a built-in function", (int)f->nlen, f->name);
    }
    if (find_fn(ck, f->name, f->nlen) != (int)i) {
        return vpl_err_at(ck->err, VPL_ESEMANTIC, f->line, f->col, "fn '%.*s' is declared twice",
                          (int)f->nlen, f->name);
    }
    if (ck->fn_nesting == VPL_MAX_DEPTH) { /* bounds this recursion over the call chain */
        return err_at(ck, at, "fns call each other more than %d deep", VPL_MAX_DEPTH);
    }
    ck->fn_nesting++;
    ck->fn_state[i] = 1;
    struct scope sc = {.ctx = CX_EVENT, .fn = f, .loc_base = ck->nloc};
    int rc = 0;
    for (uint32_t k = 0; rc == 0 && k < f->nparams; k++) {
        rc = push_local(ck, f->params[k].name, f->params[k].len, (int32_t)k, 0);
    }
    if (rc == 0) {
        rc = check_expr(ck, f->body, &sc);
    }
    ck->nloc = sc.loc_base;
    if (rc == 0 && (ck->fn_depth[i] = depth_of(ck, f->body)) > VPL_MAX_DEPTH) {
        rc = vpl_err_at(ck->err, VPL_ESEMANTIC, f->line, f->col,
                        "fn '%.*s' nests expressions and calls deeper than %d levels", (int)f->nlen, f->name,
                        VPL_MAX_DEPTH);
    }
    ck->fn_state[i] = rc == 0 ? 2 : 1;
    ck->fn_nesting--;
    return rc;
}

int check_fns(struct checker *ck)
{
    for (uint32_t i = 0; i < ck->ast->nfns; i++) {
        struct expr at = {.line = ck->ast->fns[i].line, .col = ck->ast->fns[i].col};
        int rc = check_fn(ck, i, &at);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* A call of a user fn: its arguments in the caller's scope. */
static int check_fncall(struct checker *ck, struct expr *e, const struct scope *sc, int i)
{
    const struct ast_fn *f = &ck->ast->fns[i];
    if (e->n != f->nparams) {
        return err_at(ck, e, "fn '%.*s' takes %u argument%s, found %u", (int)f->nlen, f->name, f->nparams,
                      f->nparams == 1 ? "" : "s", e->n);
    }
    int rc = check_fn(ck, (uint32_t)i, e);
    for (uint16_t k = 0; rc == 0 && k < e->n; k++) {
        rc = check_expr(ck, e->kid[k], sc);
    }
    if (rc != 0) {
        return rc;
    }
    e->kind = X_FNCALL;
    e->aux = (void *)f;
    return 0;
}

/* filter(xs, x => ...), map, any and all, also as methods (xs.filter(x => ...)): the
 * array in sc, the lambda's body in sc with its parameter. 1 when e is one of them. The
 * body reads what sc reads (fields, aliases, constants, a fn's locals), none of which
 * changes while the array is walked: a lambda keeps no state. */
static int check_hof(struct checker *ck, struct expr *e, const struct scope *sc)
{
    static const struct {
        const char *name;
        uint8_t op;
    } hofs[] = {{"filter", 'f'}, {"map", 'm'}, {"any", 'a'}, {"all", 'A'}};
    uint8_t op = 0;
    for (size_t i = 0; i < sizeof(hofs) / sizeof(hofs[0]); i++) {
        if (same(e->name, e->nlen, hofs[i].name, strlen(hofs[i].name))) {
            op = hofs[i].op;
        }
    }
    if (op == 0) {
        return 0;
    }
    if (e->n != 2 || e->kid[1]->kind != X_LAMBDA || e->kid[0]->kind == X_LAMBDA) {
        return err_at(ck, e, "%.*s() takes an array and a lambda: %.*s(xs, x => ...) or xs.%.*s(x => ...)",
                      (int)e->nlen, e->name, (int)e->nlen, e->name, (int)e->nlen, e->name);
    }
    struct expr *lam = e->kid[1];
    if (sc->nlam == LAMBDA_MAX) {
        return err_at(ck, lam, "lambdas nest at most %d deep", LAMBDA_MAX);
    }
    int rc = check_expr(ck, e->kid[0], sc);
    if (rc != 0) {
        return rc;
    }
    struct scope in = *sc;
    in.nlam = (uint8_t)(sc->nlam + 1);
    lam->slot = sc->nlam;
    uint32_t base = ck->nloc;
    rc = push_local(ck, lam->name, lam->nlen, lam->slot, 1);
    if (rc == 0) {
        rc = check_expr(ck, lam->kid[0], &in);
    }
    ck->nloc = base;
    if (rc != 0) {
        return rc;
    }
    e->kind = X_HOF;
    e->op = op;
    return 1;
}

static int check_call(struct checker *ck, struct expr *e, const struct scope *sc)
{
    if (sc->ctx == CX_WINDOW && !sc->in_agg) {
        int fn = find_agg(e);
        if (fn >= 0) {
            return check_window_agg(ck, e, sc, fn);
        }
    }
    if (sc->nal > 0) {
        int rc = check_kleene_agg(ck, e, sc);
        if (rc != 0) {
            return rc < 0 ? rc : 0;
        }
    }
    int fi = find_fn(ck, e->name, e->nlen);
    if (fi >= 0) {
        return check_fncall(ck, e, sc, fi);
    }
    int hof = check_hof(ck, e, sc);
    if (hof != 0) {
        return hof < 0 ? hof : 0;
    }
    int id = builtin_find(e->name, e->nlen);
    if (id < 0) {
        if (find_agg(e) >= 0 || same(e->name, e->nlen, "count", 5)) {
            return err_at(ck, e, "aggregate '%.*s()' needs a window: use it after .window(...)", (int)e->nlen,
                          e->name);
        }
        return err_at(ck, e, "unknown function '%.*s' (E050)", (int)e->nlen, e->name);
    }
    const struct builtin *b = &builtins[id];
    if (e->n < b->min || e->n > b->max) {
        if (b->min == b->max) {
            return err_at(ck, e, "%s() takes %u argument%s, found %u", b->name, b->min,
                          b->min == 1 ? "" : "s", e->n);
        }
        if (b->max == 255) {
            return err_at(ck, e, "%s() takes at least %u argument%s, found %u", b->name, b->min,
                          b->min == 1 ? "" : "s", e->n);
        }
        return err_at(ck, e, "%s() takes %u to %u arguments, found %u", b->name, b->min, b->max, e->n);
    }
    for (uint16_t i = 0; i < e->n; i++) {
        int rc = check_expr(ck, e->kid[i], sc);
        if (rc != 0) {
            return rc;
        }
    }
    e->kind = X_FUNC;
    e->id = (uint32_t)id;
    if (same(e->name, e->nlen, "regex_match", 11) && e->kid[1]->kind == X_LIT && e->kid[1]->lit.t == V_STR) {
        /* A literal pattern is compiled once, and a bad one is a program error. */
        char msg[128];
        struct vpl_program *p = ck->prog;
        void *re = regex_compile(e->kid[1]->lit.u.s, e->kid[1]->lit.n, msg, sizeof(msg));
        if (re == NULL) {
            return err_at(ck, e->kid[1], "bad regex: %s", msg);
        }
        if (p->nregex == p->capregex) {
            uint32_t cap = p->capregex ? p->capregex * 2 : 8;
            void **v = realloc(p->regex, cap * sizeof(*v));
            if (v == NULL) {
                regex_destroy(re);
                return nomem(ck);
            }
            p->regex = v;
            p->capregex = cap;
        }
        p->regex[p->nregex++] = re;
        e->aux = re;
    }
    return 0;
}

static int check_member(struct checker *ck, struct expr *e, const struct scope *sc)
{
    struct expr *o = e->kid[0];
    if (o->kind == X_NAME && find_local(ck, sc, o->name, o->nlen) != NULL) {
        return check_expr(ck, o, sc); /* a local hides an alias of the same name */
    }
    if (o->kind == X_NAME) {
        int slot = find_alias(sc, o->name, o->nlen);
        if (slot >= 0) {
            e->slot = slot;
            e->n = 0;
            if (sc->al[slot].kleene && same(e->name, e->nlen, "LEN", 3)) {
                e->kind = X_KLEENE_LEN;
                return 0;
            }
            e->kind = X_ALIAS_FIELD;
            return check_field(ck, e->name, e->nlen, &e->id);
        }
        if (is_self(sc, o->name, o->nlen)) {
            e->kind = X_FIELD;
            e->n = 0;
            return check_field(ck, e->name, e->nlen, &e->id);
        }
    }
    if (o->kind == X_INDEX && o->kid[0]->kind == X_NAME) {
        int slot = find_alias(sc, o->kid[0]->name, o->kid[0]->nlen);
        if (slot >= 0) {
            if (!sc->al[slot].kleene) {
                return err_at(ck, o, "only a Kleene alias (-> all X as xs) can be indexed");
            }
            int rc = check_expr(ck, o->kid[1], sc);
            if (rc != 0) {
                return rc;
            }
            e->kind = X_KLEENE_AT;
            e->slot = slot;
            e->kid[0] = o->kid[1];
            return check_field(ck, e->name, e->nlen, &e->id);
        }
    }
    return check_expr(ck, o, sc);
}

int check_expr(struct checker *ck, struct expr *e, const struct scope *sc)
{
    switch (e->kind) {
    case X_LIT:
        return 0;
    case X_NAME: {
        const struct local *l = find_local(ck, sc, e->name, e->nlen);
        if (l != NULL) {
            e->kind = l->lam ? X_PARAM : X_LOCAL;
            e->slot = l->slot;
            return 0;
        }
        if (find_alias(sc, e->name, e->nlen) >= 0 || is_self(sc, e->name, e->nlen)) {
            return err_at(ck, e,
                          "'%.*s' is an alias for a whole event: read one of its "
                          "fields (%.*s.field)",
                          (int)e->nlen, e->name, (int)e->nlen, e->name);
        }
        struct vval v;
        int rc = constant(ck, e, e->name, e->nlen, &v);
        if (rc < 0) {
            return rc;
        }
        if (rc == 1) {
            e->op = constant_is_duration(ck, e) ? 'd' : 0;
            e->kind = X_LIT;
            e->lit = v;
            return 0;
        }
        if (sc->fn != NULL) {
            return err_at(ck, e,
                          "'%.*s' is not a parameter, a let or a constant of fn '%.*s' (a fn reads no "
                          "event field: pass it as an argument)",
                          (int)e->nlen, e->name, (int)sc->fn->nlen, sc->fn->name);
        }
        e->kind = X_FIELD;
        return check_field(ck, e->name, e->nlen, &e->id);
    }
    case X_MEMBER:
        return check_member(ck, e, sc);
    case X_CALL:
        return check_call(ck, e, sc);
    case X_BLOCK: {
        uint32_t base = ck->nloc;
        int rc = 0;
        for (uint16_t i = 0; rc == 0 && i < e->n; i++) {
            rc = check_expr(ck, e->kid[i], sc);
        }
        ck->nloc = base; /* a block's lets end with it */
        return rc;
    }
    case X_LET: {
        int rc = check_expr(ck, e->kid[0], sc);
        return rc != 0 ? rc : push_local(ck, e->name, e->nlen, e->slot, 0);
    }
    case X_LOCAL:
    case X_FNCALL:
    case X_HOF:
    case X_PARAM:
        return 0;
    case X_LAMBDA:
        return err_at(ck, e, "a lambda (x => ...) is an argument of filter(), map(), any() or all()");
    case X_MAP:
        for (uint16_t i = 1; i < e->n; i += 2) {
            int rc = check_expr(ck, e->kid[i], sc);
            if (rc != 0) {
                return rc;
            }
        }
        return 0;
    default:
        for (uint16_t i = 0; i < e->n; i++) {
            int rc = check_expr(ck, e->kid[i], sc);
            if (rc != 0) {
                return rc;
            }
        }
        return 0;
    }
}
