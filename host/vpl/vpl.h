/* VPL correlation engine: compile a VPL program, feed it JSON events, get alerts.
 *
 * The library has no dependency on the rest of gust (only libc), so the
 * detect unit, the CLI, the tests and the fuzzers all link the same code.
 *
 * Ownership rules, for every function below:
 *  - A `const char *` / buffer parameter is borrowed for the duration of the call.
 *  - Strings and arrays returned by vpl_program_* are owned by the program and stay
 *    valid until vpl_program_destroy.
 *  - An engine borrows its program: destroy every engine before its program.
 *  - An engine is single-threaded: one thread at a time may call into it.
 *  - `_destroy(NULL)` is a no-op.
 *
 * Errors: functions that can fail return 0 or a negative VPL_E* code and, when given
 * a struct vpl_error, fill it with "line:col: message" (message says what was
 * expected). */
#ifndef GUST_VPL_H
#define GUST_VPL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    VPL_OK = 0,
    VPL_EINVAL = -1,    /* bad argument from the caller */
    VPL_ENOMEM = -2,
    VPL_ESYNTAX = -3,   /* program: lexical or syntax error */
    VPL_ESEMANTIC = -4, /* program: name, type or structure error */
    VPL_EJSON = -5,     /* event: malformed JSON (dead-letter it) */
    VPL_ESNAPSHOT = -6, /* snapshot: corrupt, truncated, or of another program, format
                           version or slice */
};

struct vpl_error {
    int code;      /* the VPL_E* value also returned */
    uint32_t line; /* 1-based position in the program, 0 when not about the source */
    uint32_t col;
    char msg[384]; /* "line:col: message", or just "message" when line is 0 */
};

/* ---- Program ------------------------------------------------------------------ */

struct vpl_program;

/* Compiles src[0..len) (need not be NUL-terminated). `filename` is only used by
 * callers for messages and may be NULL. On success *out owns a new program. */
int vpl_program_compile(const char *src, size_t len, const char *filename,
                        struct vpl_program **out, struct vpl_error *err);
void vpl_program_destroy(struct vpl_program *prog);

/* `stream S = Type.from(Conn, topic: "subj")`: events on `topic` are of `event_type`.
 * A detect unit subscribes to every topic and passes event_type as the default type
 * of payloads that carry no "event_type" key. */
struct vpl_binding {
    const char *event_type;
    const char *connector;
    const char *topic; /* NULL when .from() has no topic: parameter */
};

/* Every stream that produces alerts (has .emit()), in declaration order, with the
 * topic of its `.to(Conn, topic: "subj")`, or NULL (the host picks a default). */
struct vpl_output {
    const char *stream;
    const char *connector; /* NULL without .to() */
    const char *topic;     /* NULL without .to() or without a topic: parameter */
};

/* 32 hex digits naming the program's text: equal texts, equal digests. Owned by the
 * program. */
const char *vpl_program_digest(const struct vpl_program *prog);

size_t vpl_program_bindings(const struct vpl_program *prog, const struct vpl_binding **out);
/* The number of timer() streams: a host runs them by storing timer records
 * (vpl_engine_tick, VPL_TICK_TIMER). */
size_t vpl_program_timers(const struct vpl_program *prog);
size_t vpl_program_outputs(const struct vpl_program *prog, const struct vpl_output **out);

/* ---- Engine -------------------------------------------------------------------- */

/* Bounds on state. Whatever they drop is counted in vpl_stats. Zero fields take the
 * defaults of vpl_limits_default(). */
struct vpl_limits {
    uint32_t max_partitions;         /* per stream (sequence or window), default 100000 */
    uint32_t max_runs_per_partition; /* open sequence runs, default 10000 (new ones dropped) */
    uint32_t max_window_events;      /* events held by one window, default 100000 */
    uint32_t max_fields;             /* top-level fields kept per event, default 256 */
    uint32_t max_string;             /* bytes per string value, default 65536 (truncated) */
    uint32_t max_depth;              /* JSON nesting kept, default 32 (deeper is dropped) */
    uint32_t max_array;              /* elements per array or object, default 4096 */
};

struct vpl_limits vpl_limits_default(void);

struct vpl_stats {
    uint64_t events;             /* events fed successfully */
    uint64_t events_unrouted;    /* events whose type no stream reads */
    uint64_t ticks;              /* ticks applied (vpl_engine_tick) */
    uint64_t alerts;             /* alerts delivered to callbacks */
    uint64_t open_runs;          /* sequence runs open now */
    uint64_t partitions;         /* partitions (sequence + window) alive now */
    uint64_t window_events;      /* events buffered in windows now */
    uint64_t state_bytes;        /* heap bytes held by runs, partitions, windows and
                                    the events they keep (not the program) */
    uint64_t runs_dropped;       /* runs not opened: max_runs_per_partition */
    uint64_t partitions_dropped; /* partitions not created: max_partitions */
    uint64_t window_dropped;     /* events not buffered: max_window_events */
    uint64_t kleene_truncated;   /* closure events beyond the 20-event cap */
    uint64_t input_truncated;    /* fields, strings or elements dropped by the decoder */
};

