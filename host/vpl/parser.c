#include "parser.h"

#include <stdio.h>
#include <string.h>

struct parser {
    const struct token *t; /* tokens, ending with T_EOF */
    size_t pos;
    struct arena *a;
    struct vpl_error *err;
    int depth;
    int in_step; /* parsing a step filter: `.ident(` ends the expression */
    int failed;
    uint32_t nslots; /* locals of the fn being parsed */
    int in_merge;    /* parsing a stream declared inside merge(): no merge of its own */
};

static const struct token *cur(const struct parser *p)
{
    return &p->t[p->pos];
}

static const struct token *ahead(const struct parser *p, size_t k)
{
    size_t i = p->pos;
    while (k-- > 0 && p->t[i].t != T_EOF) {
        i++;
    }
    return &p->t[i];
}

static void next(struct parser *p)
{
    if (p->t[p->pos].t != T_EOF) {
        p->pos++;
    }
}

static int is_word(const struct token *tk, const char *w)
{
    return tk->t == T_IDENT && tk->len == strlen(w) && memcmp(tk->s, w, tk->len) == 0;
}

/* Words that cannot name a field inside an expression. */
static int is_reserved(const struct token *tk)
{
    static const char *words[] = {"and", "or", "not", "in", "if", "then", "else", "true", "false", "null"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (is_word(tk, words[i])) {
            return 1;
        }
    }
    return 0;
}

static void describe(const struct token *tk, char *out, size_t n)
{
    if (tk->t == T_IDENT || tk->t == T_QIDENT) {
        snprintf(out, n, "'%.*s'", (int)(tk->len > 40 ? 40 : tk->len), tk->s);
    } else if (tk->t == T_STRING) {
        snprintf(out, n, "string \"%.*s\"", (int)(tk->len > 40 ? 40 : tk->len), tk->s);
    } else {
        snprintf(out, n, "%s", tok_name((enum tok)tk->t));
    }
}

