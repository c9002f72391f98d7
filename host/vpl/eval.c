#define _GNU_SOURCE /* memmem */
#include "eval.h"

#include <math.h>
#include <string.h>

#include "builtins.h"
#include "lexer.h"

static const struct vpl_event no_event;

void *eval_alloc(const struct ectx *c, size_t n)
{
    void *p = arena_alloc(c->arena, n ? n : 1);
    if (p == NULL) {
        *c->oom = 1;
    }
    return p;
}

static struct vval field_of(const struct vpl_event *ev, uint32_t key)
{
    const struct vval *v = ev ? event_get(ev, key) : NULL;
    return v ? *v : v_missing();
}

/* Events of a Kleene slot as the current view sees them. */
static uint32_t closure_len(const struct ectx *c, int32_t slot)
{
    if (c->caps == NULL || c->caps[slot].clo == NULL) {
        return 0;
    }
    uint32_t n = c->caps[slot].clo->n;
    if (slot == c->view_slot && c->view_n < n) {
        n = c->view_n;
    }
    return n;
}

/* The event an alias names: a plain slot's capture, a closure's last event. A closure
 * that is still empty (a Kleene predicate's first entry reading its own alias) stands
 * for the previous step's event. */
static const struct vpl_event *alias_event(const struct ectx *c, int32_t slot)
{
    while (c->caps != NULL && slot >= 0) {
        if (!c->pat->steps[slot].kleene) {
            return c->caps[slot].ev;
        }
        uint32_t n = closure_len(c, slot);
        if (n > 0) {
            return c->caps[slot].clo->ev[n - 1];
        }
        slot--;
    }
    return NULL;
}

/* A float result beyond the largest double (an overflow, inf - inf) is missing, as a
 * division by zero is: JSON could not write it (docs/VPL.md, Expressions). */
static inline struct vval finite_or_missing(struct vval v)
{
    return v.t == V_FLOAT && !isfinite(v.u.f) ? v_missing() : v;
}

static struct vval arith(const struct ectx *c, uint8_t op, struct vval a, struct vval b)
{
    if (op == T_PLUS && a.t == V_STR && b.t == V_STR) {
        char *p = eval_alloc(c, (size_t)a.n + b.n);
        if (p == NULL || (uint64_t)a.n + b.n > UINT32_MAX) {
            return v_missing();
        }
        memcpy(p, a.u.s, a.n);
        memcpy(p + a.n, b.u.s, b.n);
        return v_str(p, a.n + b.n);
    }
    if (!v_num(&a) || !v_num(&b)) {
        return v_missing();
    }
    if (a.t == V_INT && b.t == V_INT) {
        int64_t x = a.u.i, y = b.u.i, r;
        switch (op) {
        case T_PLUS:
            if (!__builtin_add_overflow(x, y, &r)) {
                return v_int(r);
            }
            break;
        case T_MINUS:
            if (!__builtin_sub_overflow(x, y, &r)) {
                return v_int(r);
            }
            break;
        case T_STAR:
            if (!__builtin_mul_overflow(x, y, &r)) {
                return v_int(r);
            }
            break;
        case T_SLASH:
            if (y == 0) {
                return v_missing();
            }
            if (!(x == INT64_MIN && y == -1)) {
                return v_int(x / y);
            }
            break;
        case T_PERCENT:
            if (y == 0) {
                return v_missing();
            }
            return v_int(y == -1 ? 0 : x % y);
        case T_POW:
            if (y >= 0) {
                int64_t acc = 1, base = x;
                int ok = 1;
                for (int64_t e = y; e > 0 && ok; e >>= 1) {
                    if ((e & 1) && __builtin_mul_overflow(acc, base, &acc)) {
                        ok = 0;
                    }
                    if (e > 1 && __builtin_mul_overflow(base, base, &base)) {
                        ok = 0;
                    }
                }
                if (ok) {
                    return v_int(acc);
                }
            }
            break;
        }
        /* Overflow: fall through to floating point like a widening evaluator. */
    }
    double x = v_as_f(&a), y = v_as_f(&b);
    switch (op) {
    case T_PLUS:
        return finite_or_missing(v_float(x + y));
    case T_MINUS:
        return finite_or_missing(v_float(x - y));
    case T_STAR:
        return finite_or_missing(v_float(x * y));
    case T_SLASH:
        return y == 0.0 ? v_missing() : finite_or_missing(v_float(x / y));
    case T_PERCENT:
        return y == 0.0 ? v_missing() : finite_or_missing(v_float(fmod(x, y)));
    case T_POW:
        return finite_or_missing(v_float(pow(x, y)));
    }
    return v_missing();
}

