/* Engine internals shared by engine.c (decode, clocks, routing, alerts), seq.c
 * (sequence runs) and window.c (windows). */
#ifndef VPL_RUNTIME_H
#define VPL_RUNTIME_H

#include "eval.h"
#include "heap.h"
#include "hmap.h"
#include "json.h"
#include "program.h"
#include "ptab.h"
#include "rfc3339.h"

/* A match waiting to be emitted: runs completed by one event come out in creation
 * order, so matches are collected during the pass and sorted. */
struct pend {
    struct run *run;
    const struct vpl_event *ev; /* what bare names read in the emit */
    uint32_t pos;               /* order of collection, to keep the sort stable */
    int32_t slot;               /* .each(): this Kleene slot is seen with `view` events; */
    uint32_t view;              /* slot -1: every closure whole */
    uint8_t done;               /* free the run after emitting */
};

/* A derived event waiting for the streams that read it. */
struct qitem {
    uint32_t type;
    uint8_t from_state;   /* made by a sequence or a window (see rt_finish) */
    struct vpl_event *ev; /* a reference of its own when ev is held (refs > 0) */
};

/* A reference the current input holds until it ends: a frozen copy of a transient
 * event (src, made with keep), or an event a queued derived event may still read
 * (src NULL). */
struct held {
    struct vpl_event *ev;
    const struct vpl_event *src;
    const struct fieldset *keep;
};

/* State of one stream: partitions of runs or windows, and their deadlines. */
struct sstate {
    struct hmap parts; /* windows' partitions */
    struct ptab runs;  /* sequences' partitions (their runs) */
    void *single;  /* the one partition of an unpartitioned stream */
    void *pinned;  /* a partition being iterated: not freed when it empties */
    struct heap due;
    uint64_t nparts;
};

struct vpl_engine {
    const struct vpl_program *prog;
    struct vpl_limits lim;
    struct decoder *dec;
    struct arena scratch; /* everything transient of the current input */
    struct buf out;       /* alert JSON */
    struct buf key;       /* partition key text */
    struct buf jkey;      /* a join key (join.h) */
    struct buf *keytext;  /* per symbol, built on first use: ,"name": */
    struct buf *headtext; /* per stream, built on first use: {"event_type":"Name" */
    struct rfc3339_cache tstext; /* the alerts' "timestamp" */
    int64_t *clock;       /* per routing type: event-time clock */
    struct sstate *ss;    /* per stream */
    int64_t *timer_next;  /* per stream: a timer's next firing time; INT64_MIN: not started */
    struct held *held;    /* references the current input holds */
    uint32_t nheld, capheld;
    struct pend *pend;
    uint32_t npend, cappend;
    struct qitem *queue;  /* derived events of the current input, routed breadth-first */
    uint32_t qhead, nqueue, capqueue;
    vpl_alert_fn cb;
    void *ud;
    int oom;
    uint64_t seq; /* creation order of runs and windows */
    uint32_t slice, nslices; /* vpl_engine_set_slice: the partitions this engine keeps */
    uint32_t sym_timestamp, sym_event_type;
    struct vpl_stats st;
    struct memo memo; /* of the context rt_ectx made last */
    char errmsg[256];
};

/* ---- engine.c ---- */

/* Takes a reference to ev for state that outlives the input. A transient event is
 * frozen with the fields of keep (NULL: all of them), once for every holder that
 * asks for the same set or a subset of what an earlier copy has. NULL on OOM (e->oom
 * set). */
struct vpl_event *rt_hold(struct vpl_engine *e, struct vpl_event *ev, const struct fieldset *keep);
void rt_drop(struct vpl_engine *e, struct vpl_event *ev);

/* Accounted heap memory for runs, partitions and window buffers. */
void *rt_alloc(struct vpl_engine *e, size_t n);
void *rt_realloc(struct vpl_engine *e, void *p, size_t old, size_t n);
void rt_free(struct vpl_engine *e, void *p, size_t n);

void rt_ectx(struct vpl_engine *e, struct ectx *c, const struct vpl_event *ev, int64_t time);

/* Runs a stream's stages from c and, when the record survives, delivers it as an
 * alert (streams with .emit) and queues it for the streams that read this one.
 * from_state: the record comes from a sequence's or a window's state (directly or
 * through stateless streams). With slices, state lives in one engine only, but what
 * stateless streams make of input events is made in every engine: such alerts are
 * delivered by slice 0 alone. */
void rt_finish(struct vpl_engine *e, uint32_t si, const struct stage *st, uint32_t n,
               struct ectx *c, int from_state);

/* Whether this engine keeps the partition whose key hashes (rt_partition_key) to
 * key_hash (vpl_engine_set_slice); unpartitioned state is slice 0's. */
int rt_owns(const struct vpl_engine *e, uint64_t key_hash, int partitioned);

struct snap_r;
/* A partition's key as a snapshot holds it (borrowed from the input), and its hash:
 * NULL, with r->bad set, when it is unreadable, a key of an unpartitioned stream, or
 * another slice's partition. what names the state in messages ("stream", "window"). */
const char *rt_snap_part_key(struct snap_r *r, const struct vpl_engine *e, const char *stream, int partitioned,
                             const char *what, uint32_t *klen, uint64_t *hash);

/* The text of ev's partition field in e->key, and its hash. */
void rt_partition_key(struct vpl_engine *e, const struct vpl_event *ev, uint32_t field,
                      uint64_t *hash);

int rt_pend(struct vpl_engine *e, struct run *r, const struct vpl_event *ev, int32_t slot,
            uint32_t view, int done);

/* The clock that closes the windows and deadlines of stream si. */
int64_t rt_stream_clock(const struct vpl_engine *e, uint32_t si);

/* Decodes json[0..len) and routes it as one input (e->cb set by the caller): 0, or
 * VPL_EJSON / VPL_ENOMEM with e->errmsg (then nothing was routed). rt_end_feed() after
 * each input releases what it held: 0 or VPL_ENOMEM. */
int rt_feed(struct vpl_engine *e, const char *json, size_t len, const char *default_event_type,
            int64_t arrival_ms);
int rt_end_feed(struct vpl_engine *e);

/* ---- timer.c ---- */
/* A stored timer record at now_ms: starts the timers (the first one), then fires what
 * is due by now_ms, each firing an input of its own. 0 or VPL_ENOMEM. */
int timer_fire(struct vpl_engine *e, int64_t now_ms, vpl_alert_fn cb, void *ud);

/* ---- seq.c ---- */
void seq_init(struct vpl_engine *e, uint32_t si);
void seq_input(struct vpl_engine *e, uint32_t si, uint32_t type, struct vpl_event *ev);
void seq_clock(struct vpl_engine *e, uint32_t si, int64_t clock, int64_t now);
void seq_destroy(struct vpl_engine *e, uint32_t si);
struct snap_w;
struct snap_r;
void seq_save(struct vpl_engine *e, uint32_t si, struct snap_w *w);
int seq_load(struct vpl_engine *e, uint32_t si, struct snap_r *r);

/* ---- window.c ---- */
void window_input(struct vpl_engine *e, uint32_t si, struct vpl_event *ev);
void window_join(struct vpl_engine *e, uint32_t si, struct vpl_event *ev, int side);
void window_clock(struct vpl_engine *e, uint32_t si, int64_t clock, int64_t now);
void window_destroy(struct vpl_engine *e, uint32_t si);
void window_save(struct vpl_engine *e, uint32_t si, struct snap_w *w);
int window_load(struct vpl_engine *e, uint32_t si, struct snap_r *r);

#endif