static int fail_at(struct parser *p, const struct token *tk, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(struct parser *p, const struct token *tk, const char *fmt, ...)
{
    if (p->failed) {
        return VPL_ESYNTAX;
    }
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    p->failed = 1;
    return vpl_err_at(p->err, VPL_ESYNTAX, tk->line, tk->col, "%s", msg);
}

/* "expected <what>, found <token>" at the current token. */
static int expected(struct parser *p, const char *what)
{
    char found[80];
    describe(cur(p), found, sizeof(found));
    return fail_at(p, cur(p), "expected %s, found %s", what, found);
}

static int oom(struct parser *p)
{
    if (!p->failed) {
        p->failed = 1;
        vpl_err_at(p->err, VPL_ENOMEM, 0, 0, "out of memory");
    }
    return VPL_ENOMEM;
}

static int accept(struct parser *p, enum tok t)
{
    if (cur(p)->t != t) {
        return 0;
    }
    next(p);
    return 1;
}

static int accept_word(struct parser *p, const char *w)
{
    if (!is_word(cur(p), w)) {
        return 0;
    }
    next(p);
    return 1;
}

static int expect(struct parser *p, enum tok t, const char *what)
{
    if (accept(p, t)) {
        return 0;
    }
    return expected(p, what);
}

/* An arena array that grows by doubling; the old copy stays in the arena, which at
 * most doubles the memory of the (small) program. */
static void *grow(struct parser *p, void *arr, uint32_t n, uint32_t *cap, size_t elem)
{
    if (n < *cap) {
        return arr;
    }
    uint32_t nc = *cap ? *cap * 2 : 4;
    void *v = arena_alloc(p->a, nc * elem);
    if (v == NULL) {
        oom(p);
        return NULL;
    }
    if (n > 0) {
        memcpy(v, arr, n * elem);
    }
    *cap = nc;
    return v;
}

/* ---- Expressions -------------------------------------------------------------------- */

static struct expr *parse_expr(struct parser *p);

static struct expr *node(struct parser *p, enum expr_kind k, const struct token *at, uint16_t n)
{
    struct expr *e = arena_alloc(p->a, sizeof(*e));
    struct expr **kid = n ? arena_alloc(p->a, n * sizeof(*kid)) : NULL;
    if (e == NULL || (n && kid == NULL)) {
        oom(p);
        return NULL;
    }
    memset(e, 0, sizeof(*e));
    e->kind = (uint8_t)k;
    e->n = n;
    e->line = at->line;
    e->col = at->col;
    e->kid = kid;
    e->height = 1;
    return e;
}

/* Sets e's height from its kids; fails when the tree is too deep to evaluate. */
static struct expr *sealed(struct parser *p, struct expr *e)
{
    if (e == NULL) {
        return NULL;
    }
    for (uint16_t i = 0; i < e->n; i++) {
        if (e->kid[i] != NULL && e->kid[i]->height + 1 > e->height) {
            e->height = (uint16_t)(e->kid[i]->height + 1);
        }
    }
    if (e->height > VPL_MAX_DEPTH) {
        struct token at = {.line = e->line, .col = e->col};
        fail_at(p, &at, "expression nested deeper than %d levels", VPL_MAX_DEPTH);
        return NULL;
    }
    return e;
}

static int enter(struct parser *p)
{
    if (++p->depth > VPL_MAX_DEPTH) {
        fail_at(p, cur(p), "expression nested deeper than %d levels", VPL_MAX_DEPTH);
        return 0;
    }
    return 1;
}

static struct expr *binary(struct parser *p, uint8_t op, const struct token *at, struct expr *l,
                           struct expr *r)
{
    if (l == NULL || r == NULL) {
        return NULL;
    }
    struct expr *e = node(p, X_BINARY, at, 2);
    if (e == NULL) {
        return NULL;
    }
    e->op = op;
    e->kid[0] = l;
    e->kid[1] = r;
    return sealed(p, e);
}

/* `(` [expr {, expr}] `)` after a callee; `first` is the receiver of a method call. */
/* The tokens of `name =>` or `(name) =>` that start a lambda (the two characters of
 * `=>` written together), or 0. */
static size_t lambda_head(const struct parser *p)
{
    size_t k = cur(p)->t == T_LPAREN ? 1 : 0;
    const struct token *name = ahead(p, k), *eq = ahead(p, 2 * k + 1), *gt = ahead(p, 2 * k + 2);
    if (name->t != T_IDENT || is_reserved(name) || (k && ahead(p, 2)->t != T_RPAREN)) {
        return 0;
    }
    return eq->t == T_ASSIGN && gt->t == T_GT && gt->line == eq->line && gt->col == eq->col + 1 ? 2 * k + 3 : 0;
}

/* name => body: an argument of a call; the checker says where one may be. */
static struct expr *parse_lambda(struct parser *p)
{
    size_t head = lambda_head(p);
    const struct token *name = ahead(p, head == 5 ? 1 : 0);
    p->pos += head;
    if (!enter(p)) {
        return NULL;
    }
    struct expr *e = node(p, X_LAMBDA, name, 1);
    if (e != NULL) {
        e->name = name->s;
        e->nlen = name->len;
        e->kid[0] = parse_expr(p);
        e = e->kid[0] ? sealed(p, e) : NULL;
    }
    p->depth--;
    return e;
}

static struct expr *parse_call(struct parser *p, const struct token *name, struct expr *first)
{
    struct expr **args = NULL;
    uint32_t n = 0, cap = 0;
    if (first != NULL) {
        if ((args = grow(p, args, n, &cap, sizeof(*args))) == NULL) {
            return NULL;
        }
        args[n++] = first;
    }
    next(p); /* ( */
    if (!accept(p, T_RPAREN)) {
        do {
            if (n == 64) {
                fail_at(p, cur(p), "too many arguments (at most 64)");
                return NULL;
            }
            if ((args = grow(p, args, n, &cap, sizeof(*args))) == NULL ||
                (args[n++] = lambda_head(p) ? parse_lambda(p) : parse_expr(p)) == NULL) {
                return NULL;
            }
        } while (accept(p, T_COMMA));
        if (expect(p, T_RPAREN, "',' or ')' after an argument") != 0) {
            return NULL;
        }
    }
    struct expr *e = node(p, X_CALL, name, (uint16_t)n);
    if (e == NULL) {
        return NULL;
    }
    e->name = name->s;
    e->nlen = name->len;
    if (n > 0) {
        memcpy(e->kid, args, n * sizeof(*args));
    }
    return sealed(p, e);
}

static struct expr *literal(struct parser *p, const struct token *tk, struct vval v)
{
    struct expr *e = node(p, X_LIT, tk, 0);
    if (e != NULL) {
        e->lit = v;
    }
    next(p);
    return e;
}

static struct expr *parse_if(struct parser *p)
{
    const struct token *at = cur(p);
    next(p); /* if */
    struct expr *e = node(p, X_IF, at, 3);
    if (e == NULL || (e->kid[0] = parse_expr(p)) == NULL) {
        return NULL;
    }
    if (!accept_word(p, "then")) {
        expected(p, "'then'");
        return NULL;
    }
    if ((e->kid[1] = parse_expr(p)) == NULL) {
        return NULL;
    }
    if (!accept_word(p, "else")) {
        expected(p, "'else' (an if expression needs both branches)");
        return NULL;
    }
    if ((e->kid[2] = parse_expr(p)) == NULL) {
        return NULL;
    }
    return sealed(p, e);
}

static struct expr *parse_list(struct parser *p, enum expr_kind kind, enum tok close)
{
    const struct token *at = cur(p);
    next(p); /* [ or { */
    struct expr **items = NULL;
    uint32_t n = 0, cap = 0;
    if (!accept(p, close)) {
        do {
            if (n + 2 > UINT16_MAX) {
                fail_at(p, cur(p), "too many elements in a literal");
                return NULL;
            }
            if (kind == X_MAP) {
                const struct token *k = cur(p);
                if (k->t != T_STRING && k->t != T_IDENT && k->t != T_QIDENT) {
                    expected(p, "a key (string or name)");
                    return NULL;
                }
                if ((items = grow(p, items, n, &cap, sizeof(*items))) == NULL ||
                    (items[n++] = literal(p, k, v_str(k->s, k->len))) == NULL) {
                    return NULL;
                }
                if (expect(p, T_COLON, "':' after a map key") != 0) {
                    return NULL;
                }
            }
            if ((items = grow(p, items, n, &cap, sizeof(*items))) == NULL ||
                (items[n++] = parse_expr(p)) == NULL) {
                return NULL;
            }
        } while (accept(p, T_COMMA));
        if (expect(p, close, close == T_RBRACK ? "',' or ']'" : "',' or '}'") != 0) {
            return NULL;
        }
    }
    struct expr *e = node(p, kind, at, (uint16_t)n);
    if (e == NULL) {
        return NULL;
    }
    if (n > 0) {
        memcpy(e->kid, items, n * sizeof(*items));
    }
    return sealed(p, e);
}

static struct expr *parse_primary(struct parser *p)
{
    const struct token *tk = cur(p);
    switch (tk->t) {
    case T_INT:
    case T_TIMESTAMP:
        return literal(p, tk, v_int(tk->i));
    case T_DURATION: {
        struct expr *e = literal(p, tk, v_int(tk->i));
        if (e != NULL) {
            e->op = 'd'; /* milliseconds, written as a duration */
        }
        return e;
    }
    case T_FLOAT:
        return literal(p, tk, v_float(tk->f));
    case T_STRING:
        return literal(p, tk, v_str(tk->s, tk->len));
    case T_LPAREN: {
        next(p);
        struct expr *e = parse_expr(p);
        if (e == NULL || expect(p, T_RPAREN, "')'") != 0) {
            return NULL;
        }
        return e;
    }
    case T_LBRACK:
        return parse_list(p, X_ARRAY, T_RBRACK);
    case T_LBRACE:
        return parse_list(p, X_MAP, T_RBRACE);
    case T_QIDENT: {
        struct expr *e = node(p, X_NAME, tk, 0);
        if (e != NULL) {
            e->name = tk->s;
            e->nlen = tk->len;
        }
        next(p);
        return e;
    }
    case T_IDENT:
        if (is_word(tk, "true")) {
            return literal(p, tk, v_bool(1));
        }
        if (is_word(tk, "false")) {
            return literal(p, tk, v_bool(0));
        }
        if (is_word(tk, "null")) {
            return literal(p, tk, v_null());
        }
        if (is_word(tk, "if")) {
            return parse_if(p);
        }
        if (is_reserved(tk)) {
            break;
        }
        if (ahead(p, 1)->t == T_LPAREN) {
            next(p);
            return parse_call(p, tk, NULL);
        } else {
            struct expr *e = node(p, X_NAME, tk, 0);
            if (e != NULL) {
                e->name = tk->s;
                e->nlen = tk->len;
            }
            next(p);
            return e;
        }
    default:
        break;
    }
    expected(p, "an expression");
    return NULL;
}

static struct expr *parse_postfix(struct parser *p)
{
    struct expr *e = parse_primary(p);
    while (e != NULL) {
        const struct token *at = cur(p);
        if (at->t == T_DOT || at->t == T_QDOT) {
            const struct token *f = ahead(p, 1);
            if (f->t != T_IDENT && f->t != T_QIDENT) {
                next(p);
                expected(p, "a field name after '.'");
                return NULL;
            }
            if (at->t == T_DOT && f->t == T_IDENT && ahead(p, 2)->t == T_LPAREN) {
                if (p->in_step) {
                    break; /* `.ident(` starts the next stream operator */
                }
                next(p);
                next(p);
                e = parse_call(p, f, e);
                continue;
            }
            next(p);
            next(p);
            struct expr *m = node(p, X_MEMBER, f, 1);
            if (m == NULL) {
                return NULL;
            }
            m->kid[0] = e;
            m->name = f->s;
            m->nlen = f->len;
            e = sealed(p, m);
        } else if (at->t == T_LBRACK) {
            next(p);
            struct expr *ix = node(p, X_INDEX, at, 2);
            if (ix == NULL) {
                return NULL;
            }
            ix->kid[0] = e;
            if ((ix->kid[1] = parse_expr(p)) == NULL || expect(p, T_RBRACK, "']'") != 0) {
                return NULL;
            }
            e = sealed(p, ix);
        } else if (at->t == T_ASSIGN && ahead(p, 1)->t == T_GT && ahead(p, 1)->line == at->line &&
                   ahead(p, 1)->col == at->col + 1) {
            fail_at(p, at, "a lambda (x => ...) is an argument of filter(), map(), any() or all()");
            return NULL;
        } else {
            break;
        }
    }
    return e;
}

static struct expr *parse_unary(struct parser *p)
{
    const struct token *at = cur(p);
    if (at->t != T_MINUS) {
        return parse_postfix(p);
    }
    if (!enter(p)) {
        return NULL;
    }
    next(p);
    struct expr *e = node(p, X_UNARY, at, 1);
    if (e != NULL) {
        e->op = T_MINUS;
        e->kid[0] = parse_unary(p);
        e = e->kid[0] ? sealed(p, e) : NULL;
    }
    p->depth--;
    return e;
}

static struct expr *parse_pow(struct parser *p)
{
    struct expr *l = parse_unary(p);
    if (l == NULL || cur(p)->t != T_POW) {
        return l;
    }
    const struct token *at = cur(p);
    next(p);
    if (!enter(p)) {
        return NULL;
    }
    struct expr *r = parse_pow(p); /* right-associative */
    p->depth--;
    return binary(p, T_POW, at, l, r);
}

static struct expr *parse_mul(struct parser *p)
{
    struct expr *e = parse_pow(p);
    while (e != NULL) {
        const struct token *at = cur(p);
        if (at->t != T_STAR && at->t != T_SLASH && at->t != T_PERCENT) {
            break;
        }
        next(p);
        e = binary(p, at->t, at, e, parse_pow(p));
    }
    return e;
}

static struct expr *parse_add(struct parser *p)
{
    struct expr *e = parse_mul(p);
    while (e != NULL) {
        const struct token *at = cur(p);
        if (at->t != T_PLUS && at->t != T_MINUS) {
            break;
        }
        next(p);
        e = binary(p, at->t, at, e, parse_mul(p));
    }
    return e;
}

/* a ?? b: a unless it is missing or null. Looser than arithmetic, tighter than the
 * comparisons (`m[k] ?? 0 > 5` compares the fallback), right-associative. */
static struct expr *parse_coalesce(struct parser *p)
{
    struct expr *l = parse_add(p);
    if (l == NULL || cur(p)->t != T_QQ) {
        return l;
    }
    const struct token *at = cur(p);
    next(p);
    if (!enter(p)) {
        return NULL;
    }
    struct expr *r = parse_coalesce(p);
    p->depth--;
    return binary(p, 'c', at, l, r);
}

static struct expr *parse_cmp(struct parser *p)
{
    struct expr *l = parse_coalesce(p);
    if (l == NULL) {
        return NULL;
    }
    const struct token *at = cur(p);
    uint8_t op = 0;
    switch (at->t) {
    case T_EQ:
    case T_NE:
    case T_LT:
    case T_LE:
    case T_GT:
    case T_GE:
        op = at->t;
        next(p);
        break;
    default:
        if (is_word(at, "in")) {
            op = 'i';
            next(p);
        } else if (is_word(at, "not") && is_word(ahead(p, 1), "in")) {
            op = 'I';
            next(p);
            next(p);
        }
    }
    if (op == 0) {
        return l;
    }
    struct expr *e = binary(p, op, at, l, parse_coalesce(p));
    const struct token *again = cur(p);
    if (e != NULL && (again->t == T_EQ || again->t == T_NE || again->t == T_LT || again->t == T_LE ||
                      again->t == T_GT || again->t == T_GE)) {
        fail_at(p, again, "comparisons do not chain: use 'and' (a < b and b < c)");
        return NULL;
    }
    return e;
}

static struct expr *parse_not(struct parser *p)
{
    const struct token *at = cur(p);
    if (!is_word(at, "not") || is_word(ahead(p, 1), "in")) {
        return parse_cmp(p);
    }
    if (!enter(p)) {
        return NULL;
    }
    next(p);
    struct expr *e = node(p, X_UNARY, at, 1);
    if (e != NULL) {
        e->op = 'n';
        e->kid[0] = parse_not(p);
        e = e->kid[0] ? sealed(p, e) : NULL;
    }
    p->depth--;
    return e;
}

static struct expr *parse_and(struct parser *p)
{
    struct expr *e = parse_not(p);
    while (e != NULL && is_word(cur(p), "and")) {
        const struct token *at = cur(p);
        next(p);
        e = binary(p, 'a', at, e, parse_not(p));
    }
    return e;
}

static struct expr *parse_or(struct parser *p)
{
    struct expr *e = parse_and(p);
    while (e != NULL && is_word(cur(p), "or")) {
        const struct token *at = cur(p);
        next(p);
        e = binary(p, 'o', at, e, parse_and(p));
    }
    return e;
}

static struct expr *parse_expr(struct parser *p)
{
    if (!enter(p)) {
        return NULL;
    }
    struct expr *e = is_word(cur(p), "if") ? parse_if(p) : parse_or(p);
    p->depth--;
    return e;
}

/* A step filter: a full expression except that `.ident(` ends it. */
static struct expr *parse_step_expr(struct parser *p)
{
    int was = p->in_step;
    p->in_step = 1;
    struct expr *e = parse_expr(p);
    p->in_step = was;
    return e;
}

/* ---- Declarations ------------------------------------------------------------------- */

static int parse_name(struct parser *p, const char *what, const char **s, uint32_t *len,
                      const struct token **at)
{
    const struct token *tk = cur(p);
    if (tk->t != T_IDENT && tk->t != T_QIDENT) {
        return expected(p, what);
    }
    *s = tk->s;
    *len = tk->len;
    if (at != NULL) {
        *at = tk;
    }
    next(p);
    return 0;
}

/* type_expr: a name, [type] or {type: type}. Types are not enforced at runtime. */
static int parse_type(struct parser *p, int depth)
{
    if (depth > VPL_MAX_DEPTH) {
        return fail_at(p, cur(p), "type nested deeper than %d levels", VPL_MAX_DEPTH);
    }
    if (accept(p, T_LBRACK)) {
        if (parse_type(p, depth + 1) != 0) {
            return VPL_ESYNTAX;
        }
        return expect(p, T_RBRACK, "']' to close the array type");
    }
    if (accept(p, T_LBRACE)) {
        if (parse_type(p, depth + 1) != 0 || expect(p, T_COLON, "':' in a map type") != 0 ||
            parse_type(p, depth + 1) != 0) {
            return VPL_ESYNTAX;
        }
        return expect(p, T_RBRACE, "'}' to close the map type");
    }
    if (cur(p)->t != T_IDENT) {
        return expected(p, "a type (int, float, bool, str, timestamp, duration or a name)");
    }
    next(p);
    return 0;
}

/* Indented `name: type` lines after `event X:` / `type X:`. */
static int parse_fields(struct parser *p, uint32_t decl_col)
{
    for (;;) {
        const struct token *tk = cur(p);
        if (!tk->bol || tk->col <= decl_col || (tk->t != T_IDENT && tk->t != T_QIDENT) ||
            ahead(p, 1)->t != T_COLON) {
            return 0;
        }
        next(p);
        next(p);
        if (parse_type(p, 0) != 0) {
            return VPL_ESYNTAX;
        }
        accept(p, T_QUESTION);
        if (!cur(p)->bol && cur(p)->t != T_EOF) {
            return expected(p, "the end of the field line");
        }
    }
}

static int parse_event(struct parser *p, struct ast_program *prog, uint32_t *cap, int is_event)
{
    const struct token *kw = cur(p);
    next(p);
    const char *name = NULL;
    uint32_t len = 0;
    const struct token *at = NULL;
    if (parse_name(p, is_event ? "an event name" : "a type name", &name, &len, &at) != 0) {
        return VPL_ESYNTAX;
    }
    if (!is_event && accept(p, T_ASSIGN)) {
        return parse_type(p, 0);
    }
    if (is_event && accept_word(p, "extends")) {
        const char *base = NULL;
        uint32_t blen = 0;
        if (parse_name(p, "the name of the base event", &base, &blen, NULL) != 0) {
            return VPL_ESYNTAX;
        }
    }
    if (expect(p, T_COLON, is_event ? "':' after the event name" : "':' or '=' after the type name") != 0) {
        return VPL_ESYNTAX;
    }
    if (parse_fields(p, kw->col) != 0) {
        return VPL_ESYNTAX;
    }
    if (!is_event) {
        return 0;
    }
    if ((prog->events = grow(p, prog->events, prog->nevents, cap, sizeof(*prog->events))) == NULL) {
        return VPL_ENOMEM;
    }
    struct ast_event *ev = &prog->events[prog->nevents++];
    ev->name = name;
    ev->nlen = len;
    ev->line = at->line;
    ev->col = at->col;
    return 0;
}

/* `name: value` pairs up to the closing ')' of connector(...), .from(Conn, ...) and
 * .to(Conn, ...); after_name: a comma separates them from the connector name.
 * Reports the value of `topic:`, which must be a string. */
static int parse_cparams(struct parser *p, int after_name, const char **topic, uint32_t *topic_len)
{
    int first = 1;
    while (!accept(p, T_RPAREN)) {
        if ((!first || after_name) && expect(p, T_COMMA, "',' or ')' after a parameter") != 0) {
            return VPL_ESYNTAX;
        }
        first = 0;
        const struct token *k = cur(p);
        if (k->t != T_IDENT) {
            return expected(p, "a parameter name");
        }
        next(p);
        if (expect(p, T_COLON, "':' after the parameter name") != 0) {
            return VPL_ESYNTAX;
        }
        const struct token *v = cur(p);
        if (parse_expr(p) == NULL) {
            return VPL_ESYNTAX;
        }
        if (topic != NULL && is_word(k, "topic")) {
            if (v->t != T_STRING || cur(p) != v + 1) {
                return fail_at(p, v, "expected a string after 'topic:'");
            }
            *topic = v->s;
            *topic_len = v->len;
        }
    }
    return 0;
}

static int parse_connector(struct parser *p)
{
    next(p);
    const char *name = NULL;
    uint32_t len = 0;
    if (parse_name(p, "a connector name", &name, &len, NULL) != 0 ||
        expect(p, T_ASSIGN, "'=' after the connector name") != 0 ||
        parse_name(p, "a connector kind (nats, mqtt, ...)", &name, &len, NULL) != 0 ||
        expect(p, T_LPAREN, "'(' after the connector kind") != 0) {
        return VPL_ESYNTAX;
    }
    return parse_cparams(p, 0, NULL, NULL);
}

static int parse_const(struct parser *p, struct ast_program *prog, uint32_t *cap)
{
    next(p);
    const char *name = NULL;
    uint32_t len = 0;
    const struct token *at = NULL;
    if (parse_name(p, "a constant name", &name, &len, &at) != 0) {
        return VPL_ESYNTAX;
    }
    if (accept(p, T_COLON) && parse_type(p, 0) != 0) {
        return VPL_ESYNTAX;
    }
    if (expect(p, T_ASSIGN, "'=' after the constant name") != 0) {
        return VPL_ESYNTAX;
    }
    struct expr *e = parse_expr(p);
    if (e == NULL) {
        return VPL_ESYNTAX;
    }
    if ((prog->consts = grow(p, prog->consts, prog->nconsts, cap, sizeof(*prog->consts))) == NULL) {
        return VPL_ENOMEM;
    }
    struct ast_const *c = &prog->consts[prog->nconsts++];
    c->name = name;
    c->nlen = len;
    c->line = at->line;
    c->col = at->col;
    c->e = e;
    return 0;
}

/* [all] [NOT] Type [where filter] [as alias] */
static int parse_step(struct parser *p, struct ast_step *st, int first)
{
    memset(st, 0, sizeof(*st));
    if (!first) {
        st->kleene = (uint8_t)accept_word(p, "all");
        st->neg = (uint8_t)accept_word(p, "NOT");
    }
    const struct token *at = NULL;
    if (parse_name(p, "an event type, stream or pattern name", &st->type, &st->tlen, &at) != 0) {
        return VPL_ESYNTAX;
    }
    st->line = at->line;
    st->col = at->col;
    if (accept_word(p, "where") && (st->pred = parse_step_expr(p)) == NULL) {
        return VPL_ESYNTAX;
    }
    if (accept_word(p, "as") && parse_name(p, "an alias after 'as'", &st->alias, &st->alen, NULL) != 0) {
        return VPL_ESYNTAX;
    }
    return 0;
}

static int parse_pattern(struct parser *p, struct ast_program *prog, uint32_t *cap)
{
    next(p);
    struct ast_pattern pat;
    memset(&pat, 0, sizeof(pat));
    pat.within = -1;
    const struct token *at = NULL;
    if (parse_name(p, "a pattern name", &pat.name, &pat.nlen, &at) != 0 ||
        expect(p, T_ASSIGN, "'=' after the pattern name") != 0) {
        return VPL_ESYNTAX;
    }
    pat.line = at->line;
    pat.col = at->col;
    uint32_t scap = 0;
    do {
        if ((pat.steps = grow(p, pat.steps, pat.nsteps, &scap, sizeof(*pat.steps))) == NULL) {
            return VPL_ENOMEM;
        }
        if (parse_step(p, &pat.steps[pat.nsteps], pat.nsteps == 0) != 0) {
            return VPL_ESYNTAX;
        }
        pat.nsteps++;
    } while (accept(p, T_ARROW));
    if (is_word(cur(p), "within")) {
        pat.within_line = cur(p)->line;
        pat.within_col = cur(p)->col;
        next(p);
        if (cur(p)->t != T_DURATION) {
            return expected(p, "a duration after 'within' (e.g. 5m)");
        }
        pat.within = cur(p)->i;
        next(p);
    }
    if (accept_word(p, "partition")) {
        if (!accept_word(p, "by")) {
            return expected(p, "'by' after 'partition'");
        }
        if (parse_name(p, "a field name after 'partition by'", &pat.partition, &pat.plen, NULL) != 0) {
            return VPL_ESYNTAX;
        }
    }
    if ((prog->patterns = grow(p, prog->patterns, prog->npatterns, cap, sizeof(pat))) == NULL) {
        return VPL_ENOMEM;
    }
    prog->patterns[prog->npatterns++] = pat;
    return 0;
}

static const struct {
    const char *name;
    enum op_kind kind;
} op_names[] = {
    {"where", OP_WHERE},
    {"emit", OP_EMIT},
    {"select", OP_SELECT},
    {"to", OP_TO},
    {"within", OP_WITHIN},
    {"partition_by", OP_PARTITION},
    {"not", OP_NOT},
    {"window", OP_WINDOW},
    {"aggregate", OP_AGGREGATE},
    {"having", OP_HAVING},
    {"watermark", OP_WATERMARK},
    {"stam", OP_MODE},
    {"stnm", OP_MODE},
    {"strict", OP_MODE},
    {"each", OP_MODE},
    {"longest", OP_MODE},
    {"subsets", OP_MODE},
    {"print", OP_NOOP},
    {"log", OP_NOOP},
    {"tap", OP_NOOP},
    {"context", OP_NOOP},
    {"on", OP_ON},
    {"allowed_lateness", OP_LATENESS},
};

/* ( [ [name:] expr {, [name:] expr} ] ) */
static int parse_args(struct parser *p, struct ast_op *op)
{
    uint32_t cap = 0;
    if (accept(p, T_RPAREN)) {
        return 0;
    }
    do {
        if ((op->args = grow(p, op->args, op->nargs, &cap, sizeof(*op->args))) == NULL) {
            return VPL_ENOMEM;
        }
        struct ast_arg *a = &op->args[op->nargs++];
        memset(a, 0, sizeof(*a));
        const struct token *tk = cur(p);
        a->line = tk->line;
        a->col = tk->col;
        if ((tk->t == T_IDENT || tk->t == T_QIDENT) && ahead(p, 1)->t == T_COLON) {
            a->name = tk->s;
            a->nlen = tk->len;
            next(p);
            next(p);
        }
        if ((a->e = parse_expr(p)) == NULL) {
            return VPL_ESYNTAX;
        }
    } while (accept(p, T_COMMA));
    return expect(p, T_RPAREN, "',' or ')' after an argument");
}

static int parse_op(struct parser *p, struct ast_op *op)
{
    next(p); /* . */
    const struct token *name = cur(p);
    memset(op, 0, sizeof(*op));
    op->line = name->line;
    op->col = name->col;
    op->name = name->s;
    op->nlen = name->len;
    if (name->t != T_IDENT) {
        return expected(p, "an operation name after '.'");
    }
    size_t i = 0;
    while (i < sizeof(op_names) / sizeof(op_names[0]) && !is_word(name, op_names[i].name)) {
        i++;
    }
    if (i == sizeof(op_names) / sizeof(op_names[0])) {
        if (is_word(name, "from")) {
            return fail_at(p, name, "'.from()' must follow the event type at the start of the stream");
        }
        return fail_at(p, name,
                       "unknown operation '.%.*s()': expected where, emit, select, to, within, "
                       "partition_by, not, window, aggregate, having, watermark or a mode",
                       (int)(name->len > 40 ? 40 : name->len), name->s);
    }
    op->kind = (uint8_t)op_names[i].kind;
    next(p);
    if (expect(p, T_LPAREN, "'(' after the operation name") != 0) {
        return VPL_ESYNTAX;
    }
    switch (op->kind) {
    case OP_NOT: {
        const struct token *at = NULL;
        if (parse_name(p, "the cancelling event type", &op->type, &op->tlen, &at) != 0) {
            return VPL_ESYNTAX;
        }
        op->tline = at->line;
        op->tcol = at->col;
        if (accept_word(p, "where") && (op->pred = parse_expr(p)) == NULL) {
            return VPL_ESYNTAX;
        }
        return expect(p, T_RPAREN, "')' or 'where' after the cancelling type");
    }
    case OP_TO:
        if (parse_name(p, "a connector name", &op->type, &op->tlen, NULL) != 0) {
            return VPL_ESYNTAX;
        }
        {
            const char *topic = NULL;
            uint32_t tl = 0;
            if (parse_cparams(p, 1, &topic, &tl) != 0) {
                return VPL_ESYNTAX;
            }
            if (topic != NULL) {
                op->args = arena_alloc(p->a, sizeof(*op->args));
                if (op->args == NULL) {
                    return oom(p);
                }
                memset(op->args, 0, sizeof(*op->args));
                op->args[0].name = topic;
                op->args[0].nlen = tl;
                op->nargs = 1;
            }
        }
        return 0;
    default:
        return parse_args(p, op);
    }
}

static int parse_stream(struct parser *p, struct ast_program *prog, uint32_t *cap);

/* merge(S1, stream s2 = T.where(p), ...) and join(A, B): each source a type, a stream
 * or an inline stream declaration, which declares that stream (before the merge). */
static int parse_merge(struct parser *p, struct ast_program *prog, uint32_t *cap, struct ast_stream *s)
{
    s->join = (uint8_t)is_word(cur(p), "join");
    p->pos += 2; /* merge ( */
    uint32_t mcap = 0;
    do {
        if ((s->merge = grow(p, s->merge, s->nmerge, &mcap, sizeof(*s->merge))) == NULL) {
            return VPL_ENOMEM;
        }
        struct ast_step *st = &s->merge[s->nmerge++];
        memset(st, 0, sizeof(*st));
        const struct token *at = cur(p);
        if (is_word(at, "stream")) {
            at = ahead(p, 1);
            p->in_merge = 1;
            int rc = parse_stream(p, prog, cap);
            p->in_merge = 0;
            if (rc != 0) {
                return rc;
            }
            if (prog->streams[prog->nstreams - 1].nsteps > 1) {
                return fail_at(p, at, "a stream declared inside merge() reads one type or stream");
            }
        } else if (parse_name(p, "a type or stream name", &st->type, &st->tlen, &at) != 0) {
            return VPL_ESYNTAX;
        }
        st->type = at->s;
        st->tlen = at->len;
        st->line = at->line;
        st->col = at->col;
    } while (accept(p, T_COMMA));
    return expect(p, T_RPAREN, "',' or ')' after a merged stream");
}

/* timer(P[, initial_delay: D]): the stream reads the type Timer_<stream>, whose events
 * the engine makes as the timer fires (the compiler checks the arguments). */
static int parse_timer(struct parser *p, struct ast_stream *s)
{
    const struct token *at = cur(p);
    struct ast_op op;
    memset(&op, 0, sizeof(op));
    p->pos += 2; /* timer ( */
    if (parse_args(p, &op) != 0) {
        return VPL_ESYNTAX;
    }
    char *type = arena_alloc(p->a, s->nlen + 7);
    if (type == NULL) {
        return oom(p);
    }
    memcpy(type, "Timer_", 6);
    memcpy(type + 6, s->name, s->nlen);
    type[s->nlen + 6] = '\0';
    memset(&s->steps[0], 0, sizeof(s->steps[0]));
    s->steps[0].type = type;
    s->steps[0].tlen = s->nlen + 6;
    s->steps[0].line = at->line;
    s->steps[0].col = at->col;
    s->timer = 1;
    s->targs = op.args;
    s->ntargs = op.nargs;
    return 0;
}

static int parse_stream(struct parser *p, struct ast_program *prog, uint32_t *cap)
{
    next(p);
    struct ast_stream s;
    memset(&s, 0, sizeof(s));
    const struct token *at = NULL;
    if (parse_name(p, "a stream name", &s.name, &s.nlen, &at) != 0 ||
        expect(p, T_ASSIGN, "'=' after the stream name") != 0) {
        return VPL_ESYNTAX;
    }
    s.line = at->line;
    s.col = at->col;
    uint32_t scap = 0, ocap = 0;
    if ((s.steps = grow(p, s.steps, 0, &scap, sizeof(*s.steps))) == NULL) {
        return VPL_ENOMEM;
    }
    if (cur(p)->t == T_IDENT && ahead(p, 1)->t == T_DOT && is_word(ahead(p, 2), "from") &&
        ahead(p, 3)->t == T_LPAREN) {
        memset(&s.steps[0], 0, sizeof(s.steps[0]));
        s.steps[0].type = cur(p)->s;
        s.steps[0].tlen = cur(p)->len;
        s.steps[0].line = cur(p)->line;
        s.steps[0].col = cur(p)->col;
        p->pos += 4;
        if (parse_name(p, "a connector name", &s.from_conn, &s.from_conn_len, NULL) != 0 ||
            parse_cparams(p, 1, &s.from_topic, &s.from_topic_len) != 0) {
            return VPL_ESYNTAX;
        }
        s.has_from = 1;
    } else if ((is_word(cur(p), "merge") || is_word(cur(p), "join")) && ahead(p, 1)->t == T_LPAREN) {
        if (p->in_merge) {
            return fail_at(p, cur(p), "a stream declared inside merge() reads one type or stream");
        }
        if (parse_merge(p, prog, cap, &s) != 0) {
            return VPL_ESYNTAX;
        }
        s.steps[0] = s.merge[0];
    } else if (is_word(cur(p), "timer") && ahead(p, 1)->t == T_LPAREN) {
        if (parse_timer(p, &s) != 0) {
            return VPL_ESYNTAX;
        }
    } else if (parse_step(p, &s.steps[0], 1) != 0) {
        return VPL_ESYNTAX;
    }
    s.nsteps = 1;
    for (;;) {
        if (accept(p, T_ARROW)) {
            if ((s.steps = grow(p, s.steps, s.nsteps, &scap, sizeof(*s.steps))) == NULL) {
                return VPL_ENOMEM;
            }
            if (parse_step(p, &s.steps[s.nsteps], 0) != 0) {
                return VPL_ESYNTAX;
            }
            s.nsteps++;
        } else if (cur(p)->t == T_DOT) {
            if ((s.ops = grow(p, s.ops, s.nops, &ocap, sizeof(*s.ops))) == NULL) {
                return VPL_ENOMEM;
            }
            if (parse_op(p, &s.ops[s.nops]) != 0) {
                return VPL_ESYNTAX;
            }
            s.ops[s.nops++].steps_before = s.nsteps;
        } else {
            break;
        }
    }
    if ((prog->streams = grow(p, prog->streams, prog->nstreams, cap, sizeof(s))) == NULL) {
        return VPL_ENOMEM;
    }
    prog->streams[prog->nstreams++] = s;
    return 0;
}

/* ---- fn blocks, var, config ------------------------------------------------------- */

static struct expr *parse_block(struct parser *p, uint32_t outer_col);

/* The statement at the current token ends its line. */
static int line_end(struct parser *p)
{
    if (!cur(p)->bol && cur(p)->t != T_EOF) {
        return expected(p, "the end of the line");
    }
    return 0;
}

static struct expr *parse_let(struct parser *p)
{
    const struct token *at = cur(p);
    next(p);
    const char *name = NULL;
    uint32_t len = 0;
    if (parse_name(p, "a name after 'let'", &name, &len, NULL) != 0 ||
        (accept(p, T_COLON) && parse_type(p, 0) != 0) || expect(p, T_ASSIGN, "'=' after the name") != 0) {
        return NULL;
    }
    if (p->nslots == FN_SLOTS) {
        fail_at(p, at, "a fn has at most %d parameters and lets", FN_SLOTS);
        return NULL;
    }
    struct expr *e = node(p, X_LET, at, 1);
    if (e == NULL || (e->kid[0] = parse_expr(p)) == NULL || line_end(p) != 0) {
        return NULL;
    }
    e->name = name;
    e->nlen = len;
    e->slot = (int32_t)p->nslots++;
    return sealed(p, e);
}

/* if c: block {elif c: block} [else: block]; elif and else in the column of the if. */
static struct expr *parse_if_stmt(struct parser *p)
{
    const struct token *at = cur(p);
    struct expr **kid = NULL;
    uint32_t n = 0, cap = 0;
    for (int more = 1; more;) {
        const struct token *kw = cur(p);
        next(p);
        if (!is_word(kw, "else")) {
            if ((kid = grow(p, kid, n, &cap, sizeof(*kid))) == NULL || (kid[n++] = parse_expr(p)) == NULL) {
                return NULL;
            }
        }
        if (expect(p, T_COLON, is_word(kw, "else") ? "':' after else" : "':' after the condition") != 0 ||
            (kid = grow(p, kid, n, &cap, sizeof(*kid))) == NULL ||
            (kid[n++] = parse_block(p, at->col)) == NULL) {
            return NULL;
        }
        const struct token *tk = cur(p);
        more = !is_word(kw, "else") && tk->bol && tk->col == at->col &&
               (is_word(tk, "elif") || is_word(tk, "else"));
    }
    if (n > UINT16_MAX) {
        fail_at(p, at, "too many elif branches");
        return NULL;
    }
    struct expr *e = node(p, X_IFSTMT, at, (uint16_t)n);
    if (e == NULL) {
        return NULL;
    }
    memcpy(e->kid, kid, n * sizeof(*kid));
    return sealed(p, e);
}

static struct expr *parse_stmt(struct parser *p)
{
    const struct token *at = cur(p);
    if (is_word(at, "let") || is_word(at, "var")) {
        return parse_let(p);
    }
    if (is_word(at, "if")) {
        return parse_if_stmt(p);
    }
    if (is_word(at, "return")) {
        next(p);
        int bare = cur(p)->bol || cur(p)->t == T_EOF;
        struct expr *e = node(p, X_RETURN, at, bare ? 0 : 1);
        if (e == NULL || (!bare && (e->kid[0] = parse_expr(p)) == NULL) || line_end(p) != 0) {
            return NULL;
        }
        return sealed(p, e);
    }
    if (is_word(at, "for") || is_word(at, "while")) {
        fail_at(p, at,
                "'%.*s' loops are not supported by this engine: a fn body has let, if/elif/else "
                "and return",
                (int)at->len, at->s);
        return NULL;
    }
    expected(p, "a statement (let, if or return)");
    return NULL;
}

/* The statements indented past outer_col, all in the column of the first. */
static struct expr *parse_block(struct parser *p, uint32_t outer_col)
{
    const struct token *first = cur(p);
    if (!first->bol || first->col <= outer_col || first->t == T_EOF) {
        expected(p, "an indented block on the next line");
        return NULL;
    }
    if (!enter(p)) {
        return NULL;
    }
    struct expr **kid = NULL;
    uint32_t n = 0, cap = 0;
    while (cur(p)->t != T_EOF && cur(p)->bol && cur(p)->col >= first->col) {
        if (cur(p)->col > first->col) {
            fail_at(p, cur(p), "unexpected indentation: the statements of a block start in one column");
            return NULL;
        }
        if (n == UINT16_MAX) {
            fail_at(p, cur(p), "too many statements in a block");
            return NULL;
        }
        if ((kid = grow(p, kid, n, &cap, sizeof(*kid))) == NULL || (kid[n++] = parse_stmt(p)) == NULL) {
            return NULL;
        }
    }
    p->depth--;
    struct expr *e = node(p, X_BLOCK, first, (uint16_t)n);
    if (e == NULL) {
        return NULL;
    }
    memcpy(e->kid, kid, n * sizeof(*kid));
    return sealed(p, e);
}

/* fn name(p: type, ...) [-> type]: block */
static int parse_fn(struct parser *p, struct ast_program *prog, uint32_t *cap)
{
    const struct token *kw = cur(p);
    next(p);
    struct ast_fn f;
    memset(&f, 0, sizeof(f));
    const struct token *at = NULL;
    if (parse_name(p, "a function name", &f.name, &f.nlen, &at) != 0 ||
        expect(p, T_LPAREN, "'(' after the function name") != 0) {
        return VPL_ESYNTAX;
    }
    f.line = at->line;
    f.col = at->col;
    uint32_t pcap = 0;
    if (!accept(p, T_RPAREN)) {
        do {
            if (f.nparams == FN_SLOTS) {
                return fail_at(p, cur(p), "a fn has at most %d parameters and lets", FN_SLOTS);
            }
            if ((f.params = grow(p, f.params, f.nparams, &pcap, sizeof(*f.params))) == NULL) {
                return VPL_ENOMEM;
            }
            struct ast_param *pa = &f.params[f.nparams++];
            if (parse_name(p, "a parameter name", &pa->name, &pa->len, NULL) != 0 ||
                expect(p, T_COLON, "':' and a type after the parameter name") != 0 || parse_type(p, 0) != 0) {
                return VPL_ESYNTAX;
            }
        } while (accept(p, T_COMMA));
        if (expect(p, T_RPAREN, "',' or ')' after a parameter") != 0) {
            return VPL_ESYNTAX;
        }
    }
    if (accept(p, T_ARROW) && parse_type(p, 0) != 0) {
        return VPL_ESYNTAX;
    }
    if (expect(p, T_COLON, "':' after the function's signature") != 0) {
        return VPL_ESYNTAX;
    }
    p->nslots = f.nparams;
    if ((f.body = parse_block(p, kw->col)) == NULL) {
        return VPL_ESYNTAX;
    }
    f.nslots = p->nslots;
    if ((prog->fns = grow(p, prog->fns, prog->nfns, cap, sizeof(f))) == NULL) {
        return VPL_ENOMEM;
    }
    prog->fns[prog->nfns++] = f;
    return 0;
}

/* `var NAME [: type] = expr`: parsed, and invisible to streams (docs/VPL.md). */
static int parse_var(struct parser *p)
{
    next(p);
    const char *name = NULL;
    uint32_t len = 0;
    if (parse_name(p, "a variable name", &name, &len, NULL) != 0 ||
        (accept(p, T_COLON) && parse_type(p, 0) != 0) || expect(p, T_ASSIGN, "'=' after the name") != 0) {
        return VPL_ESYNTAX;
    }
    return parse_expr(p) == NULL ? VPL_ESYNTAX : 0;
}

/* `config:` and indented `key: value` lines, or `config name { key: value, ... }`:
 * settings of Varpulis's own runtime, parsed and ignored. */
static int parse_config(struct parser *p)
{
    const struct token *kw = cur(p);
    next(p);
    int braces = 0;
    if (!accept(p, T_COLON)) {
        const char *name = NULL;
        uint32_t len = 0;
        if (parse_name(p, "':' or a name after 'config'", &name, &len, NULL) != 0 ||
            expect(p, T_LBRACE, "'{' after the config name") != 0) {
            return VPL_ESYNTAX;
        }
        braces = 1;
    }
    for (;;) {
        const struct token *tk = cur(p);
        if (braces && accept(p, T_RBRACE)) {
            return 0;
        }
        if (!braces && (!tk->bol || tk->col <= kw->col || tk->t == T_EOF)) {
            return 0;
        }
        const char *name = NULL;
        uint32_t len = 0;
        if (parse_name(p, braces ? "a setting name or '}'" : "a setting name", &name, &len, NULL) != 0 ||
            expect(p, T_COLON, "':' after the setting name") != 0 || parse_expr(p) == NULL) {
            return VPL_ESYNTAX;
        }
        if (braces) {
            accept(p, T_COMMA);
        } else if (line_end(p) != 0) {
            return VPL_ESYNTAX;
        }
    }
}

/* `context NAME [(cores: [0, 1])]`: Varpulis's threads, ignored as `.context()` is. */
static int parse_context(struct parser *p)
{
    next(p);
    const char *name = NULL;
    uint32_t len = 0;
    if (parse_name(p, "a context name", &name, &len, NULL) != 0) {
        return VPL_ESYNTAX;
    }
    return accept(p, T_LPAREN) ? parse_cparams(p, 0, NULL, NULL) : 0;
}

int parse_program(const struct tokens *toks, struct arena *arena, struct ast_program *out,
                  struct vpl_error *err)
{
    struct parser p = {.t = toks->v, .a = arena, .err = err};
    uint32_t scap = 0, pcap = 0, ccap = 0, ecap = 0, fcap = 0;
    memset(out, 0, sizeof(*out));
    while (cur(&p)->t != T_EOF) {
        const struct token *tk = cur(&p);
        int rc;
        if (is_word(tk, "stream")) {
            rc = parse_stream(&p, out, &scap);
        } else if (is_word(tk, "event")) {
            rc = parse_event(&p, out, &ecap, 1);
        } else if (is_word(tk, "type")) {
            rc = parse_event(&p, out, &ecap, 0);
        } else if (is_word(tk, "pattern")) {
            rc = parse_pattern(&p, out, &pcap);
        } else if (is_word(tk, "let") || is_word(tk, "const")) {
            rc = parse_const(&p, out, &ccap);
        } else if (is_word(tk, "connector")) {
            rc = parse_connector(&p);
        } else if (is_word(tk, "fn")) {
            rc = parse_fn(&p, out, &fcap);
        } else if (is_word(tk, "var")) {
            rc = parse_var(&p);
        } else if (is_word(tk, "config")) {
            rc = parse_config(&p);
        } else if (is_word(tk, "context")) {
            rc = parse_context(&p);
        } else {
            rc = expected(&p, "a declaration (stream, event, type, pattern, fn, let, const, var, config, "
                              "context or connector)");
        }
        if (rc != 0 || p.failed) {
            return err != NULL && err->code == VPL_ENOMEM ? VPL_ENOMEM : VPL_ESYNTAX;
        }
    }
    return 0;
}