/* `a in b`: 1, 0, or -1 when b is not something to search. */
static int contains(struct vval a, struct vval b)
{
    if (a.t == V_MISSING) {
        return -1;
    }
    if (b.t == V_ARR) {
        for (uint32_t i = 0; i < b.n; i++) {
            if (value_eq(&a, &b.u.a[i])) {
                return 1;
            }
        }
        return 0;
    }
    if (b.t == V_MAP && a.t == V_STR) {
        for (uint32_t i = 0; i < b.n; i++) {
            if (b.u.m[i].klen == a.n && memcmp(b.u.m[i].k, a.u.s, a.n) == 0) {
                return 1;
            }
        }
        return 0;
    }
    if (b.t == V_STR && a.t == V_STR) {
        if (a.n == 0) {
            return 1;
        }
        return a.n <= b.n && memmem(b.u.s, b.n, a.u.s, a.n) != NULL;
    }
    return -1;
}

/* a == b */
static inline int equals(struct vval a, struct vval b)
{
    if (a.t == V_STR && b.t == V_STR) { /* the common case, a field against a literal */
        return a.n == b.n && (a.n == 0 || memcmp(a.u.s, b.u.s, a.n) == 0);
    }
    return value_eq(&a, &b);
}

static __attribute__((noinline)) struct vval binary(const struct expr *x, const struct ectx *c)
{
    if (x->op == 'a') {
        return v_bool(eval_true(x->kid[0], c) && eval_true(x->kid[1], c));
    }
    if (x->op == 'o') {
        return v_bool(eval_true(x->kid[0], c) || eval_true(x->kid[1], c));
    }
    if (x->op == 'c') {
        struct vval a = eval(x->kid[0], c);
        return a.t == V_MISSING || a.t == V_NULL ? eval(x->kid[1], c) : a;
    }
    struct vval a = eval(x->kid[0], c);
    struct vval b = eval(x->kid[1], c);
    int ord;
    switch (x->op) {
    case T_EQ:
        return v_bool(equals(a, b));
    case T_NE:
        /* A missing operand makes every comparison false, != included. */
        return v_bool(a.t != V_MISSING && b.t != V_MISSING && !value_eq(&a, &b));
    case T_LT:
        return v_bool(value_order(&a, &b, &ord) && ord < 0);
    case T_LE:
        return v_bool(value_order(&a, &b, &ord) && ord <= 0);
    case T_GT:
        return v_bool(value_order(&a, &b, &ord) && ord > 0);
    case T_GE:
        return v_bool(value_order(&a, &b, &ord) && ord >= 0);
    case 'i':
        return v_bool(contains(a, b) == 1);
    case 'I':
        return v_bool(contains(a, b) == 0);
    default:
        return arith(c, x->op, a, b);
    }
}

/* Numeric aggregates share one pass: count, sum, min, max and the data for avg,
 * stddev (Welford) and ema. Non-numeric and missing values are skipped. */
struct numacc {
    uint64_t n;
    double sum, min, max, mean, m2, ema;
};

static void acc_add(struct numacc *a, double v, double alpha)
{
    a->n++;
    a->sum += v;
    if (a->n == 1) {
        a->min = a->max = a->ema = v;
    } else {
        a->min = v < a->min ? v : a->min;
        a->max = v > a->max ? v : a->max;
        a->ema = alpha * v + (1 - alpha) * a->ema;
    }
    double d = v - a->mean;
    a->mean += d / (double)a->n;
    a->m2 += d * (v - a->mean);
}

static struct vval acc_result(const struct numacc *a, uint32_t fn)
{
    switch (fn) {
    case AGG_SUM:
        return v_float(a->sum);
    case AGG_AVG:
        return a->n ? v_float(a->sum / (double)a->n) : v_null();
    case AGG_MIN:
        return a->n ? v_float(a->min) : v_null();
    case AGG_MAX:
        return a->n ? v_float(a->max) : v_null();
    case AGG_STDDEV:
        return a->n >= 2 ? v_float(sqrt(a->m2 / (double)(a->n - 1))) : v_null();
    case AGG_EMA:
        return a->n ? v_float(a->ema) : v_null();
    }
    return v_missing();
}

