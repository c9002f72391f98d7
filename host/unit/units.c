#include "units.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/bus.h"
#include "../common/json_out.h"
#include "detect.h"
#include "edge.h"
#include "flow_state.h"
#include "handlers.h"
#include "plugin_counters.h"
#include "recent.h"

void gust_units_init(struct gust_units *u)
{
    memset(u, 0, sizeof(*u));
    pthread_mutex_init(&u->lock, NULL);
    u->generation = 1;
}

int gust_units_source_add(struct gust_units *u, const char *name, const char *type,
                          size_t (*counters)(void *ctx, struct gust_plugin_counter *out, size_t max), void *ctx,
                          struct gust_tally *published, struct gust_plugin_note *note)
{
    pthread_mutex_lock(&u->lock);
    if (u->nsources == u->sources_cap) {
        size_t cap = u->sources_cap ? u->sources_cap * 2 : 8;
        struct gust_units_source *v = realloc(u->sources, cap * sizeof(*v));
        if (v == NULL) {
            pthread_mutex_unlock(&u->lock);
            return GUST_ENOMEM;
        }
        u->sources = v;
        u->sources_cap = cap;
    }
    struct gust_units_source *e = &u->sources[u->nsources++];
    snprintf(e->name, sizeof(e->name), "%s", name);
    snprintf(e->type, sizeof(e->type), "%s", type);
    e->published = published;
    e->counters = counters;
    e->ctx = ctx;
    e->note = note;
    pthread_mutex_unlock(&u->lock);
    return 0;
}

void gust_units_source_remove(struct gust_units *u, const struct gust_tally *published)
{
    pthread_mutex_lock(&u->lock);
    for (size_t i = 0; i < u->nsources; i++) {
        if (u->sources[i].published == published) {
            u->sources[i] = u->sources[--u->nsources];
            break;
        }
    }
    pthread_mutex_unlock(&u->lock);
}

/* Under the lock: source i's counters into c. */
static size_t source_counters(struct gust_units *u, size_t i, struct gust_plugin_counter *c)
{
    if (u->sources[i].counters == NULL) {
        return 0;
    }
    return gust_plugin_counters_read(u->sources[i].counters, u->sources[i].ctx, c);
}

