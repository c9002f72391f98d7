/* A compiled program: the dataflow graph of streams with their stages, patterns and
 * windows, the routing tables and the symbol table. Immutable once compiled, so any
 * number of engines may share it. */
#ifndef VPL_PROGRAM_H
#define VPL_PROGRAM_H

#include <stdint.h>

#include "ast.h"
#include "symtab.h"
#include "util.h"

#define KLEENE_MAX 20 /* events kept per closure (Varpulis's cap) */

/* What the bare names of an expression read. */
enum ctx_kind {
    CX_EVENT,  /* the current event */
    CX_MATCH,  /* the completing event; aliases read the run's captures */
    CX_WINDOW, /* the last event; aggregates read every event of the closed window */
};

enum stage_kind {
    SG_FILTER,  /* .where / .having */
    SG_PROJECT, /* .emit / .select / .aggregate: a new event made of named values */
};

struct stage {
    uint8_t kind;
    uint8_t ctx; /* enum ctx_kind the expressions were checked in */
    uint32_t n;
    struct expr **e;
    uint32_t *names; /* SG_PROJECT: field symbols, in declaration order */
};

/* A type and predicate that kill or cancel a run, or that must stay absent. */
struct neg {
    uint32_t type;
    struct expr *pred; /* NULL: any event of the type */
};

struct pstep {
    uint32_t type;
    struct expr *pred; /* NULL: any event of the type */
    uint8_t kleene;    /* `-> all X`: one or more */
    struct neg *negs;  /* `-> NOT X` written just before this step */
    uint32_t nnegs;
    const struct fieldset *keep; /* what its captures keep (keep.h); NULL: every field */
};

struct pattern {
    struct pstep *steps; /* positive steps; step k captures alias slot k */
    uint32_t nsteps;
    struct neg *absent; /* trailing `-> NOT X`: the run completes when its deadline passes */
    uint32_t nabsent;
    struct neg *cancel; /* .not(X where p) */
    uint32_t ncancel;
    int64_t within;     /* ms; -1: runs never expire */
    uint32_t partition; /* field symbol, or SYM_NONE */
    uint8_t stnm, strict, longest;
    int32_t each_slot;  /* .each(): the Kleene slot a completion enumerates, or -1 */
    struct expr **first_where; /* .where() written before the first `->`: filters step 0 */
    uint32_t nfirst_where;
    uint32_t *types;    /* every type the pattern reads */
    uint32_t ntypes;
};

enum window_kind { W_COUNT, W_COUNT_SLIDING, W_TIME, W_TIME_SLIDING, W_SESSION, W_JOIN };

struct window {
    uint8_t kind;
    uint8_t aligned; /* .watermark(): time windows are epoch-aligned bins */
    int64_t size;    /* events, or ms (session: the gap) */
    int64_t slide;   /* events, or ms */
    uint32_t partition;
    /* W_JOIN: the pairs of events of its two sources at most size apart for which `on`
     * holds; `layout` names the two alias slots (source 0, source 1) they are read by. */
    struct expr *on;
    struct pattern *layout;
    /* W_JOIN: an equality of `on`'s top-level `and`s between an expression of source 0
     * (key[0]) and one of source 1 (key[1]), each a field of its alias: the held events
     * are indexed by it (the hash join, runtime/join.h). NULL: every held event of the
     * other source is offered to `on`. */
    const struct expr *key[2];
    /* .allowed_lateness(D) (aligned bins only), or -1: each bin is a window of its own,
     * kept after it closes until the clock reaches its end + D, for late events */
    int64_t lateness;
};

struct route {
    uint32_t n;
    uint32_t *s; /* stream indices */
};

struct stream {
    const char *name;
    uint32_t sym;
    uint32_t type;     /* routing type of its output */
    uint32_t src_type; /* without a pattern: the type it reads (merge: the first) */
    uint32_t *srcs;    /* without a pattern: every type it reads (merge: several) */
    uint32_t nsrcs;
    struct stage *pre; /* stages before a window (context CX_EVENT) */
    uint32_t npre;
    struct pattern *pat;
    struct window *win;
    struct stage *post;
    uint32_t npost;
    uint8_t emits;   /* has .emit(): its results are alerts */
    uint8_t timed;   /* has state that closes on the clock */
    uint8_t idle;    /* only names its input (a .from binding nothing reads): no work */
    uint32_t *roots; /* input types whose clocks drive it */
    uint32_t nroots;
    const char *connector, *topic; /* .to() */
    /* timer(P[, initial_delay: D]): ms, 0 when the stream is not a timer; it reads
     * the events of type src_type (Timer_<name>) that the engine makes as it fires */
    int64_t timer_period, timer_delay;
};

struct vpl_program {
    struct arena arena; /* everything below except the tables noted */
    uint8_t digest[16]; /* of the source text: vpl_program_digest */
    char digest_hex[33];
    struct symtab syms;
    struct stream *streams;
    uint32_t nstreams;
    uint32_t ntimers; /* timer() streams */
    uint32_t ntypes;
    uint32_t *type_sym;  /* routing type -> symbol */
    struct route *routes; /* type -> streams reading it, in declaration order */
    struct route *timed;  /* type -> timed streams it drives, upstream first */
    int64_t *lag;         /* type -> watermark out_of_order, ms */
    struct vpl_binding *bindings;
    size_t nbindings;
    struct vpl_output *outputs;
    size_t noutputs;
    void **regex; /* compiled literal regexes (regex_t *), freed with the program */
    uint32_t nregex, capregex;
};

static inline const uint8_t *vpl_program_digest_bytes(const struct vpl_program *p)
{
    return p->digest;
}

static inline const char *sym_name(const struct vpl_program *p, uint32_t id)
{
    return p->syms.v[id]->node.key;
}

#endif