/* Aggregate fn over the values vals[0..n) (missing ones already dropped or not). */
static struct vval aggregate(const struct ectx *c, uint32_t fn, const struct vval *vals, uint32_t n,
                             uint64_t total, double alpha)
{
    switch (fn) {
    case AGG_COUNT:
        return v_int((int64_t)total);
    case AGG_FIRST:
        return n ? vals[0] : v_missing();
    case AGG_LAST:
        return n ? vals[n - 1] : v_missing();
    case AGG_COUNT_DISTINCT: {
        int64_t d = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t j = 0;
            while (j < i && !value_eq(&vals[i], &vals[j])) {
                j++;
            }
            d += j == i;
        }
        return v_int(d);
    }
    case AGG_COLLECT: {
        struct vval *a = eval_alloc(c, (size_t)n * sizeof(*a));
        if (a == NULL) {
            return v_missing();
        }
        memcpy(a, vals, (size_t)n * sizeof(*a));
        struct vval v = {.t = V_ARR, .n = n, .u.a = a};
        return v;
    }
    default: {
        struct numacc acc = {0};
        for (uint32_t i = 0; i < n; i++) {
            if (v_num(&vals[i])) {
                acc_add(&acc, v_as_f(&vals[i]), alpha);
            }
        }
        return acc_result(&acc, fn);
    }
    }
}

/* Window aggregate: kid[0] is evaluated on every event of the window. */
static struct vval window_agg(const struct expr *x, const struct ectx *c)
{
    double alpha = 0;
    if (x->id == AGG_EMA) {
        struct vval p = eval(x->kid[1], c);
        if (!v_num(&p) || v_as_f(&p) <= 0) {
            return v_missing();
        }
        alpha = 2.0 / (v_as_f(&p) + 1.0);
    }
    if (x->id == AGG_COUNT && x->n == 0) {
        return v_int(c->nwin);
    }
    struct vval *vals = eval_alloc(c, (size_t)c->nwin * sizeof(*vals));
    if (vals == NULL) {
        return v_missing();
    }
    struct ectx sub = *c;
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nwin; i++) {
        sub.ev = c->win[i];
        struct vval v = eval(x->kid[0], &sub);
        if (v.t != V_MISSING) {
            vals[n++] = v;
        }
    }
    return finite_or_missing(aggregate(c, x->id, vals, n, n, alpha));
}

/* Aggregate over a Kleene closure: count(xs), sum(xs.f), collect(xs.f), ... */
static struct vval kleene_agg(const struct expr *x, const struct ectx *c)
{
    uint32_t len = closure_len(c, x->slot);
    if (x->id2 == SYM_NONE) {
        return x->id == AGG_COUNT ? v_int(len) : v_missing();
    }
    struct vval *vals = eval_alloc(c, (size_t)len * sizeof(*vals));
    if (vals == NULL) {
        return v_missing();
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < len; i++) {
        struct vval v = field_of(c->caps[x->slot].clo->ev[i], x->id2);
        if (v.t != V_MISSING) {
            vals[n++] = v;
        }
    }
    return finite_or_missing(aggregate(c, x->id, vals, n, n, 0));
}

static __attribute__((noinline)) struct vval call(const struct expr *x, const struct ectx *c)
{
    struct vval small[4];
    struct vval *args = x->n <= 4 ? small : eval_alloc(c, x->n * sizeof(*args));
    if (args == NULL) {
        return v_missing();
    }
    for (uint16_t i = 0; i < x->n; i++) {
        args[i] = eval(x->kid[i], c);
        if (args[i].t == V_MISSING) {
            args[i] = v_null(); /* a missing argument is null in its position */
        }
    }
    return finite_or_missing(builtins[x->id].fn(c, args, x->n, x));
}

static struct vval member(struct vval o, const char *k, uint32_t klen)
{
    if (o.t != V_MAP) {
        return v_missing();
    }
    for (uint32_t i = 0; i < o.n; i++) {
        if (o.u.m[i].klen == klen && memcmp(o.u.m[i].k, k, klen) == 0) {
            return o.u.m[i].v;
        }
    }
    return v_missing();
}

/* noinline, as binary and call: eval() jumps to them without a frame of its own. */
static __attribute__((noinline)) struct vval member_of(const struct expr *x, const struct ectx *c)
{
    return member(eval(x->kid[0], c), x->name, x->nlen);
}