struct vpl_engine;

/* `limits` may be NULL for the defaults. The engine borrows `prog`. */
int vpl_engine_create(const struct vpl_program *prog, const struct vpl_limits *limits,
                      struct vpl_engine **out, struct vpl_error *err);
void vpl_engine_destroy(struct vpl_engine *eng);

/* One alert: `stream` is the emitting stream's name, `topic` its .to() topic or NULL,
 * `json[0..len)` the alert object (NUL-terminated too):
 * {"event_type":"<stream>","timestamp":"<RFC 3339>",<emit fields in order>}.
 * All pointers are borrowed for the duration of the callback only. The callback must
 * not call back into the engine. */
typedef void (*vpl_alert_fn)(void *ud, const char *stream, const char *topic,
                             const char *json, size_t len);

/* Feeds one event. `json[0..len)` is one JSON value (need not be NUL-terminated).
 * `default_event_type` (may be NULL) types a payload without an "event_type" key.
 * `arrival_ms` is the event time of a payload without @timestamp/ts/timestamp.
 * Alerts caused by the event are delivered through cb before the call returns.
 * Returns 0, VPL_EJSON for undecodable input (the engine state is unchanged), or
 * VPL_ENOMEM. vpl_engine_last_error() describes the last failure. */
int vpl_engine_feed_json(struct vpl_engine *eng, const char *json, size_t len,
                         const char *default_event_type, int64_t arrival_ms,
                         vpl_alert_fn cb, void *ud);

/* Stored ticks, as a detect unit stores them on its input and as vpl-run reads them:
 *  - VPL_TICK_IDLE, {"@tick": <epoch ms>}: moves every event-time clock to now_ms, as
 *    an event of each type at that time would (a type's lag applies), and closes the
 *    windows and fires the absences it has passed: for a unit whose input is quiet
 *    (idle_tick). A clock already past now_ms stays.
 *  - VPL_TICK_TIMER, {"@timer": <epoch ms>}: the wall clock reached now_ms: the first
 *    one starts the program's timer() streams, every one fires what is due by then,
 *    each firing an event of type Timer_<stream> at its own time. Clocks move only by
 *    those events.
 * 0, VPL_EINVAL (another kind), or VPL_ENOMEM. */
enum { VPL_TICK_IDLE = 1, VPL_TICK_TIMER = 2 };
int vpl_engine_tick(struct vpl_engine *eng, int kind, int64_t now_ms, vpl_alert_fn cb, void *ud);
/* 1 when json[0..len) is a stored tick, {"@tick": <epoch ms>} or {"@timer": <epoch ms>}
 * (an integer, the only key), with *kind and *ms set; 0 for anything else (an event). */
int vpl_tick_of(const char *json, size_t len, int *kind, int64_t *ms);
/* When the next timer is due (epoch ms): INT64_MIN before the first timer record has
 * started them, INT64_MAX for a program without timer() streams. */
int64_t vpl_engine_timer_due(const struct vpl_engine *eng);

const char *vpl_engine_last_error(const struct vpl_engine *eng);

/* ---- Slices -------------------------------------------------------------------- */

/* Makes the engine keep only the state of slice `slice` of `nslices` (before any
 * feed): the partitions whose key text hashes there (unpartitioned streams are slice
 * 0's), so that N engines, each fed every event, split a program's state between them
 * and together deliver exactly the alerts of one engine. Alerts of stateless streams
 * over input events are delivered by slice 0. Event-time clocks move with every event
 * in every engine, so timing is that of one engine. Refused (VPL_EINVAL, naming the
 * streams) for a program in which a sequence or a window reads what another sequence
 * or window made: that state would have to move between engines. nslices 1 is one
 * whole engine (the default). */
int vpl_engine_set_slice(struct vpl_engine *eng, uint32_t slice, uint32_t nslices,
                         struct vpl_error *err);

/* ---- Snapshots ----------------------------------------------------------------- */

/* The engine's complete state (partitions, open runs and the events they hold,
 * windows and their events, deadlines, event-time clocks, counters) as bytes tagged
 * with the format version, the program's digest and the slice, and checksummed. Taken
 * between feeds. *out is malloc'd (the caller frees it), *len its size. 0 or
 * VPL_ENOMEM. */
int vpl_engine_snapshot(struct vpl_engine *eng, void **out, size_t *len,
                        struct vpl_error *err);
/* Loads a snapshot into a new engine (created for the same program, limits and slice,
 * and not fed yet): afterwards it behaves exactly as the engine the snapshot was taken
 * from. VPL_ESNAPSHOT for input that is corrupt, truncated, of another format version,
 * program or slice, or beyond the engine's limits (the engine stays empty and usable);
 * VPL_EINVAL when the engine is not new; VPL_ENOMEM. Never reads outside data. */
int vpl_engine_restore(struct vpl_engine *eng, const void *data, size_t len,
                       struct vpl_error *err);

void vpl_engine_stats(const struct vpl_engine *eng, struct vpl_stats *out);

#ifdef __cplusplus
}
#endif

#endif