int gust_units_add(struct gust_units *u, struct gust_consumer *c)
{
    int rc = GUST_ENOMEM;
    pthread_mutex_lock(&u->lock);
    size_t i = 0;
    while (i < u->n && !(gust_consumer_stopped(u->v[i]) &&
                         strcmp(gust_consumer_name(u->v[i]), gust_consumer_name(c)) == 0)) {
        i++;
    }
    if (i < u->n) {
        struct gust_consumer **r = realloc(u->retired, (u->nretired + 1) * sizeof(*r));
        if (r != NULL) {
            u->retired = r;
            r[u->nretired++] = u->v[i];
            u->v[i] = c;
            rc = 0;
        }
    } else {
        struct gust_consumer **v = realloc(u->v, (u->n + 1) * sizeof(*v));
        if (v != NULL) {
            u->v = v;
            v[u->n++] = c;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&u->lock);
    if (rc != 0) {
        gust_consumer_destroy(c);
    }
    return rc;
}

void gust_units_stop(struct gust_units *u)
{
    /* Only the thread that starts and stops units changes the list: no lock needed to
     * walk it here, and none may be held while threads are joined. */
    for (size_t i = 0; i < u->n; i++) {
        if (!gust_consumer_kept(u->v[i])) {
            gust_consumer_request_stop(u->v[i]);
        }
    }
    for (size_t i = 0; i < u->n; i++) {
        if (!gust_consumer_kept(u->v[i])) {
            gust_consumer_stop(u->v[i]);
        }
    }
}

int gust_units_keep(struct gust_units *u, const char *name, const char *identity)
{
    for (size_t i = 0; i < u->n; i++) {
        struct gust_consumer *c = u->v[i];
        const char *id = gust_consumer_identity(c);
        if (!gust_consumer_stopped(c) && strcmp(gust_consumer_name(c), name) == 0 && id != NULL &&
            strcmp(id, identity) == 0) {
            gust_consumer_set_kept(c, 1);
            return 1;
        }
    }
    return 0;
}

struct gust_consumer *gust_units_adopt(struct gust_units *u, const char *name)
{
    for (size_t i = 0; i < u->n; i++) {
        if (gust_consumer_kept(u->v[i]) && strcmp(gust_consumer_name(u->v[i]), name) == 0) {
            gust_consumer_set_kept(u->v[i], 0);
            return u->v[i];
        }
    }
    return NULL;
}

void gust_units_drop_stopped(struct gust_units *u)
{
    pthread_mutex_lock(&u->lock);
    /* The retired ones, and the stopped ones no new unit replaced (units a reload removed). */
    size_t ndrop = u->nretired, kept = 0;
    struct gust_consumer **drop = u->retired;
    struct gust_consumer **more = realloc(drop, (ndrop + u->n + 1) * sizeof(*drop));
    if (more != NULL) {
        drop = more;
        for (size_t i = 0; i < u->n; i++) {
            if (gust_consumer_stopped(u->v[i])) {
                drop[ndrop++] = u->v[i];
            } else {
                u->v[kept++] = u->v[i];
            }
        }
        u->n = kept;
    }
    u->retired = NULL;
    u->nretired = 0;
    pthread_mutex_unlock(&u->lock);
    for (size_t i = 0; i < ndrop; i++) {
        gust_consumer_destroy(drop[i]);
    }
    free(drop);
}

void gust_units_each(struct gust_units *u, void (*fn)(void *ud, struct gust_consumer *c), void *ud)
{
    pthread_mutex_lock(&u->lock);
    for (size_t i = 0; i < u->n; i++) {
        fn(ud, u->v[i]);
    }
    pthread_mutex_unlock(&u->lock);
}

void gust_units_reloaded(struct gust_units *u, const char *error)
{
    pthread_mutex_lock(&u->lock);
    u->reloads++;
    if (error == NULL) {
        u->generation++;
        u->last_reload_error[0] = '\0';
    } else {
        snprintf(u->last_reload_error, sizeof(u->last_reload_error), "%s", error);
    }
    pthread_mutex_unlock(&u->lock);
}

struct counter {
    const char *name;
    const char *help;
    size_t offset;
    int is_ns; /* shown in seconds */
};

static const struct counter counters[] = {
    {"events_ok", "Messages handled and acked.", offsetof(struct gust_unit_stats, events_ok), 0},
    {"events_failed", "Failed attempts (each retry counts).", offsetof(struct gust_unit_stats, events_failed), 0},
    {"emits", "Messages published by the unit.", offsetof(struct gust_unit_stats, emits), 0},
    {"dead_letters", "Messages sent to the dead-letter stream.", offsetof(struct gust_unit_stats, dead_letters), 0},
    {"fetches", "Fetch rounds.", offsetof(struct gust_unit_stats, fetches), 0},
    {"fetch_seconds", "Time spent fetching.", offsetof(struct gust_unit_stats, fetch_ns), 1},
    {"process_seconds", "Time spent running the handler.", offsetof(struct gust_unit_stats, process_ns), 1},
    {"barrier_seconds", "Time spent waiting for PubAcks.", offsetof(struct gust_unit_stats, barrier_ns), 1},
};

static uint64_t read_counter(const struct gust_consumer *c, const struct counter *k)
{
    return atomic_load((atomic_uint_fast64_t *)((char *)gust_consumer_stats(c) + k->offset));
}

/* Messages its durable consumer has yet to take or settle; -1: not known (no bus, not
 * read yet, or not a durable consumer). */
static int64_t unit_backlog(struct gust_units *u, const struct gust_consumer *c)
{
    if (u->bus == NULL || !gust_consumer_durable(c)) {
        return -1;
    }
    char durable[160];
    snprintf(durable, sizeof(durable), "%s_%s", gust_consumer_kind(c), gust_consumer_name(c));
    return gust_bus_backlog(u->bus, durable);
}

void gust_units_readers(void *ud, struct gust_bus_readers *r)
{
    struct gust_units *u = ud;
    r->ready = 1;
    r->n = 0;
    r->floor = UINT64_MAX;
    int64_t now = gust_clock_mono_ms();
    pthread_mutex_lock(&u->lock);
    for (size_t i = 0; i < u->n; i++) {
        const struct gust_consumer *c = u->v[i];
        const struct gust_handler *h = gust_consumer_handler(c);
        if (gust_consumer_durable(c)) {
            if (r->n == GUST_BUS_READERS_MAX) {
                r->ready = 0; /* cannot tell them all: remove nothing */
                break;
            }
            const struct gust_unit_stats *st = gust_consumer_stats(c);
            int busy = now - atomic_load(&st->read_ms) < 1000;
            r->busy_behind[r->n] = busy ? (int64_t)atomic_load(&st->behind) : -1;
            snprintf(r->names[r->n++], sizeof(r->names[0]), "%s_%s", gust_consumer_kind(c), gust_consumer_name(c));
        } else if (h->floor != NULL) {
            uint64_t f = h->floor(h->impl);
            r->floor = f < r->floor ? f : r->floor;
        }
    }
    pthread_mutex_unlock(&u->lock);
}

void gust_units_render_fields(struct gust_units *u, struct gust_buf *out)
{
    pthread_mutex_lock(&u->lock);
    gust_buf_printf(out, "\"generation\":%" PRIu64 ",\"reload_count\":%" PRIu64 ",\"last_reload_error\":",
                    u->generation, u->reloads);
    if (u->last_reload_error[0] != '\0') {
        gust_json_append_string(out, u->last_reload_error, strlen(u->last_reload_error));
    } else {
        gust_buf_append(out, "null", 4);
    }
    gust_buf_append(out, ",\"units\":[", 10);
    for (size_t i = 0; i < u->n; i++) {
        struct gust_consumer *c = u->v[i];
        const char *name = gust_consumer_name(c);
        const char *filter = gust_consumer_source(c);
        gust_buf_printf(out, "%s{\"name\":", i > 0 ? "," : "");
        gust_json_append_string(out, name, strlen(name));
        gust_buf_printf(out, ",\"kind\":\"%s\",\"state\":\"%s\",\"source\":", gust_consumer_kind(c),
                        gust_consumer_state(c));
        gust_json_append_string(out, filter, strlen(filter));
        for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
            uint64_t v = read_counter(c, &counters[k]);
            if (counters[k].is_ns) {
                gust_buf_printf(out, ",\"%s\":%.6f", counters[k].name, (double)v / 1e9);
            } else {
                gust_buf_printf(out, ",\"%s\":%" PRIu64, counters[k].name, v);
            }
        }
        struct gust_edge *e = gust_consumer_edge(c);
        if (e != NULL) { /* source names are unit names: nothing to escape */
            gust_buf_printf(out,
                            ",\"edge\":{\"source\":\"%s\",\"queue_depth\":%zu,\"queue_capacity\":%zu,"
                            "\"received\":%" PRIu64 ",\"dropped\":%" PRIu64 "}",
                            gust_edge_source(e), gust_edge_depth(e), gust_edge_capacity(e), gust_edge_received(e),
                            gust_edge_dropped(e));
        }
        const struct gust_handler *h = gust_consumer_handler(c);
        if (h->render_json != NULL) {
            h->render_json(h->impl, out);
        }
        if (strcmp(gust_consumer_kind(c), "flow") == 0) { /* the script's log.* lines */
            uint64_t lines, dropped;
            gust_recent_log_counts(gust_recent_find(name), &lines, &dropped);
            gust_buf_printf(out, ",\"log\":{\"lines\":%" PRIu64 ",\"dropped\":%" PRIu64 "}", lines, dropped);
        }
        int64_t backlog = unit_backlog(u, c);
        if (backlog >= 0) {
            gust_buf_printf(out, ",\"backlog\":%" PRId64, backlog);
        } else {
            gust_buf_append(out, ",\"backlog\":null", 15);
        }
        char err[GUST_ERROR_MAX];
        int64_t at_ms = 0;
        gust_consumer_last_error_at(c, err, sizeof(err), &at_ms);
        gust_buf_printf(out, ",\"retries\":%" PRIu64 ",\"last_error\":", gust_consumer_retries(c));
        if (err[0] != '\0') {
            gust_json_append_string(out, err, strlen(err));
            /* When, so that an old error is told from a new one: the state says whether
             * the unit works now. */
            char when[GUST_RFC3339_SIZE];
            gust_rfc3339_ms(at_ms, when);
            gust_buf_printf(out, ",\"last_error_at\":\"%s\"", when);
        } else {
            gust_buf_printf(out, "null,\"last_error_at\":null");
        }
        gust_buf_append(out, "}", 1);
    }
    gust_buf_append(out, "]", 1);
    /* The plugin sources running in this process: their counters (ABI 1.4) and error (1.6). */
    gust_buf_append(out, ",\"sources\":[", 12);
    for (size_t i = 0; i < u->nsources; i++) {
        struct gust_plugin_counter c[GUST_PLUGIN_COUNTERS_MAX];
        size_t n = source_counters(u, i, c);
        gust_buf_printf(out, "%s{\"name\":", i > 0 ? "," : "");
        gust_json_append_string(out, u->sources[i].name, strlen(u->sources[i].name));
        gust_plugin_counters_json(out, c, n, 1);
        gust_plugin_note_json(out, u->sources[i].note);
        gust_buf_append(out, "}", 1);
    }
    gust_buf_append(out, "]", 1);
    pthread_mutex_unlock(&u->lock);
}