static __attribute__((noinline)) struct vval cond(const struct expr *x, const struct ectx *c)
{
    return eval(x->kid[eval_true(x->kid[0], c) ? 1 : 2], c);
}

/* The if chain X_CASE stands for: the subject read once, compared as == compares. */
static __attribute__((noinline)) struct vval cases(const struct expr *x, const struct ectx *c)
{
    struct vval s = eval(x->kid[0], c);
    uint16_t i = 1;
    while (i + 1 < x->n && !equals(s, x->kid[i]->lit)) {
        i += 2;
    }
    return eval(x->kid[i + 1 < x->n ? i + 1 : i], c);
}

/* A subexpression several stages share (X_MEMO): computed the first time the context
 * needs it, then read back. */
static __attribute__((noinline)) struct vval memo(const struct expr *x, const struct ectx *c)
{
    struct memo *m = c->memo;
    if (m == NULL) {
        return eval(x->kid[0], c);
    }
    uint64_t bit = UINT64_C(1) << x->slot;
    if ((m->set & bit) == 0) {
        m->v[x->slot] = eval(x->kid[0], c);
        m->set |= bit;
    }
    return m->v[x->slot];
}

/* Runs the statement s of a fn body: 1 when it returned (*out is the value). */
static int exec(const struct expr *s, const struct ectx *c, struct vval *out)
{
    switch (s->kind) {
    case X_BLOCK:
        for (uint16_t i = 0; i < s->n; i++) {
            if (exec(s->kid[i], c, out)) {
                return 1;
            }
        }
        return 0;
    case X_LET:
        c->locals[s->slot] = eval(s->kid[0], c);
        return 0;
    case X_RETURN:
        *out = s->n ? eval(s->kid[0], c) : v_null();
        return 1;
    case X_IFSTMT: {
        uint16_t i = 0;
        for (; i + 1 < s->n; i += 2) {
            if (eval_true(s->kid[i], c)) {
                return exec(s->kid[i + 1], c, out);
            }
        }
        return i < s->n ? exec(s->kid[i], c, out) : 0;
    }
    default:
        return 0;
    }
}

/* A user fn: the arguments computed in the caller's context, then the body over a
 * frame of its own. A body that ends without `return` gives missing. */
static __attribute__((noinline)) struct vval fncall(const struct expr *x, const struct ectx *c)
{
    const struct ast_fn *f = x->aux;
    struct vval frame[FN_SLOTS];
    for (uint32_t i = 0; i < f->nslots; i++) {
        frame[i] = i < x->n ? eval(x->kid[i], c) : v_missing();
    }
    struct ectx in = *c;
    in.locals = frame;
    struct vval r = v_missing();
    exec(f->body, &in, &r);
    return r;
}

/* filter, map, any or all of an array through a lambda: the body is evaluated once per
 * element, with the element as the lambda's parameter (its slot in a copy of the
 * enclosing lambdas' parameters). Anything but an array gives missing. */
static __attribute__((noinline)) struct vval hof(const struct expr *x, const struct ectx *c)
{
    struct vval a = eval(x->kid[0], c);
    if (a.t != V_ARR) {
        return v_missing();
    }
    const struct expr *lam = x->kid[1];
    struct vval params[LAMBDA_MAX];
    if (c->params != NULL && lam->slot > 0) {
        memcpy(params, c->params, (size_t)lam->slot * sizeof(*params));
    }
    struct ectx in = *c;
    in.params = params;
    struct vval *out = NULL;
    if (x->op == 'f' || x->op == 'm') {
        if ((out = eval_alloc(c, (a.n ? a.n : 1) * sizeof(*out))) == NULL) {
            return v_missing();
        }
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < a.n; i++) {
        params[lam->slot] = a.u.a[i];
        struct vval v = eval(lam->kid[0], &in);
        int yes = v.t == V_BOOL && v.u.i;
        switch (x->op) {
        case 'f':
            if (yes) {
                out[n++] = a.u.a[i];
            }
            break;
        case 'm':
            out[n++] = v.t == V_MISSING ? v_null() : v; /* as an array literal keeps its place */
            break;
        case 'a':
            if (yes) {
                return v_bool(1);
            }
            break;
        default:
            if (!yes) {
                return v_bool(0);
            }
            break;
        }
    }
    if (out == NULL) {
        return v_bool(x->op == 'A');
    }
    struct vval r = {.t = V_ARR, .n = n, .u.a = out};
    return r;
}

