/* The handlers a unit can run on the consumer core. Each takes ownership of what it
 * is given and frees it in its destroy. */
#ifndef GUST_UNIT_HANDLERS_H
#define GUST_UNIT_HANDLERS_H

#include <stdint.h>

#include "gust/err.h"
#include "unit.h"

struct gust_flow_opts;
struct gust_kv_state_conf;
struct gust_kv_state_stats;

/* A Lua flow for `unit`, made from opts (borrowed; the log callback is the handler's):
 * each message runs on_event with its meta, its emits are published; the script's log
 * lines go to gust's log and /events, at most log_rate a second (the rest counted).
 * With `state` (borrowed; NULL: none), its durable state is on NATS KV
 * (flow_state.h), committed between the batch and its emits. Fails as
 * gust_flow_create does. *source is the script's `source` (or NULL), owned by the
 * handler. */
int gust_flow_handler_create(const char *unit, const struct gust_flow_opts *opts, long log_rate,
                             const struct gust_kv_state_conf *state, struct gust_handler *out, const char **source,
                             struct gust_err *err);
/* A flow handler's state counters: 1 with *out filled, 0 when it has no state. Any
 * thread. */
int gust_flow_handler_state(void *impl, struct gust_kv_state_stats *out);
/* A flow handler's Lua heap bytes (after its last message) and the runs that failed
 * for going over memory_max. Any thread. */
void gust_flow_handler_memory(void *impl, uint64_t *heap_bytes, uint64_t *failures);
/* Its memory_max in bytes (0: no bound). */
uint64_t gust_flow_handler_memory_max(void *impl);
/* Forwards each message unchanged to `to` (copied). impl is NULL when out of memory. */
struct gust_handler gust_relay_handler(const char *to);
struct gust_bus;
struct gust_lease_port;
struct detect_view;

struct gust_detect_opts {
    const char *unit;
    const char *prefix; /* "ev." of `subjects ev.>;` */
    const char *path;   /* the program, src[0..len) read from it */
    const char *src;
    size_t len;
    uint32_t slices;
    int64_t checkpoint_interval_ms; /* 0: only at a clean stop */
    int64_t checkpoint_events;      /* 0: no bound */
    int64_t idle_tick_ms;           /* 0: the clock moves with events only */
    const char *stream;             /* the event stream it reads */
    int edge;                       /* the edge path: one slice, always here, no positions */
    struct gust_bus *bus;           /* NULL: only check the program (gust -t) */
    const struct gust_lease_port *leases; /* the slices' leases (copied; not on the edge path) */
};

/* A VPL program fed with the unit's messages in stream order; its alerts go to each
 * stream's .to() topic, or <prefix>detect.<unit>.<stream>, and a .from() without a topic
 * reads <prefix><EventType>. Fills *filter (owned by the caller) with the one subject
 * filter covering every .from() subject. Errors name the program's path (and
 * line:col). The unit reads its input with an ordered feed (settle
 * GUST_SETTLE_ORDERED) from the position its checkpoints give (detect.h). */
int gust_detect_handler_create(const struct gust_detect_opts *o, struct gust_handler *out, char **filter,
                               struct gust_err *err);
/* Attaches the slices' leases: call once the unit exists, before it starts. */
int gust_detect_handler_start(void *impl, struct gust_err *err);
/* The detect part of /units and /metrics. Any thread. */
void gust_detect_view(void *impl, struct detect_view *out);

#endif