/* Units on the edge path: their queue, and what a full queue dropped. */
static void render_edge_metrics(struct gust_units *u, struct gust_buf *out)
{
    static const char *const series[][3] = {
        {"gust_unit_edge_queue_depth", "gauge", "Messages waiting in an edge unit's in-memory queue."},
        {"gust_unit_edge_received_total", "counter", "Messages a source handed to an edge unit."},
        {"gust_unit_edge_dropped_total", "counter", "Messages dropped because an edge unit's queue was full."},
    };
    for (size_t k = 0; k < 3; k++) {
        int header = 0;
        for (size_t i = 0; i < u->n; i++) {
            struct gust_edge *e = gust_consumer_edge(u->v[i]);
            if (e == NULL) {
                continue;
            }
            if (!header) {
                gust_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", series[k][0], series[k][2], series[k][0],
                                series[k][1]);
                header = 1;
            }
            uint64_t v = k == 0 ? gust_edge_depth(e) : k == 1 ? gust_edge_received(e) : gust_edge_dropped(e);
            gust_buf_printf(out, "%s{unit=\"%s\",kind=\"%s\",source=\"%s\"} %" PRIu64 "\n", series[k][0],
                            gust_consumer_name(u->v[i]), gust_consumer_kind(u->v[i]), gust_edge_source(e), v);
        }
    }
}

