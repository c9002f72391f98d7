#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "check.h"
#include "fold.h"
#include "keep.h"
#include "lexer.h"
#include "parser.h"
#include "program.h"

#define MAX_CHAIN 64 /* streams reading streams: bounds the compiler's recursion */

enum decl { D_NONE, D_EVENT, D_STREAM, D_PATTERN };

struct compiler {
    struct checker ck;
    struct vpl_program *prog;
    const struct ast_program *ast;
    struct vpl_error *err;
    uint8_t *decl;      /* per symbol interned before streams were compiled */
    uint32_t *decl_idx; /* index into the ast array of its kind */
    uint32_t ndecl;
    int closed; /* events are declared: an unknown type name is E033 */
    uint32_t tcap;
    uint32_t **reads; /* per stream: the types it reads */
    uint32_t *nreads, *capreads;
    int64_t *watermark;
    int32_t *type_stream;
    uint8_t *state;
    uint32_t *chain; /* per stream: length of the longest chain of streams feeding it */
    uint32_t *topo, ntopo;
};

static int fail(struct compiler *c, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct compiler *c, uint32_t line, uint32_t col, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return vpl_err_at(c->err, VPL_ESEMANTIC, line, col, "%s", msg);
}

static int nomem(struct compiler *c)
{
    return vpl_err_at(c->err, VPL_ENOMEM, 0, 0, "out of memory");
}

static void *alloc(struct compiler *c, size_t n)
{
    void *p = arena_alloc(&c->prog->arena, n ? n : 1);
    if (p != NULL) {
        memset(p, 0, n ? n : 1);
    }
    return p;
}

static char *dup(struct compiler *c, const char *s, size_t n)
{
    return arena_strndup(&c->prog->arena, s, n);
}

static int intern(struct compiler *c, const char *s, size_t n, uint32_t *sym)
{
    return symtab_intern(&c->prog->syms, s, n, sym) == 0 ? 0 : nomem(c);
}

static enum decl decl_of(const struct compiler *c, uint32_t sym)
{
    return sym < c->ndecl ? (enum decl)c->decl[sym] : D_NONE;
}

static int add_type(struct compiler *c, uint32_t sym, uint32_t *type)
{
    struct vpl_program *p = c->prog;
    struct sym *s = p->syms.v[sym];
    if (s->type < 0) {
        if (p->ntypes == c->tcap) {
            uint32_t cap = c->tcap ? c->tcap * 2 : 16;
            uint32_t *v = realloc(p->type_sym, cap * sizeof(*v));
            if (v == NULL) {
                return nomem(c);
            }
            p->type_sym = v;
            c->tcap = cap;
        }
        p->type_sym[p->ntypes] = sym;
        s->type = (int32_t)p->ntypes++;
    }
    *type = (uint32_t)s->type;
    return 0;
}

static int add_read(struct compiler *c, uint32_t si, uint32_t type)
{
    for (uint32_t i = 0; i < c->nreads[si]; i++) {
        if (c->reads[si][i] == type) {
            return 0;
        }
    }
    if (c->nreads[si] == c->capreads[si]) {
        uint32_t cap = c->capreads[si] ? c->capreads[si] * 2 : 4;
        uint32_t *v = realloc(c->reads[si], cap * sizeof(*v));
        if (v == NULL) {
            return nomem(c);
        }
        c->reads[si] = v;
        c->capreads[si] = cap;
    }
    c->reads[si][c->nreads[si]++] = type;
    return 0;
}

/* The routing type a step, source or .not() names. */
static int resolve_type(struct compiler *c, uint32_t si, const char *name, uint32_t len, uint32_t line,
                        uint32_t col, uint32_t *type)
{
    uint32_t sym;
    if (intern(c, name, len, &sym) != 0) {
        return VPL_ENOMEM;
    }
    switch (decl_of(c, sym)) {
    case D_PATTERN:
        return fail(c, line, col,
                    "'%.*s' is a pattern: use it as the source of a stream (stream S = %.*s ...)", (int)len,
                    name, (int)len, name);
    case D_NONE:
        if (c->closed) {
            return fail(c, line, col, "unknown event type '%.*s' (E033)", (int)len, name);
        }
        break;
    default:
        break;
    }
    if (add_type(c, sym, type) != 0) {
        return VPL_ENOMEM;
    }
    return add_read(c, si, *type);
}

static int duration_expr(struct compiler *c, struct expr *e, int64_t *ms)
{
    struct scope sc = {.ctx = CX_EVENT};
    int rc = check_expr(&c->ck, e, &sc);
    if (rc != 0) {
        return rc;
    }
    if (e->kind != X_LIT || e->lit.t != V_INT || e->op != 'd' || e->lit.u.i < 0) {
        return fail(c, e->line, e->col, "expected a duration (e.g. 30s, 5m, 1h)");
    }
    *ms = e->lit.u.i;
    return 0;
}

static int duration_arg(struct compiler *c, const struct ast_op *op, int64_t *ms)
{
    if (op->nargs != 1 || op->args[0].name != NULL) {
        return fail(c, op->line, op->col, "%.*s() takes one duration (e.g. 5m)", (int)op->nlen, op->name);
    }
    return duration_expr(c, op->args[0].e, ms);
}

