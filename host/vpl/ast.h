/* Syntax tree of a VPL program. Everything lives in the program arena. The checker
 * resolves expression nodes in place (names become fields, aliases, constants or
 * functions), so the evaluator walks the same nodes the parser built. */
#ifndef VPL_AST_H
#define VPL_AST_H

#include <stdint.h>

#include "value.h"

enum expr_kind {
    /* as parsed */
    X_LIT,       /* lit */
    X_NAME,      /* name */
    X_MEMBER,    /* kid[0].name (also `?.`) */
    X_INDEX,     /* kid[0][kid[1]] */
    X_CALL,      /* name(kid...); a method call x.f(a) is f(x, a) */
    X_UNARY,     /* op: T_MINUS or 'n' (not) */
    X_BINARY,    /* op: a token, or 'a' and, 'o' or, 'i' in, 'I' not in, 'c' ?? */
    X_IF,        /* kid[0] ? kid[1] : kid[2] */
    X_ARRAY,     /* [kid...] */
    X_MAP,       /* {kid[0]: kid[1], ...}, keys are X_LIT strings */
    /* after checking */
    X_FIELD,     /* id: field symbol of the current event */
    X_ALIAS_FIELD, /* slot.id (id: field symbol); a Kleene slot reads its last event */
    X_KLEENE_AT, /* slot[kid[0]].id */
    X_KLEENE_LEN, /* number of events in Kleene slot */
    X_KLEENE_AGG, /* fn over slot's events of field id (id2: field, or SYM_NONE) */
    X_FUNC,      /* builtin id(kid...) */
    X_AGG,       /* window aggregate id over kid[0] (kid[1]: ema period) */
    /* after folding (fold.h) */
    X_CASE,      /* kid[0] == kid[1] ? kid[2] : kid[0] == kid[3] ? kid[4] : ... : kid[n-1] */
    X_MEMO,      /* kid[0], computed once per context in memo slot `slot` */
    /* the body of a `fn` (its statements are nodes too) */
    X_BLOCK,     /* the statements kid... in order */
    X_LET,       /* `let name = kid[0]`: sets local `slot` */
    X_RETURN,    /* `return kid[0]` (n == 0: return null) */
    X_IFSTMT,    /* kid: cond, block, cond, block, ... then the else block when n is odd */
    X_LOCAL,     /* after checking: a parameter or let of the fn, local `slot` */
    X_FNCALL,    /* after checking: fn aux (struct ast_fn) over the arguments kid... */
    /* lambdas: `xs.filter(x => x > 1)` */
    X_LAMBDA,    /* as parsed: `name => kid[0]`, only an argument of filter, map, any, all */
    X_HOF,       /* after checking: op 'f' filter, 'm' map, 'a' any, 'A' all of the array kid[0]
                    through the lambda kid[1] (an X_LAMBDA whose parameter is `slot`) */
    X_PARAM,     /* after checking: the parameter of the enclosing lambda number `slot` */
};

#define LAMBDA_MAX 4 /* lambdas nested in one another: each walks its whole array */

struct expr {
    uint8_t kind;
    uint8_t op;
    uint16_t n; /* kids */
    uint16_t height; /* of the subtree, bounded so evaluation cannot exhaust the stack */
    uint32_t line, col;
    const char *name;
    uint32_t nlen;
    uint32_t id, id2;
    int32_t slot;
    struct vval lit;
    struct expr **kid;
    void *aux; /* X_FUNC: precompiled data (a regex for a literal pattern) */
};

/* `-> [all] [NOT] Type [where pred] [as alias]`; the source of a sequence is step 0. */
struct ast_step {
    const char *type;
    uint32_t tlen;
    uint32_t line, col;
    struct expr *pred; /* NULL */
    const char *alias; /* NULL */
    uint32_t alen;
    uint8_t kleene, neg;
};

enum op_kind {
    OP_WHERE,
    OP_EMIT,
    OP_SELECT,
    OP_TO,
    OP_WITHIN,
    OP_PARTITION,
    OP_NOT,
    OP_WINDOW,
    OP_AGGREGATE,
    OP_HAVING,
    OP_WATERMARK,
    OP_MODE, /* name: stam, stnm, strict, each, longest, subsets */
    OP_NOOP, /* print, log, tap, context */
    OP_ON,   /* join(...).on(condition) */
    OP_LATENESS, /* .allowed_lateness(D) */
};

/* A named argument `name: expr` (name NULL for positional). */
struct ast_arg {
    const char *name;
    uint32_t nlen;
    uint32_t line, col;
    struct expr *e;
};

struct ast_op {
    uint8_t kind;
    uint32_t steps_before; /* sequence steps written before this op (source = 1) */
    uint32_t line, col;
    const char *name; /* the method name as written */
    uint32_t nlen;
    struct ast_arg *args;
    uint32_t nargs;
    /* OP_NOT: the cancelling type (written at tline:tcol) and its predicate; OP_TO:
     * the connector */
    const char *type;
    uint32_t tlen, tline, tcol;
    struct expr *pred;
};

struct ast_stream {
    const char *name;
    uint32_t nlen, line, col;
    struct ast_step *steps; /* steps[0]: the source (merge: its first) */
    uint32_t nsteps;
    struct ast_step *merge; /* merge(S1, S2, ...) or join(A, B): every source, steps[0] first */
    uint32_t nmerge;
    uint8_t join; /* the sources are join(...)'s, not merge(...)'s */
    struct ast_op *ops;
    uint32_t nops;
    /* Type.from(Conn, topic: "x") */
    const char *from_conn, *from_topic;
    uint32_t from_conn_len, from_topic_len;
    int has_from;
    /* timer(P[, initial_delay: D]): its arguments; steps[0] names the type Timer_<name> */
    uint8_t timer;
    struct ast_arg *targs;
    uint32_t ntargs;
};

struct ast_pattern {
    const char *name;
    uint32_t nlen, line, col;
    struct ast_step *steps;
    uint32_t nsteps;
    int64_t within; /* -1: none */
    uint32_t within_line, within_col;
    const char *partition;
    uint32_t plen;
};

struct ast_const {
    const char *name;
    uint32_t nlen, line, col;
    struct expr *e;
};

/* `fn name(p: type, ...) -> type:` and an indented body. Locals (parameters first,
 * then each `let` in the order written) have slots 0..nslots-1. */
#define FN_SLOTS 64
struct ast_param {
    const char *name;
    uint32_t len;
};

struct ast_fn {
    const char *name;
    uint32_t nlen, line, col;
    struct ast_param *params;
    uint32_t nparams, nslots;
    struct expr *body; /* X_BLOCK */
};

struct ast_event {
    const char *name;
    uint32_t nlen, line, col;
};

struct ast_program {
    struct ast_stream *streams;
    uint32_t nstreams;
    struct ast_pattern *patterns;
    uint32_t npatterns;
    struct ast_const *consts;
    uint32_t nconsts;
    struct ast_event *events; /* `event` declarations (event types) */
    uint32_t nevents;
    struct ast_fn *fns;
    uint32_t nfns;
};

#endif