/* Detect units: their state and checkpoints (detect.h). A series reads a counter of
 * the unit's view, or is one of the three shaped otherwise (dropped by what, times). */
enum detect_series { DS_VIEW, DS_DROPPED, DS_CHECKPOINT_AGE, DS_RESTORE_SECONDS };

static const struct {
    const char *name, *type, *help;
    enum detect_series how;
    size_t offset; /* DS_VIEW: of a uint64_t in struct detect_view */
} detect_series[] = {
    {"gust_detect_open_runs", "gauge", "Sequence runs open in the slices held here.", DS_VIEW,
     offsetof(struct detect_view, total.open_runs)},
    {"gust_detect_partitions", "gauge", "Partitions (sequences and windows) alive in the slices held here.", DS_VIEW,
     offsetof(struct detect_view, total.partitions)},
    {"gust_detect_window_events", "gauge", "Events held by windows in the slices held here.", DS_VIEW,
     offsetof(struct detect_view, total.window_events)},
    {"gust_detect_state_bytes", "gauge", "Heap bytes of the state of the slices held here.", DS_VIEW,
     offsetof(struct detect_view, total.state_bytes)},
    {"gust_detect_dropped_total", "counter", "What the engine's limits dropped (runs, partitions, window events).",
     DS_DROPPED, 0},
    {"gust_detect_slices_owned", "gauge", "Slices of the unit held by this process.", DS_VIEW,
     offsetof(struct detect_view, owned)},
    {"gust_detect_position", "gauge", "Stream sequence of the last input applied (the lowest of the slices held).",
     DS_VIEW, offsetof(struct detect_view, position)},
    {"gust_detect_checkpoint_seq", "gauge", "Position of the last checkpoint written here.", DS_VIEW,
     offsetof(struct detect_view, checkpoint_seq)},
    {"gust_detect_checkpoint_bytes", "gauge", "Size of the last checkpoint written here.", DS_VIEW,
     offsetof(struct detect_view, checkpoint_bytes)},
    {"gust_detect_checkpoint_age_seconds", "gauge", "Time since the last checkpoint written here (-1: none).",
     DS_CHECKPOINT_AGE, 0},
    {"gust_detect_checkpoints_total", "counter", "Checkpoints written here.", DS_VIEW,
     offsetof(struct detect_view, checkpoints)},
    {"gust_detect_checkpoint_failures_total", "counter", "Checkpoints not stored.", DS_VIEW,
     offsetof(struct detect_view, checkpoint_failures)},
    {"gust_detect_restores_total", "counter", "Slices taken over here (restored or started empty).", DS_VIEW,
     offsetof(struct detect_view, restores)},
    {"gust_detect_restore_seconds", "gauge", "Duration of the last take-over.", DS_RESTORE_SECONDS, 0},
    {"gust_detect_replayed_total", "counter", "Inputs applied again after a take-over (their alerts were stored before).",
     DS_VIEW, offsetof(struct detect_view, replayed)},
};

