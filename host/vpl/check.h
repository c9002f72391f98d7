/* Name resolution and semantic checks of expressions. Each expression is checked in a
 * scope that says what bare names read (enum ctx_kind) and which sequence aliases are
 * visible; the checker rewrites nodes in place: names become fields, aliases or
 * folded constants, calls become builtins or aggregates. */
#ifndef VPL_CHECK_H
#define VPL_CHECK_H

#include "ast.h"
#include "hmap.h"
#include "program.h"

struct alias {
    const char *name;
    uint32_t len;
    uint8_t kleene;
};

struct scope {
    uint8_t ctx;              /* enum ctx_kind */
    const struct alias *al;   /* slot i = al[i]; NULL outside sequences */
    uint32_t nal;
    const char *self;         /* `stream S = A as a` without `->`: a.f reads the event */
    uint32_t self_len;
    uint8_t in_agg;           /* inside an aggregate's argument */
    const struct ast_fn *fn;  /* checking the body of this fn: names read its locals */
    uint32_t loc_base;        /* its locals (and lambda parameters) are checker.loc[loc_base..] */
    uint8_t nlam;             /* lambdas around the expression: their parameters are locals */
};

/* A fn's name, to find it in fn_map. */
struct fn_name {
    struct hnode node;
    uint32_t idx;
};

/* A fn's parameter or let in scope, and its slot. */
struct local {
    const char *name;
    uint32_t len;
    int32_t slot;
    uint8_t lam; /* a lambda's parameter: slot is the lambda's nesting */
};

struct checker {
    struct vpl_program *prog;
    const struct ast_program *ast;
    struct vpl_error *err;
    uint8_t *const_state; /* per ast const: 0 new, 1 folding, 2 folded, 3 not a literal */
    struct vval *const_val;
    uint8_t *fn_state; /* per ast fn: 0 new, 1 checking, 2 checked */
    uint32_t *fn_depth; /* per checked fn: the evaluation depth of its body */
    struct local *loc; /* locals in scope, innermost last */
    uint32_t nloc, caploc;
    uint32_t fn_nesting; /* fn bodies being checked, one inside the other's call */
    struct fn_name *fn_names; /* per ast fn, in fn_map by name (first declaration) */
    struct hmap fn_map;
};

/* Checks the body of every fn, so errors show even in one nothing calls. */
int check_fns(struct checker *ck);

int check_init(struct checker *ck, struct vpl_program *prog, const struct ast_program *ast,
               struct vpl_error *err);
void check_fini(struct checker *ck);

/* Resolves e in sc. 0 or VPL_ESEMANTIC/VPL_ENOMEM with ck->err filled. */
int check_expr(struct checker *ck, struct expr *e, const struct scope *sc);

/* Interns a field name and marks it as read, so the decoder keeps it. */
int check_field(struct checker *ck, const char *name, uint32_t len, uint32_t *sym);

#endif