/* Every kind of node but those eval() answers or dispatches itself. */
static __attribute__((noinline)) struct vval eval_node(const struct expr *x, const struct ectx *c)
{
    switch (x->kind) {
    case X_ALIAS_FIELD:
        return field_of(alias_event(c, x->slot), x->id);
    case X_KLEENE_LEN:
        return v_int(closure_len(c, x->slot));
    case X_KLEENE_AT: {
        struct vval i = eval(x->kid[0], c);
        uint32_t n = closure_len(c, x->slot);
        if (i.t != V_INT || i.u.i < 0 || (uint64_t)i.u.i >= n) {
            return v_missing();
        }
        return field_of(c->caps[x->slot].clo->ev[i.u.i], x->id);
    }
    case X_KLEENE_AGG:
        return kleene_agg(x, c);
    case X_AGG:
        return window_agg(x, c);
    case X_LOCAL:
        return c->locals[x->slot];
    case X_FNCALL:
        return fncall(x, c);
    case X_HOF:
        return hof(x, c);
    case X_PARAM:
        return c->params != NULL ? c->params[x->slot] : v_missing();
    case X_INDEX: {
        struct vval o = eval(x->kid[0], c);
        struct vval i = eval(x->kid[1], c);
        if (o.t == V_ARR && i.t == V_INT && i.u.i >= 0 && (uint64_t)i.u.i < o.n) {
            return o.u.a[i.u.i];
        }
        if (o.t == V_MAP && i.t == V_STR) {
            return member(o, i.u.s, i.n);
        }
        return v_missing();
    }
    case X_UNARY: {
        struct vval v = eval(x->kid[0], c);
        if (x->op == 'n') {
            return v.t == V_BOOL ? v_bool(!v.u.i) : v_missing();
        }
        if (v.t == V_INT) {
            return v.u.i == INT64_MIN ? v_float(-(double)v.u.i) : v_int(-v.u.i);
        }
        return v.t == V_FLOAT ? v_float(-v.u.f) : v_missing();
    }
    case X_ARRAY: {
        struct vval *a = eval_alloc(c, x->n * sizeof(*a));
        if (a == NULL) {
            return v_missing();
        }
        for (uint16_t i = 0; i < x->n; i++) {
            a[i] = eval(x->kid[i], c);
            if (a[i].t == V_MISSING) {
                a[i] = v_null();
            }
        }
        struct vval v = {.t = V_ARR, .n = x->n, .u.a = a};
        return v;
    }
    case X_MAP: {
        uint32_t n = x->n / 2;
        struct vkv *m = eval_alloc(c, n * sizeof(*m));
        if (m == NULL) {
            return v_missing();
        }
        for (uint32_t i = 0; i < n; i++) {
            m[i].k = x->kid[2 * i]->lit.u.s;
            m[i].klen = x->kid[2 * i]->lit.n;
            m[i].v = eval(x->kid[2 * i + 1], c);
            if (m[i].v.t == V_MISSING) {
                m[i].v = v_null();
            }
        }
        struct vval v = {.t = V_MAP, .n = n, .u.m = m};
        return v;
    }
    default:
        /* X_NAME, X_CALL: the checker resolves every one of them. */
        return v_missing();
    }
}

/* Literals and fields are most of the nodes evaluated, calls, operators, members and
 * conditionals most of the rest: answering them here, or jumping to a function of their
 * own, spares them eval_node's frame (six saved registers, room for every kind's locals
 * and a jump table). */
struct vval eval(const struct expr *x, const struct ectx *c)
{
    switch (x->kind) {
    case X_LIT:
        return x->lit;
    case X_FIELD:
        return field_of(c->ev ? c->ev : &no_event, x->id);
    case X_FUNC:
        return call(x, c);
    case X_BINARY:
        return binary(x, c);
    case X_MEMBER:
        return member_of(x, c);
    case X_IF:
        return cond(x, c);
    case X_CASE:
        return cases(x, c);
    case X_MEMO:
        return memo(x, c);
    default:
        return eval_node(x, c);
    }
}

int eval_true(const struct expr *x, const struct ectx *c)
{
    struct vval v = eval(x, c);
    return v.t == V_BOOL && v.u.i;
}