static void render_detect_series(size_t k, const char *unit, const struct detect_view *v, struct gust_buf *out)
{
    const char *name = detect_series[k].name;
    switch (detect_series[k].how) {
    case DS_VIEW:
        gust_buf_printf(out, "%s{unit=\"%s\"} %" PRIu64 "\n", name, unit,
                        *(const uint64_t *)((const char *)v + detect_series[k].offset));
        break;
    case DS_DROPPED:
        gust_buf_printf(out, "%s{unit=\"%s\",what=\"runs\"} %" PRIu64 "\n", name, unit, v->total.runs_dropped);
        gust_buf_printf(out, "%s{unit=\"%s\",what=\"partitions\"} %" PRIu64 "\n", name, unit,
                        v->total.partitions_dropped);
        gust_buf_printf(out, "%s{unit=\"%s\",what=\"window_events\"} %" PRIu64 "\n", name, unit,
                        v->total.window_dropped);
        break;
    case DS_CHECKPOINT_AGE:
        gust_buf_printf(out, "%s{unit=\"%s\"} %.3f\n", name, unit,
                        v->checkpoint_mono > 0 ? (double)(gust_clock_mono_ms() - v->checkpoint_mono) / 1e3 : -1.0);
        break;
    case DS_RESTORE_SECONDS:
        gust_buf_printf(out, "%s{unit=\"%s\"} %.3f\n", name, unit, (double)v->restore_ms / 1e3);
        break;
    }
}

static void render_detect_metrics(struct gust_units *u, struct gust_buf *out)
{
    for (size_t k = 0; k < sizeof(detect_series) / sizeof(detect_series[0]); k++) {
        int header = 0;
        for (size_t i = 0; i < u->n; i++) {
            const struct gust_handler *h = gust_consumer_handler(u->v[i]);
            if (strcmp(h->kind, "detect") != 0) {
                continue;
            }
            if (!header) {
                gust_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", detect_series[k].name, detect_series[k].help,
                                detect_series[k].name, detect_series[k].type);
                header = 1;
            }
            struct detect_view v;
            gust_detect_view(h->impl, &v);
            render_detect_series(k, gust_consumer_name(u->v[i]), &v, out);
        }
    }
}

