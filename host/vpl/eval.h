/* Expression evaluation over an event, a run's captures or a closed window. Results
 * that need storage (strings, arrays) are built in the context's scratch arena. */
#ifndef VPL_EVAL_H
#define VPL_EVAL_H

#include "program.h"
#include "value.h"

struct closure {
    uint16_t n, cap;
    struct vpl_event *ev[];
};

/* One alias slot of a run: an event, or a closure for a Kleene step. */
union capture {
    struct vpl_event *ev;
    struct closure *clo;
};

/* Values of the subexpressions a stream's stages share (X_MEMO, fold.h), computed at
 * most once for the event the stages read: set has bit k when v[k] is computed. */
#define MEMO_SLOTS 64
struct memo {
    uint64_t set;
    struct vval v[MEMO_SLOTS];
};

struct ectx {
    const struct vpl_event *ev;  /* bare names read this event */
    const union capture *caps;   /* the run's slots, or NULL */
    const struct pattern *pat;   /* layout of caps */
    int32_t view_slot;           /* .each(): this closure is seen with view_n events */
    uint32_t view_n;
    struct vpl_event *const *win; /* a closed window's events */
    uint32_t nwin;
    int64_t time;                /* event time of the cause, for results */
    struct arena *arena;
    int *oom;                    /* set when the arena runs out */
    struct memo *memo;           /* NULL: X_MEMO nodes evaluate their expression */
    struct vval *locals;         /* inside a fn: its parameters and lets */
    const struct vval *params;   /* inside lambdas: their parameters, by nesting (LAMBDA_MAX) */
};

struct vval eval(const struct expr *x, const struct ectx *c);
int eval_true(const struct expr *x, const struct ectx *c); /* only `true` passes */

/* Scratch allocation for builtins; sets *c->oom on failure. */
void *eval_alloc(const struct ectx *c, size_t n);

enum agg_fn {
    AGG_COUNT,
    AGG_SUM,
    AGG_AVG,
    AGG_MIN,
    AGG_MAX,
    AGG_FIRST,
    AGG_LAST,
    AGG_STDDEV,
    AGG_COUNT_DISTINCT,
    AGG_EMA,
    AGG_COLLECT,
};

#endif
