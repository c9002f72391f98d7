/* A detect unit (internal to host/unit): a VPL program over the unit's messages in
 * stream order, its state split into slices, each kept by one engine in the process
 * that holds the slice's lease, checkpointed in the state stream and restored where
 * the slice goes next.
 *
 * detect_handler.c runs the batches (binding subjects to event types, feeding every
 * owned slice's engine, naming each alert by its cause: <unit>:<program digest>:<slice>:
 * <input stream seq>:<index>, so that an alert made again by a replay is stored once).
 * detect_state.c keeps the slices: takes them over (restore, then the reader seeks
 * back to replay what followed the checkpoint), checkpoints them, and lets them go. */
#ifndef GUST_UNIT_DETECT_H
#define GUST_UNIT_DETECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../vpl/vpl.h"
#include "handlers.h"

#include "lease_port.h"

struct gust_bus;

struct binding {
    char *subject;
    const char *event_type; /* borrowed from the program */
};

struct output {
    const char *stream; /* borrowed from the program */
    char *subject;
};

struct slice {
    struct detect *d;
    uint32_t index;
    char lease_key[128];     /* detect.<unit>.<index> */
    char store_name[128];    /* <unit>.<index> in the state stream */
    atomic_int wanted;       /* the lease thread's: this process holds the lease */
    struct vpl_engine *eng;  /* the unit thread's: NULL while not kept here */
    uint64_t pos;            /* stream sequence of the last input applied and stored */
    uint64_t saved;          /* the position its checkpoint holds (or it was taken over at) */
    uint64_t fed;            /* inputs applied since the last checkpoint */
    int64_t checkpoint_at;   /* monotonic ms of the last checkpoint (or of the take-over) */
    uint32_t alerts;         /* alerts of the current input, for their ids */
    int warned;              /* its checkpoint could not be read: said once */
};

/* What /units shows, written by the unit thread under lock. */
struct detect_view {
    char started[160]; /* how the slices were taken over last */
    uint64_t restores, replayed, checkpoints, checkpoint_failures;
    uint64_t restore_ms;      /* the last take-over: restore and seek */
    uint64_t checkpoint_seq;  /* the last checkpoint's position */
    uint64_t checkpoint_bytes;
    uint64_t checkpoint_ms;   /* how long it took */
    int64_t checkpoint_mono;  /* when (monotonic ms), 0: none yet */
    struct vpl_stats total;   /* over the slices held here */
    uint64_t position;        /* the lowest position of the slices held here */
    uint64_t floor;           /* the lowest sequence a take-over may read again; 0 unknown */
    uint64_t owned;           /* slices held here */
    char owned_list[256];
};

struct detect {
    char unit[80];
    struct vpl_program *prog;
    char digest[13]; /* the first 12 hex digits of the program's, for message ids */
    struct binding *bind;
    size_t nbind;
    struct output *out;
    size_t nout;
    /* where the state goes; NULL bus: a check (gust -t), nothing is run */
    struct gust_bus *bus;
    struct gust_lease_port leases_port;
    const struct gust_lease_port *leases; /* &leases_port; NULL on the edge path, in a check */
    int edge;                   /* one slice, always here, fed from memory: no positions */
    char stream[64];
    int64_t checkpoint_interval_ms;
    uint64_t checkpoint_events;
    int64_t idle_tick_ms;    /* 0: off */
    int64_t last_input_wall; /* wall ms of the last input read (not a tick) */
    int64_t last_tick_wall;  /* wall ms of the last tick sent */
    int tick_failing;        /* the last tick could not be stored (logged once) */
    int64_t timer_sent;      /* the time (wall ms) of the last timer record stored */
    uint64_t first_seq; /* where a slice without any checkpoint starts reading */
    int first_seq_known;
    uint32_t nslices;
    struct slice *slices;
    int seek;            /* a slice was taken over: read again from the lowest position */
    uint64_t replay_until; /* inputs up to this one were stored before the take-over */
    /* From a take-over until the read reaches the end of what was stored, or the
     * position passes replay_until: no checkpoint on time meanwhile (detect_state.c). */
    int catching_up;

    /* per batch */
    struct gust_batch *batch;
    size_t msg;
    struct slice *cur;
    int push_failed;
    uint32_t *emit_slice; /* per emit of the batch: its slice and index */
    uint32_t *emit_index;
    size_t emit_cap;

    pthread_mutex_t lock;
    struct detect_view view;
};

/* detect_state.c */
int detect_slices_init(struct detect *d, struct gust_err *err);
/* Takes over the slices whose lease this process got, lets go of those it lost;
 * returns an enum gust_between. */
int detect_between(void *impl, uint64_t *seq);
/* After a stored batch: positions, and checkpoints when due. */
void detect_stored(void *impl, const struct gust_batch *b);
void detect_stopped(void *impl, int clean);
void detect_slices_free(struct detect *d);
/* The view's floor: what the checkpoints of every slice let go of. Unit thread. */
void detect_update_floor(struct detect *d);
/* The handler's floor (unit.h). Any thread. */
uint64_t detect_floor(void *impl);
/* The view's counters from the engines held here. Unit thread. */
void detect_refresh_view(struct detect *d);

/* detect_tick.c: when this process holds slice 0, stores on the unit's input (header
 * GUST_TICK_HEADER: the unit) an idle tick {"@tick": wall ms - idle_tick} when the
 * input has been quiet for idle_tick, and a timer record {"@timer": ms} when a timer()
 * of the program is due; the unit applies them when it reads them back in stream
 * order. Unit thread, between batches. */
void detect_tick_due(struct detect *d);

#endif