/* Flow units: the lines their scripts logged, and what the rate limit dropped. */
static void render_log_metrics(struct gust_units *u, struct gust_buf *out)
{
    static const char *const series[][2] = {
        {"gust_unit_log_lines_total", "Lines a flow's script logged."},
        {"gust_unit_log_dropped_total", "Log lines a flow's rate limit (log_rate) dropped."},
    };
    for (size_t k = 0; k < 2; k++) {
        gust_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", series[k][0], series[k][1], series[k][0]);
        for (size_t i = 0; i < u->n; i++) {
            if (strcmp(gust_consumer_kind(u->v[i]), "flow") != 0) {
                continue;
            }
            uint64_t lines, dropped;
            gust_recent_log_counts(gust_recent_find(gust_consumer_name(u->v[i])), &lines, &dropped);
            gust_buf_printf(out, "%s{unit=\"%s\",kind=\"flow\"} %" PRIu64 "\n", series[k][0],
                            gust_consumer_name(u->v[i]), k == 0 ? lines : dropped);
        }
    }
}

/* Flow units with durable state: what they asked of their bucket and what came of it. */
static void render_state_metrics(struct gust_units *u, struct gust_buf *out)
{
    static const char *const series[][2] = {
        {"gust_flow_state_reads_total", "Keys a flow asked of its state store (once per key per batch)."},
        {"gust_flow_state_cache_hits_total", "State reads answered from the flow's memory."},
        {"gust_flow_state_writes_total", "State values committed to the bucket."},
        {"gust_flow_state_conflicts_total", "State compare-and-sets that found a newer revision (messages retried)."},
        {"gust_flow_state_skipped_total", "State operations of redelivered messages already applied to their key."},
        {"gust_flow_state_errors_total", "State reads and writes the bucket did not answer."},
    };
    for (size_t k = 0; k < sizeof(series) / sizeof(series[0]); k++) {
        int header = 0;
        for (size_t i = 0; i < u->n; i++) {
            const struct gust_handler *h = gust_consumer_handler(u->v[i]);
            struct gust_kv_state_stats st;
            if (strcmp(h->kind, "flow") != 0 || !gust_flow_handler_state(h->impl, &st)) {
                continue;
            }
            if (!header) {
                gust_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", series[k][0], series[k][1], series[k][0]);
                header = 1;
            }
            const uint64_t values[] = {st.reads, st.cache_hits, st.writes, st.conflicts, st.skipped, st.errors};
            gust_buf_printf(out, "%s{unit=\"%s\"} %" PRIu64 "\n", series[k][0], gust_consumer_name(u->v[i]),
                            values[k]);
        }
    }
}

/* Flow units: their Lua heap, and the runs that took it over memory_max. */
static void render_memory_metrics(struct gust_units *u, struct gust_buf *out)
{
    static const char *const series[][3] = {
        {"gust_flow_heap_bytes", "gauge", "Bytes of a flow's Lua heap (after its last event)."},
        {"gust_flow_memory_failures_total", "counter",
         "Events that took a flow's Lua heap over memory_max (the state was rebuilt)."},
    };
    for (size_t k = 0; k < 2; k++) {
        gust_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", series[k][0], series[k][2], series[k][0],
                        series[k][1]);
        for (size_t i = 0; i < u->n; i++) {
            const struct gust_handler *h = gust_consumer_handler(u->v[i]);
            if (strcmp(h->kind, "flow") != 0) {
                continue;
            }
            uint64_t heap, failures;
            gust_flow_handler_memory(h->impl, &heap, &failures);
            gust_buf_printf(out, "%s{unit=\"%s\"} %" PRIu64 "\n", series[k][0], gust_consumer_name(u->v[i]),
                            k == 0 ? heap : failures);
        }
    }
}