/* .watermark(out_of_order: D) */
static int watermark_arg(struct compiler *c, const struct ast_op *op, int64_t *ms)
{
    for (uint32_t k = 0; k < op->nargs; k++) {
        const struct ast_arg *a = &op->args[k];
        if (a->name == NULL || a->nlen != 12 || memcmp(a->name, "out_of_order", 12) != 0) {
            return fail(c, a->line, a->col, "watermark() takes out_of_order: DURATION");
        }
        int rc = duration_expr(c, a->e, ms);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

#define TIMER_MIN_MS 100 /* as idle_tick's: a detect unit stores a record per firing */

/* timer(P[, initial_delay: D]): the stream reads Timer_<name>, a type of its own, whose
 * events the engine makes as the timer fires (runtime/timer.c). */
static int timer_source(struct compiler *c, uint32_t si, uint32_t *type)
{
    const struct ast_stream *as = &c->ast->streams[si];
    struct stream *s = &c->prog->streams[si];
    const struct ast_step *src = &as->steps[0];
    for (uint32_t k = 0; k < as->ntargs; k++) {
        const struct ast_arg *a = &as->targs[k];
        int rc;
        if (a->name == NULL && k == 0) {
            rc = duration_expr(c, a->e, &s->timer_period);
        } else if (a->name != NULL && a->nlen == 13 && memcmp(a->name, "initial_delay", 13) == 0) {
            rc = duration_expr(c, a->e, &s->timer_delay);
        } else {
            rc = fail(c, a->line, a->col, "timer() takes a period and an optional initial_delay: "
                                          "timer(5s, initial_delay: 2s)");
        }
        if (rc != 0) {
            return rc;
        }
    }
    if (as->ntargs == 0 || as->targs[0].name != NULL) {
        return fail(c, src->line, src->col, "timer() takes a period and an optional initial_delay: "
                                            "timer(5s, initial_delay: 2s)");
    }
    if (s->timer_period < TIMER_MIN_MS) {
        return fail(c, as->targs[0].line, as->targs[0].col, "a timer's period is at least %dms", TIMER_MIN_MS);
    }
    uint32_t sym;
    if (intern(c, src->type, src->tlen, &sym) != 0 || add_type(c, sym, type) != 0) {
        return VPL_ENOMEM;
    }
    c->prog->ntimers++;
    return add_read(c, si, *type);
}

static int field_arg(struct compiler *c, const struct ast_op *op, uint32_t *sym)
{
    if (op->nargs != 1 || op->args[0].name != NULL || op->args[0].e->kind != X_NAME) {
        return fail(c, op->line, op->col, "%.*s() takes one field name", (int)op->nlen, op->name);
    }
    return check_field(&c->ck, op->args[0].e->name, op->args[0].e->nlen, sym);
}

static int filter_stage(struct compiler *c, const struct ast_op *op, const struct scope *sc, struct stage *st)
{
    if (op->nargs != 1 || op->args[0].name != NULL) {
        return fail(c, op->line, op->col, "%.*s() takes one condition", (int)op->nlen, op->name);
    }
    st->kind = SG_FILTER;
    st->ctx = sc->ctx;
    st->n = 1;
    st->e = alloc(c, sizeof(*st->e));
    if (st->e == NULL) {
        return nomem(c);
    }
    st->e[0] = op->args[0].e;
    return check_expr(&c->ck, st->e[0], sc);
}

/* .emit / .select / .aggregate: named values in declaration order. */
static int project_stage(struct compiler *c, const struct ast_op *op, const struct scope *sc,
                         struct stage *st)
{
    st->kind = SG_PROJECT;
    st->ctx = sc->ctx;
    st->n = op->nargs;
    st->e = alloc(c, op->nargs * sizeof(*st->e));
    st->names = alloc(c, op->nargs * sizeof(*st->names));
    if (st->e == NULL || st->names == NULL) {
        return nomem(c);
    }
    for (uint32_t i = 0; i < op->nargs; i++) {
        const struct ast_arg *a = &op->args[i];
        const char *name = a->name;
        uint32_t len = a->nlen;
        if (name == NULL && (a->e->kind == X_NAME || a->e->kind == X_MEMBER)) {
            name = a->e->name; /* emit(x) is emit(x: x); emit(a.x) is emit(x: a.x) */
            len = a->e->nlen;
        }
        if (name == NULL) {
            return fail(c, a->line, a->col, "%.*s() arguments need a name (name: expression)", (int)op->nlen,
                        op->name);
        }
        if (intern(c, name, len, &st->names[i]) != 0) {
            return VPL_ENOMEM;
        }
        for (uint32_t j = 0; j < i; j++) {
            if (st->names[j] == st->names[i]) {
                return fail(c, a->line, a->col, "field '%.*s' is written twice", (int)len, name);
            }
        }
        st->e[i] = a->e;
        int rc = check_expr(&c->ck, a->e, sc);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static int check_neg(struct compiler *c, struct neg *ng, const struct scope *sc)
{
    return ng->pred ? check_expr(&c->ck, ng->pred, sc) : 0;
}

/* Lowers `A as a -> [NOT] B ... -> [all] C` into positive steps (one alias slot each)
 * with the NOT steps attached to the step they precede, or kept as the absence the
 * run waits out when they come last. */
static int build_pattern(struct compiler *c, uint32_t si, const struct ast_step *steps, uint32_t nsteps,
                         struct pattern *pat, struct alias **al)
{
    uint32_t npos = 0;
    for (uint32_t i = 0; i < nsteps; i++) {
        npos += !steps[i].neg;
    }
    pat->steps = alloc(c, npos * sizeof(*pat->steps));
    *al = alloc(c, npos * sizeof(**al));
    struct neg *pending = alloc(c, nsteps * sizeof(*pending));
    if (pat->steps == NULL || *al == NULL || pending == NULL) {
        return nomem(c);
    }
    uint32_t npend = 0;
    for (uint32_t i = 0; i < nsteps; i++) {
        const struct ast_step *st = &steps[i];
        uint32_t type;
        int rc = resolve_type(c, si, st->type, st->tlen, st->line, st->col, &type);
        if (rc != 0) {
            return rc;
        }
        if (st->neg) {
            if (i == 0 || st->kleene) {
                return fail(c, st->line, st->col,
                            i == 0 ? "a sequence cannot start with NOT"
                                   : "'all' and 'NOT' cannot be combined");
            }
            if (st->alias != NULL) {
                return fail(c, st->line, st->col, "a NOT step cannot capture an alias");
            }
            pending[npend].type = type;
            pending[npend++].pred = st->pred;
            continue;
        }
        struct pstep *ps = &pat->steps[pat->nsteps];
        ps->type = type;
        ps->pred = st->pred;
        ps->kleene = st->kleene;
        ps->negs = npend ? pending : NULL;
        ps->nnegs = npend;
        if (npend) {
            pending += npend;
            npend = 0;
        }
        struct alias *a = &(*al)[pat->nsteps];
        a->name = st->alias;
        a->len = st->alen;
        a->kleene = st->kleene;
        for (uint32_t j = 0; j < pat->nsteps && a->name; j++) {
            if ((*al)[j].name && (*al)[j].len == a->len && memcmp((*al)[j].name, a->name, a->len) == 0) {
                return fail(c, st->line, st->col, "alias '%.*s' is already used in this sequence",
                            (int)a->len, a->name);
            }
        }
        pat->nsteps++;
    }
    pat->absent = npend ? pending : NULL;
    pat->nabsent = npend;
    if (pat->steps[pat->nsteps - 1].kleene && pat->nabsent > 0) {
        return fail(c, steps[nsteps - 1].line, steps[nsteps - 1].col,
                    "an absence (-> NOT X) cannot follow a Kleene step");
    }
    if (pat->nsteps == 1 && pat->nabsent == 0) {
        return fail(c, steps[0].line, steps[0].col, "a sequence needs a second step (-> X)");
    }
    struct scope sc = {.ctx = CX_MATCH, .al = *al, .nal = pat->nsteps};
    for (uint32_t k = 0; k < pat->nsteps; k++) {
        struct pstep *ps = &pat->steps[k];
        if (ps->pred != NULL) {
            int rc = check_expr(&c->ck, ps->pred, &sc);
            if (rc != 0) {
                return rc;
            }
        }
        for (uint32_t j = 0; j < ps->nnegs; j++) {
            if (check_neg(c, &ps->negs[j], &sc) != 0) {
                return VPL_ESEMANTIC;
            }
        }
    }
    for (uint32_t j = 0; j < pat->nabsent; j++) {
        if (check_neg(c, &pat->absent[j], &sc) != 0) {
            return VPL_ESEMANTIC;
        }
    }
    return 0;
}

static int build_window(struct compiler *c, const struct ast_op *op, struct window *w)
{
    struct expr *size = NULL, *slide = NULL, *session = NULL;
    struct scope sc = {.ctx = CX_EVENT};
    for (uint32_t i = 0; i < op->nargs; i++) {
        const struct ast_arg *a = &op->args[i];
        struct expr **slot = NULL;
        if (a->name == NULL) {
            slot = &size;
        } else if (a->nlen == 7 && memcmp(a->name, "sliding", 7) == 0) {
            slot = &slide;
        } else if (a->nlen == 7 && memcmp(a->name, "session", 7) == 0) {
            slot = &session;
        } else {
            return fail(c, a->line, a->col, "unknown window parameter '%.*s': expected sliding or session",
                        (int)a->nlen, a->name);
        }
        if (*slot != NULL) {
            return fail(c, a->line, a->col, "window parameter given twice");
        }
        int rc = check_expr(&c->ck, a->e, &sc);
        if (rc != 0) {
            return rc;
        }
        if (a->e->kind != X_LIT || a->e->lit.t != V_INT || a->e->lit.u.i <= 0) {
            return fail(c, a->e->line, a->e->col, "expected a positive count (5) or duration (5s)");
        }
        *slot = a->e;
    }
    if (session != NULL) {
        if (size != NULL || slide != NULL || session->op != 'd') {
            return fail(c, op->line, op->col, "window(session: GAP) takes only a duration");
        }
        w->kind = W_SESSION;
        w->size = session->lit.u.i;
        return 0;
    }
    if (size == NULL) {
        return fail(c, op->line, op->col, "window() expects a count (5), a duration (5s) or session: GAP");
    }
    int timed = size->op == 'd';
    if (slide != NULL && (slide->op == 'd') != timed) {
        return fail(c, slide->line, slide->col,
                    timed ? "a time window slides by a duration" : "a count window slides by a count");
    }
    w->size = size->lit.u.i;
    w->slide = slide ? slide->lit.u.i : 0;
    w->kind = timed ? (slide ? W_TIME_SLIDING : W_TIME) : (slide ? W_COUNT_SLIDING : W_COUNT);
    return 0;
}

static int set_to(struct compiler *c, struct stream *s, const struct ast_op *op)
{
    s->connector = dup(c, op->type, op->tlen);
    s->topic = op->nargs ? dup(c, op->args[0].name, op->args[0].nlen) : NULL;
    return s->connector == NULL || (op->nargs && s->topic == NULL) ? nomem(c) : 0;
}

static int compile_sequence(struct compiler *c, uint32_t si, int pattern_source)
{
    const struct ast_stream *as = &c->ast->streams[si];
    struct stream *s = &c->prog->streams[si];
    struct pattern *pat = alloc(c, sizeof(*pat));
    if (pat == NULL) {
        return nomem(c);
    }
    pat->within = -1;
    pat->partition = SYM_NONE;
    pat->each_slot = -1;
    s->pat = pat;
    struct alias *al;
    int rc;
    if (pattern_source) {
        const struct ast_step *src = &as->steps[0];
        if (as->nsteps > 1) {
            return fail(c, as->steps[1].line, as->steps[1].col,
                        "a named pattern cannot be extended with '->'");
        }
        if (src->pred != NULL || src->alias != NULL) {
            return fail(c, src->line, src->col, "a named pattern takes no 'where' or 'as' here");
        }
        uint32_t sym;
        if (intern(c, src->type, src->tlen, &sym) != 0) {
            return VPL_ENOMEM;
        }
        const struct ast_pattern *ap = &c->ast->patterns[c->decl_idx[sym]];
        if ((rc = build_pattern(c, si, ap->steps, ap->nsteps, pat, &al)) != 0) {
            return rc;
        }
        pat->within = ap->within;
        if (ap->partition != NULL && check_field(&c->ck, ap->partition, ap->plen, &pat->partition) != 0) {
            return VPL_ENOMEM;
        }
    } else if ((rc = build_pattern(c, si, as->steps, as->nsteps, pat, &al)) != 0) {
        return rc;
    }
    struct scope sc = {.ctx = CX_MATCH, .al = al, .nal = pat->nsteps};
    pat->first_where = alloc(c, as->nops * sizeof(*pat->first_where));
    s->post = alloc(c, as->nops * sizeof(*s->post));
    if (pat->first_where == NULL || s->post == NULL) {
        return nomem(c);
    }
    int each = 1;
    for (uint32_t i = 0; i < as->nops; i++) {
        const struct ast_op *op = &as->ops[i];
        switch (op->kind) {
        case OP_WHERE:
            if (!pattern_source && op->steps_before == 1) {
                /* Written before the first `->`: it filters the events that open runs. */
                if (op->nargs != 1 || op->args[0].name != NULL) {
                    return fail(c, op->line, op->col, "where() takes one condition");
                }
                if ((rc = check_expr(&c->ck, op->args[0].e, &sc)) != 0) {
                    return rc;
                }
                pat->first_where[pat->nfirst_where++] = op->args[0].e;
                break;
            }
            /* fall through */
        case OP_HAVING:
            if ((rc = filter_stage(c, op, &sc, &s->post[s->npost++])) != 0) {
                return rc;
            }
            break;
        case OP_EMIT:
        case OP_SELECT:
            if ((rc = project_stage(c, op, &sc, &s->post[s->npost++])) != 0) {
                return rc;
            }
            s->emits |= op->kind == OP_EMIT;
            sc.ctx = CX_EVENT;
            sc.al = NULL;
            sc.nal = 0;
            break;
        case OP_WITHIN:
            if ((rc = duration_arg(c, op, &pat->within)) != 0) {
                return rc;
            }
            break;
        case OP_PARTITION:
            if ((rc = field_arg(c, op, &pat->partition)) != 0) {
                return rc;
            }
            break;
        case OP_NOT: {
            struct neg *n = alloc(c, (pat->ncancel + 1) * sizeof(*n));
            if (n == NULL) {
                return nomem(c);
            }
            if (pat->ncancel) {
                memcpy(n, pat->cancel, pat->ncancel * sizeof(*n));
            }
            pat->cancel = n;
            struct neg *ng = &n[pat->ncancel++];
            if ((rc = resolve_type(c, si, op->type, op->tlen, op->tline, op->tcol, &ng->type)) != 0) {
                return rc;
            }
            ng->pred = op->pred;
            struct scope full = {.ctx = CX_MATCH, .al = al, .nal = pat->nsteps};
            if ((rc = check_neg(c, ng, &full)) != 0) {
                return rc;
            }
            break;
        }
        case OP_MODE:
            if (op->nlen == 4 && memcmp(op->name, "stnm", 4) == 0) {
                pat->stnm = 1;
            } else if (op->nlen == 4 && memcmp(op->name, "stam", 4) == 0) {
                pat->stnm = 0;
            } else if (op->nlen == 6 && memcmp(op->name, "strict", 6) == 0) {
                pat->strict = 1;
            } else if (op->nlen == 7 && memcmp(op->name, "longest", 7) == 0) {
                each = 0;
            } else if (op->nlen == 4 && memcmp(op->name, "each", 4) == 0) {
                each = 1;
            } else {
                return fail(c, op->line, op->col, ".subsets() is not supported: use .each() or .longest()");
            }
            break;
        case OP_WINDOW:
        case OP_AGGREGATE:
        case OP_LATENESS:
            return fail(c, op->line, op->col, "a sequence stream cannot have a %.*s()", (int)op->nlen,
                        op->name);
        case OP_TO:
            if ((rc = set_to(c, s, op)) != 0) {
                return rc;
            }
            break;
        case OP_WATERMARK:
            if ((rc = watermark_arg(c, op, &c->watermark[si])) != 0) {
                return rc;
            }
            break;
        default:
            break;
        }
    }
    pat->longest = (uint8_t)!each;
    if (each) {
        for (uint32_t k = 0; k + 1 < pat->nsteps; k++) {
            if (pat->steps[k].kleene) {
                pat->each_slot = (int32_t)k;
            }
        }
    }
    if (pat->nabsent > 0 && pat->within < 0) {
        uint32_t line = as->line, col = as->col;
        if (pattern_source) {
            uint32_t sym;
            if (intern(c, as->steps[0].type, as->steps[0].tlen, &sym) != 0) {
                return VPL_ENOMEM;
            }
            line = c->ast->patterns[c->decl_idx[sym]].line;
            col = c->ast->patterns[c->decl_idx[sym]].col;
        }
        return fail(c, line, col, "an absence (-> NOT X) needs a time bound: add 'within' or .within()");
    }
    s->timed = pat->within >= 0;
    pat->types = c->reads[si];
    pat->ntypes = c->nreads[si];
    /* Copy the read set into the arena: c->reads is freed after compiling. */
    uint32_t *types = alloc(c, pat->ntypes * sizeof(*types));
    if (types == NULL) {
        return nomem(c);
    }
    memcpy(types, pat->types, pat->ntypes * sizeof(*types));
    pat->types = types;
    return 0;
}

static int compile_flow(struct compiler *c, uint32_t si)
{
    const struct ast_stream *as = &c->ast->streams[si];
    struct stream *s = &c->prog->streams[si];
    const struct ast_step *src = &as->steps[0];
    int rc = as->timer ? timer_source(c, si, &s->src_type)
                       : resolve_type(c, si, src->type, src->tlen, src->line, src->col, &s->src_type);
    if (rc != 0) {
        return rc;
    }
    s->nsrcs = as->nmerge ? as->nmerge : 1;
    if ((s->srcs = alloc(c, s->nsrcs * sizeof(*s->srcs))) == NULL) {
        return nomem(c);
    }
    s->srcs[0] = s->src_type;
    for (uint32_t k = 1; k < as->nmerge; k++) {
        const struct ast_step *m = &as->merge[k];
        if ((rc = resolve_type(c, si, m->type, m->tlen, m->line, m->col, &s->srcs[k])) != 0) {
            return rc;
        }
    }
    s->pre = alloc(c, (as->nops + 1) * sizeof(*s->pre));
    s->post = alloc(c, (as->nops + 1) * sizeof(*s->post));
    if (s->pre == NULL || s->post == NULL) {
        return nomem(c);
    }
    struct scope sc = {.ctx = CX_EVENT, .self = src->alias, .self_len = src->alen};
    struct stage *stages = s->pre;
    uint32_t *nst = &s->npre;
    if (src->pred != NULL) {
        struct stage *st = &stages[(*nst)++];
        st->kind = SG_FILTER;
        st->ctx = CX_EVENT;
        st->n = 1;
        st->e = alloc(c, sizeof(*st->e));
        if (st->e == NULL) {
            return nomem(c);
        }
        st->e[0] = src->pred;
        if ((rc = check_expr(&c->ck, src->pred, &sc)) != 0) {
            return rc;
        }
    }
    uint32_t partition = SYM_NONE;
    const struct ast_op *partition_op = NULL, *lateness_op = NULL;
    int64_t lateness = -1;
    for (uint32_t i = 0; i < as->nops; i++) {
        const struct ast_op *op = &as->ops[i];
        switch (op->kind) {
        case OP_WHERE:
        case OP_HAVING:
            if ((rc = filter_stage(c, op, &sc, &stages[(*nst)++])) != 0) {
                return rc;
            }
            break;
        case OP_AGGREGATE:
            if (sc.ctx != CX_WINDOW) {
                return fail(c, op->line, op->col, "aggregate() needs a window() right before it");
            }
            /* fall through */
        case OP_EMIT:
        case OP_SELECT:
            if ((rc = project_stage(c, op, &sc, &stages[(*nst)++])) != 0) {
                return rc;
            }
            s->emits |= op->kind == OP_EMIT;
            sc.ctx = CX_EVENT;
            sc.self = NULL;
            break;
        case OP_WINDOW:
            if (s->win != NULL) {
                return fail(c, op->line, op->col, "a stream has at most one window()");
            }
            if ((s->win = alloc(c, sizeof(*s->win))) == NULL) {
                return nomem(c);
            }
            if ((rc = build_window(c, op, s->win)) != 0) {
                return rc;
            }
            s->win->lateness = -1;
            s->timed = s->win->kind == W_TIME || s->win->kind == W_SESSION;
            stages = s->post;
            nst = &s->npost;
            sc.ctx = CX_WINDOW;
            sc.self = NULL;
            break;
        case OP_PARTITION:
            if ((rc = field_arg(c, op, &partition)) != 0) {
                return rc;
            }
            partition_op = op;
            break;
        case OP_WITHIN:
        case OP_NOT:
        case OP_MODE:
            return fail(c, op->line, op->col, ".%.*s() applies to sequences (A as a -> B as b)",
                        (int)op->nlen, op->name);
        case OP_TO:
            if ((rc = set_to(c, s, op)) != 0) {
                return rc;
            }
            break;
        case OP_WATERMARK:
            if ((rc = watermark_arg(c, op, &c->watermark[si])) != 0) {
                return rc;
            }
            break;
        case OP_LATENESS:
            if ((rc = duration_arg(c, op, &lateness)) != 0) {
                return rc;
            }
            lateness_op = op;
            break;
        default:
            break;
        }
    }
    if (lateness_op != NULL && (s->win == NULL || s->win->kind != W_TIME)) {
        return fail(c, lateness_op->line, lateness_op->col,
                    "allowed_lateness() applies to a time window: .window(D) after .watermark(out_of_order: D)");
    }
    if (lateness_op != NULL && c->watermark[si] <= 0) {
        return fail(c, lateness_op->line, lateness_op->col,
                    "allowed_lateness() needs .watermark(out_of_order: D) on the stream (its windows are "
                    "then aligned bins)");
    }
    if (s->win != NULL) {
        s->win->partition = partition;
        s->win->aligned = c->watermark[si] > 0;
        s->win->lateness = lateness;
        if (sc.ctx == CX_WINDOW) {
            return fail(c, as->line, as->col,
                        "stream '%.*s' has a window() but no aggregate() or emit() after it", (int)as->nlen,
                        as->name);
        }
    } else if (partition_op != NULL) {
        return fail(c, partition_op->line, partition_op->col, "partition_by() needs a sequence or a window");
    }
    return 0;
}

/* The alias slot (0 or 1) x reads alone, as a field of it or a member of one: -1 when
 * it reads anything else (a bare name reads whichever event came last). */
static int key_side(const struct expr *x)
{
    if (x->kind == X_ALIAS_FIELD) {
        return x->slot == 0 || x->slot == 1 ? x->slot : -1;
    }
    if ((x->kind == X_MEMBER || x->kind == X_MEMO) && x->n == 1) {
        return key_side(x->kid[0]);
    }
    return -1;
}

/* A join's hash key (struct window): an equality between the two sources that .on()
 * needs true, i.e. one of its top-level `and`s. */
static int join_keys(const struct expr *on, const struct expr *key[2])
{
    if (on->kind == X_MEMO && on->n == 1) {
        return join_keys(on->kid[0], key);
    }
    if (on->kind != X_BINARY || on->n != 2) {
        return 0;
    }
    if (on->op == 'a') {
        return join_keys(on->kid[0], key) || join_keys(on->kid[1], key);
    }
    int a = key_side(on->kid[0]), b = key_side(on->kid[1]);
    if (on->op != T_EQ || a < 0 || b < 0 || a == b) {
        return 0;
    }
    key[a] = on->kid[0];
    key[b] = on->kid[1];
    return 1;
}

/* join(A, B).on(cond).window(D) then .where/.select/.emit over the pairs, which read
 * the two events as A.field and B.field (docs/VPL.md, Streams). */
static int compile_join(struct compiler *c, uint32_t si)
{
    const struct ast_stream *as = &c->ast->streams[si];
    struct stream *s = &c->prog->streams[si];
    if (as->nmerge != 2) {
        return fail(c, as->steps[0].line, as->steps[0].col, "join() takes two streams, found %u", as->nmerge);
    }
    const struct ast_step *m = as->merge;
    if (m[0].tlen == m[1].tlen && memcmp(m[0].type, m[1].type, m[0].tlen) == 0) {
        return fail(c, m[1].line, m[1].col,
                    "join() of '%.*s' with itself: declare one side as a stream of its own "
                    "(join(A, stream A2 = A))",
                    (int)m[1].tlen, m[1].type);
    }
    s->nsrcs = 2;
    if ((s->srcs = alloc(c, 2 * sizeof(*s->srcs))) == NULL || (s->win = alloc(c, sizeof(*s->win))) == NULL ||
        (s->post = alloc(c, (as->nops + 1) * sizeof(*s->post))) == NULL) {
        return nomem(c);
    }
    for (uint32_t k = 0; k < 2; k++) {
        int rc = resolve_type(c, si, m[k].type, m[k].tlen, m[k].line, m[k].col, &s->srcs[k]);
        if (rc != 0) {
            return rc;
        }
    }
    s->src_type = s->srcs[0];
    struct pattern *lay = alloc(c, sizeof(*lay));
    struct alias *al = alloc(c, 2 * sizeof(*al));
    if (lay == NULL || al == NULL || (lay->steps = alloc(c, 2 * sizeof(*lay->steps))) == NULL) {
        return nomem(c);
    }
    lay->nsteps = 2;
    for (uint32_t k = 0; k < 2; k++) {
        al[k].name = m[k].type;
        al[k].len = m[k].tlen;
    }
    struct scope sc = {.ctx = CX_MATCH, .al = al, .nal = 2};
    s->win->kind = W_JOIN;
    s->win->partition = SYM_NONE;
    s->win->lateness = -1;
    s->win->layout = lay;
    int windowed = 0;
    for (uint32_t i = 0; i < as->nops; i++) {
        const struct ast_op *op = &as->ops[i];
        int rc = 0;
        if (op->kind == OP_ON || op->kind == OP_WINDOW) {
            if (windowed) {
                return fail(c, op->line, op->col, "join(...) takes .on(condition) and .window(D) first");
            }
            if (op->kind == OP_ON) {
                if (s->win->on != NULL || op->nargs != 1 || op->args[0].name != NULL) {
                    return fail(c, op->line, op->col, "join(...) takes one .on(condition)");
                }
                s->win->on = op->args[0].e;
                rc = check_expr(&c->ck, s->win->on, &sc);
            } else {
                struct window w;
                memset(&w, 0, sizeof(w));
                if ((rc = build_window(c, op, &w)) == 0 && w.kind != W_TIME) {
                    return fail(c, op->line, op->col, "a join's window is a duration: .window(5m)");
                }
                s->win->size = w.size;
                windowed = s->win->on != NULL;
                if (!windowed && rc == 0) {
                    return fail(c, op->line, op->col, "join(...) takes .on(condition) before .window(D)");
                }
            }
        } else if (!windowed) {
            return fail(c, op->line, op->col, "join(...) takes .on(condition) and .window(D) first");
        } else {
            switch (op->kind) {
            case OP_WHERE:
            case OP_HAVING:
                rc = filter_stage(c, op, &sc, &s->post[s->npost++]);
                break;
            case OP_EMIT:
            case OP_SELECT:
                rc = project_stage(c, op, &sc, &s->post[s->npost++]);
                s->emits |= op->kind == OP_EMIT;
                sc.ctx = CX_EVENT;
                sc.al = NULL;
                sc.nal = 0;
                break;
            case OP_TO:
                rc = set_to(c, s, op);
                break;
            case OP_NOOP:
                break;
            default:
                return fail(c, op->line, op->col,
                            ".%.*s() does not apply to a join: use where, select or emit", (int)op->nlen,
                            op->name);
            }
        }
        if (rc != 0) {
            return rc;
        }
    }
    if (!windowed) {
        return fail(c, as->line, as->col, "join(...) needs .on(condition) and .window(D)");
    }
    join_keys(s->win->on, s->win->key);
    return 0;
}

/* Depth-first over the streams a stream reads: computes its root input types (whose
 * clocks drive its windows and deadlines) and a topological order. */
static int visit(struct compiler *c, uint32_t si, uint32_t depth)
{
    struct vpl_program *p = c->prog;
    struct stream *s = &p->streams[si];
    if (c->state[si] == 2) {
        return 0;
    }
    const struct ast_stream *as = &c->ast->streams[si];
    if (c->state[si] == 1) {
        return fail(c, as->line, as->col, "stream '%s' reads its own output", s->name);
    }
    if (depth > MAX_CHAIN) { /* the path being walked is itself a chain */
        return fail(c, as->line, as->col, "streams are chained more than %d deep", MAX_CHAIN);
    }
    c->state[si] = 1;
    c->chain[si] = 1;
    uint32_t n = 0, cap = 0;
    uint32_t *roots = NULL;
    for (uint32_t i = 0; i < c->nreads[si]; i++) {
        uint32_t t = c->reads[si][i];
        const uint32_t *add = &t;
        uint32_t nadd = 1;
        if (c->type_stream[t] >= 0) {
            uint32_t up = (uint32_t)c->type_stream[t];
            int rc = visit(c, up, depth + 1);
            if (rc == 0 && c->chain[up] + 1 > MAX_CHAIN) {
                rc = fail(c, as->line, as->col, "streams are chained more than %d deep", MAX_CHAIN);
            }
            if (rc != 0) {
                free(roots);
                return rc;
            }
            if (c->chain[up] + 1 > c->chain[si]) {
                c->chain[si] = c->chain[up] + 1;
            }
            add = p->streams[c->type_stream[t]].roots;
            nadd = p->streams[c->type_stream[t]].nroots;
        }
        for (uint32_t k = 0; k < nadd; k++) {
            uint32_t j = 0;
            while (j < n && roots[j] != add[k]) {
                j++;
            }
            if (j < n) {
                continue;
            }
            if (n == cap) {
                cap = cap ? cap * 2 : 4;
                uint32_t *v = realloc(roots, cap * sizeof(*v));
                if (v == NULL) {
                    free(roots);
                    return nomem(c);
                }
                roots = v;
            }
            roots[n++] = add[k];
        }
    }
    s->roots = alloc(c, n * sizeof(*s->roots));
    if (s->roots == NULL) {
        free(roots);
        return nomem(c);
    }
    if (n) {
        memcpy(s->roots, roots, n * sizeof(*roots));
    }
    s->nroots = n;
    free(roots);
    c->state[si] = 2;
    c->topo[c->ntopo++] = si;
    return 0;
}

/* Per type, the streams that read it (timed = 0, in `order`), or the timed streams
 * its clock drives (timed = 1, in `order`, which is then topological). */
static int build_routes(struct compiler *c, struct route **out, const uint32_t *order, int timed)
{
    struct vpl_program *p = c->prog;
    struct route *r = alloc(c, p->ntypes * sizeof(*r));
    if (r == NULL) {
        return nomem(c);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < p->nstreams; i++) {
            uint32_t si = order[i];
            const struct stream *s = &p->streams[si];
            if (timed && !s->timed) {
                continue;
            }
            const uint32_t *ts = timed ? s->roots : c->reads[si];
            uint32_t nt = timed ? s->nroots : c->nreads[si];
            for (uint32_t k = 0; k < nt; k++) {
                struct route *rt = &r[ts[k]];
                if (pass == 1) {
                    rt->s[rt->n] = si;
                }
                rt->n++;
            }
        }
        if (pass == 0) {
            for (uint32_t t = 0; t < p->ntypes; t++) {
                if ((r[t].s = alloc(c, r[t].n * sizeof(*r[t].s))) == NULL) {
                    return nomem(c);
                }
                r[t].n = 0;
            }
        }
    }
    *out = r;
    return 0;
}

static int declare(struct compiler *c)
{
    const struct ast_program *ast = c->ast;
    struct {
        const char *name;
        uint32_t len, line, col;
        enum decl kind;
        uint32_t idx;
    } d;
    uint32_t total = ast->nevents + ast->nstreams + ast->npatterns;
    for (uint32_t i = 0; i < total; i++) {
        if (i < ast->nevents) {
            d.name = ast->events[i].name, d.len = ast->events[i].nlen, d.line = ast->events[i].line,
            d.col = ast->events[i].col, d.kind = D_EVENT, d.idx = i;
        } else if (i < ast->nevents + ast->nstreams) {
            d.idx = i - ast->nevents, d.name = ast->streams[d.idx].name, d.len = ast->streams[d.idx].nlen,
            d.line = ast->streams[d.idx].line, d.col = ast->streams[d.idx].col, d.kind = D_STREAM;
        } else {
            d.idx = i - ast->nevents - ast->nstreams, d.name = ast->patterns[d.idx].name,
            d.len = ast->patterns[d.idx].nlen, d.line = ast->patterns[d.idx].line,
            d.col = ast->patterns[d.idx].col, d.kind = D_PATTERN;
        }
        uint32_t sym;
        if (intern(c, d.name, d.len, &sym) != 0) {
            return VPL_ENOMEM;
        }
        if (sym >= c->ndecl) {
            uint32_t n = c->prog->syms.n + 16;
            uint8_t *k = realloc(c->decl, n);
            uint32_t *x = realloc(c->decl_idx, n * sizeof(*x));
            if (k != NULL) {
                c->decl = k;
            }
            if (x != NULL) {
                c->decl_idx = x;
            }
            if (k == NULL || x == NULL) {
                return nomem(c);
            }
            memset(c->decl + c->ndecl, 0, n - c->ndecl);
            c->ndecl = n;
        }
        if (c->decl[sym] != D_NONE) {
            return fail(c, d.line, d.col, "'%.*s' is declared twice", (int)d.len, d.name);
        }
        c->decl[sym] = (uint8_t)d.kind;
        c->decl_idx[sym] = d.idx;
        if (d.kind != D_PATTERN) {
            uint32_t type;
            if (add_type(c, sym, &type) != 0) {
                return VPL_ENOMEM;
            }
        }
    }
    for (uint32_t i = 0; i < ast->nconsts; i++) {
        for (uint32_t j = 0; j < i; j++) {
            if (ast->consts[i].nlen == ast->consts[j].nlen &&
                memcmp(ast->consts[i].name, ast->consts[j].name, ast->consts[i].nlen) == 0) {
                return fail(c, ast->consts[i].line, ast->consts[i].col, "constant '%.*s' is declared twice",
                            (int)ast->consts[i].nlen, ast->consts[i].name);
            }
        }
    }
    c->closed = ast->nevents > 0;
    return 0;
}

static int finish(struct compiler *c)
{
    struct vpl_program *p = c->prog;
    int rc;
    c->type_stream = malloc((p->ntypes ? p->ntypes : 1) * sizeof(*c->type_stream));
    c->state = calloc(p->nstreams ? p->nstreams : 1, 1);
    c->topo = malloc((p->nstreams ? p->nstreams : 1) * sizeof(*c->topo));
    c->chain = calloc(p->nstreams ? p->nstreams : 1, sizeof(*c->chain));
    if (c->type_stream == NULL || c->state == NULL || c->topo == NULL || c->chain == NULL) {
        return nomem(c);
    }
    for (uint32_t t = 0; t < p->ntypes; t++) {
        c->type_stream[t] = -1;
    }
    for (uint32_t i = 0; i < p->nstreams; i++) {
        c->type_stream[p->streams[i].type] = (int32_t)i;
    }
    for (uint32_t i = 0; i < p->nstreams; i++) {
        if ((rc = visit(c, i, 0)) != 0) {
            return rc;
        }
    }
    uint32_t *decl_order = alloc(c, (p->nstreams + 1) * sizeof(*decl_order));
    if (decl_order == NULL) {
        return nomem(c);
    }
    for (uint32_t i = 0; i < p->nstreams; i++) {
        decl_order[i] = i;
    }
    if ((rc = build_routes(c, &p->routes, decl_order, 0)) != 0 ||
        (rc = build_routes(c, &p->timed, c->topo, 1)) != 0) {
        return rc;
    }
    if ((p->lag = alloc(c, p->ntypes * sizeof(*p->lag))) == NULL) {
        return nomem(c);
    }
    for (uint32_t i = 0; i < p->nstreams; i++) {
        for (uint32_t k = 0; k < p->streams[i].nroots; k++) {
            if (c->watermark[i] > p->lag[p->streams[i].roots[k]]) {
                p->lag[p->streams[i].roots[k]] = c->watermark[i];
            }
        }
    }
    /* The routing tables are final: move type_sym into the arena. */
    uint32_t *ts = alloc(c, p->ntypes * sizeof(*ts));
    if (ts == NULL) {
        return nomem(c);
    }
    if (p->ntypes > 0) {
        memcpy(ts, p->type_sym, p->ntypes * sizeof(*ts));
    }
    free(p->type_sym);
    p->type_sym = ts;
    c->tcap = 0;

    const struct ast_program *ast = c->ast;
    for (uint32_t i = 0; i < ast->nstreams; i++) {
        p->nbindings += ast->streams[i].has_from;
        p->noutputs += p->streams[i].emits;
    }
    p->bindings = alloc(c, p->nbindings * sizeof(*p->bindings));
    p->outputs = alloc(c, p->noutputs * sizeof(*p->outputs));
    if (p->bindings == NULL || p->outputs == NULL) {
        return nomem(c);
    }
    size_t nb = 0, no = 0;
    for (uint32_t i = 0; i < ast->nstreams; i++) {
        const struct ast_stream *as = &ast->streams[i];
        if (as->has_from) {
            struct vpl_binding *b = &p->bindings[nb++];
            b->event_type = dup(c, as->steps[0].type, as->steps[0].tlen);
            b->connector = dup(c, as->from_conn, as->from_conn_len);
            b->topic = as->from_topic ? dup(c, as->from_topic, as->from_topic_len) : NULL;
            if (b->event_type == NULL || b->connector == NULL || (as->from_topic && !b->topic)) {
                return nomem(c);
            }
        }
        if (p->streams[i].emits) {
            struct vpl_output *o = &p->outputs[no++];
            o->stream = p->streams[i].name;
            o->connector = p->streams[i].connector;
            o->topic = p->streams[i].topic;
        }
    }
    return 0;
}

static int compile(struct compiler *c)
{
    struct vpl_program *p = c->prog;
    const struct ast_program *ast = c->ast;
    int rc;
    if ((rc = declare(c)) != 0) {
        return rc;
    }
    uint32_t n = ast->nstreams ? ast->nstreams : 1;
    p->streams = alloc(c, n * sizeof(*p->streams));
    c->reads = calloc(n, sizeof(*c->reads));
    c->nreads = calloc(n, sizeof(*c->nreads));
    c->capreads = calloc(n, sizeof(*c->capreads));
    c->watermark = calloc(n, sizeof(*c->watermark));
    if (p->streams == NULL || c->reads == NULL || c->nreads == NULL || c->capreads == NULL ||
        c->watermark == NULL) {
        return nomem(c);
    }
    p->nstreams = ast->nstreams;
    if ((rc = check_init(&c->ck, p, ast, c->err)) != 0 || (rc = check_fns(&c->ck)) != 0) {
        return rc;
    }
    for (uint32_t i = 0; i < ast->nstreams; i++) {
        const struct ast_stream *as = &ast->streams[i];
        struct stream *s = &p->streams[i];
        if ((s->name = dup(c, as->name, as->nlen)) == NULL) {
            return nomem(c);
        }
        if (intern(c, as->name, as->nlen, &s->sym) != 0) {
            return VPL_ENOMEM;
        }
        s->type = (uint32_t)p->syms.v[s->sym]->type;
        uint32_t src;
        if (intern(c, as->steps[0].type, as->steps[0].tlen, &src) != 0) {
            return VPL_ENOMEM;
        }
        int pattern_source = decl_of(c, src) == D_PATTERN;
        if (as->timer && as->nsteps > 1) {
            return fail(c, as->steps[1].line, as->steps[1].col,
                        "a timer() cannot start a sequence: make it a stream of its own and use that in a step");
        }
        if (as->nmerge > 0 && (pattern_source || as->nsteps > 1)) {
            const struct ast_step *at = as->nsteps > 1 ? &as->steps[1] : &as->steps[0];
            return fail(c, at->line, at->col,
                        "%s() reads types and streams: make the %s a stream of its own and use that",
                        as->join ? "join" : "merge", as->nsteps > 1 ? "sequence" : "pattern");
        }
        if (as->join) {
            rc = compile_join(c, i);
        } else if (pattern_source || as->nsteps > 1) {
            rc = compile_sequence(c, i, pattern_source);
        } else {
            rc = compile_flow(c, i);
        }
        if (rc != 0) {
            return rc;
        }
    }
    return finish(c);
}

static void compiler_fini(struct compiler *c)
{
    check_fini(&c->ck);
    free(c->decl);
    free(c->decl_idx);
    if (c->reads != NULL) {
        for (uint32_t i = 0; i < c->prog->nstreams; i++) {
            free(c->reads[i]);
        }
    }
    free(c->reads);
    free(c->nreads);
    free(c->capreads);
    free(c->watermark);
    free(c->type_stream);
    free(c->state);
    free(c->chain);
    free(c->topo);
    if (c->tcap != 0) {
        free(c->prog->type_sym); /* not moved into the arena: compile failed */
        c->prog->type_sym = NULL;
    }
}

/* Two 64-bit hashes of the text: a snapshot names the program it was taken with. */
static void set_digest(struct vpl_program *p, const char *src, size_t len)
{
    uint64_t a = hash_bytes(src, len);
    uint64_t b = 0x9e3779b97f4a7c15ull ^ len;
    for (size_t i = 0; i < len; i++) {
        b = (b ^ (unsigned char)src[i]) * 0x100000001b3ull + (b >> 29);
    }
    for (int i = 0; i < 8; i++) {
        p->digest[i] = (uint8_t)(a >> (8 * i));
        p->digest[8 + i] = (uint8_t)(b >> (8 * i));
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        p->digest_hex[2 * i] = hex[p->digest[i] >> 4];
        p->digest_hex[2 * i + 1] = hex[p->digest[i] & 15];
    }
    p->digest_hex[32] = '\0';
}

int vpl_program_compile(const char *src, size_t len, const char *filename, struct vpl_program **out,
                        struct vpl_error *err)
{
    (void)filename;
    *out = NULL;
    if (src == NULL && len > 0) {
        return vpl_err_at(err, VPL_EINVAL, 0, 0, "no program text");
    }
    struct vpl_program *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
    }
    arena_init(&p->arena, 64 * 1024);
    p->syms.arena = &p->arena;
    struct tokens toks = {0};
    struct ast_program ast;
    struct compiler c = {.prog = p, .ast = &ast, .err = err};
    int rc = lex(src ? src : "", len, &p->arena, &toks, err);
    if (rc == 0) {
        rc = parse_program(&toks, &p->arena, &ast, err);
    }
    if (rc == 0) {
        rc = compile(&c);
    }
    if (rc == 0 && ((rc = fold_program(p)) != 0 || (rc = keep_program(p)) != 0)) {
        vpl_err_at(err, rc, 0, 0, "out of memory");
    }
    compiler_fini(&c);
    free(toks.v);
    if (rc != 0) {
        vpl_program_destroy(p);
        return rc;
    }
    set_digest(p, src ? src : "", len);
    *out = p;
    return 0;
}

const char *vpl_program_digest(const struct vpl_program *prog)
{
    return prog->digest_hex;
}

void vpl_program_destroy(struct vpl_program *prog)
{
    if (prog == NULL) {
        return;
    }
    for (uint32_t i = 0; i < prog->nregex; i++) {
        regex_destroy(prog->regex[i]);
    }
    free(prog->regex);
    symtab_free(&prog->syms);
    arena_free(&prog->arena);
    free(prog);
}

size_t vpl_program_bindings(const struct vpl_program *prog, const struct vpl_binding **out)
{
    *out = prog->bindings;
    return prog->nbindings;
}

size_t vpl_program_timers(const struct vpl_program *prog)
{
    return prog->ntimers;
}

size_t vpl_program_outputs(const struct vpl_program *prog, const struct vpl_output **out)
{
    *out = prog->outputs;
    return prog->noutputs;
}