/* Plugins' own counters (ABI 1.4), one family with the counter's name as a label. */
static void render_plugin_metrics(struct gust_units *u, struct gust_buf *out)
{
    size_t mark = out->len;
    gust_buf_printf(out, "# HELP gust_plugin_value A plugin instance's own counter or gauge (label name).\n"
                         "# TYPE gust_plugin_value untyped\n");
    size_t body = out->len;
    for (size_t i = 0; i < u->n; i++) {
        const struct gust_handler *h = gust_consumer_handler(u->v[i]);
        if (h->render_metrics != NULL) {
            h->render_metrics(h->impl, gust_consumer_name(u->v[i]), out);
        }
    }
    for (size_t i = 0; i < u->nsources; i++) {
        if (u->sources[i].counters == NULL) {
            continue;
        }
        struct gust_plugin_counter c[GUST_PLUGIN_COUNTERS_MAX];
        gust_plugin_counters_metrics(out, u->sources[i].name, c, source_counters(u, i, c));
    }
    if (out->len == body) {
        out->len = mark; /* no plugin has counters: no empty family */
    }
}

void gust_units_render_metrics(struct gust_units *u, struct gust_buf *out)
{
    pthread_mutex_lock(&u->lock);
    gust_buf_printf(out, "# HELP gust_generation Configuration generation running.\n# TYPE gust_generation gauge\n"
                         "gust_generation %" PRIu64 "\n# HELP gust_reloads_total Reloads tried.\n"
                         "# TYPE gust_reloads_total counter\ngust_reloads_total %" PRIu64 "\n",
                    u->generation, u->reloads);
    for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
        gust_buf_printf(out, "# HELP gust_unit_%s_total %s\n# TYPE gust_unit_%s_total counter\n", counters[k].name,
                        counters[k].help, counters[k].name);
        for (size_t i = 0; i < u->n; i++) {
            uint64_t v = read_counter(u->v[i], &counters[k]);
            gust_buf_printf(out, "gust_unit_%s_total{unit=\"%s\",kind=\"%s\"} ", counters[k].name,
                            gust_consumer_name(u->v[i]), gust_consumer_kind(u->v[i]));
            if (counters[k].is_ns) {
                gust_buf_printf(out, "%.6f\n", (double)v / 1e9);
            } else {
                gust_buf_printf(out, "%" PRIu64 "\n", v);
            }
        }
    }
    gust_buf_printf(out, "# HELP gust_unit_backlog Messages the unit's consumer has yet to take or settle.\n"
                         "# TYPE gust_unit_backlog gauge\n");
    for (size_t i = 0; i < u->n; i++) {
        int64_t backlog = unit_backlog(u, u->v[i]);
        if (backlog >= 0) {
            gust_buf_printf(out, "gust_unit_backlog{unit=\"%s\",kind=\"%s\"} %" PRId64 "\n",
                            gust_consumer_name(u->v[i]), gust_consumer_kind(u->v[i]), backlog);
        }
    }
    /* What /healthz's unit_not_running and unit_stuck look at, for alert rules. */
    gust_buf_printf(out, "# HELP gust_unit_running 1 while the unit runs (0: starting, failing or stopped).\n"
                         "# TYPE gust_unit_running gauge\n");
    for (size_t i = 0; i < u->n; i++) {
        int64_t since;
        gust_buf_printf(out, "gust_unit_running{unit=\"%s\",kind=\"%s\"} %d\n", gust_consumer_name(u->v[i]),
                        gust_consumer_kind(u->v[i]), gust_consumer_running(u->v[i], &since));
    }
    gust_buf_printf(out, "# HELP gust_unit_stuck_seconds How long the unit's handler is past its batch's bound "
                         "(0: not stuck).\n# TYPE gust_unit_stuck_seconds gauge\n");
    for (size_t i = 0; i < u->n; i++) {
        gust_buf_printf(out, "gust_unit_stuck_seconds{unit=\"%s\",kind=\"%s\"} %.3f\n", gust_consumer_name(u->v[i]),
                        gust_consumer_kind(u->v[i]), (double)gust_consumer_stuck_ms(u->v[i]) / 1e3);
    }
    render_edge_metrics(u, out);
    render_plugin_metrics(u, out);
    render_detect_metrics(u, out);
    render_log_metrics(u, out);
    render_state_metrics(u, out);
    render_memory_metrics(u, out);
    pthread_mutex_unlock(&u->lock);
}
