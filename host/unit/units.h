/* The running units, and how /units and /metrics show them.
 *
 * One registry per process: a reload stops the old generation's units and starts the
 * new one's in it, while the HTTP thread reads it under the lock. */
#ifndef GUST_UNIT_UNITS_H
#define GUST_UNIT_UNITS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "consumer.h"
#include "gust/plugin.h"
#include "plugin_counters.h"

struct gust_bus;
struct gust_tally;

/* A running plugin source instance, for /units' "sources" and /metrics. */
struct gust_units_source {
    char name[128];
    char type[64];                /* its plugin */
    struct gust_tally *published; /* borrowed: what it published to (GET /topology) */
    size_t (*counters)(void *ctx, struct gust_plugin_counter *out, size_t max); /* NULL: none */
    void *ctx;
    struct gust_plugin_note *note; /* borrowed: its plugin's error */
};

struct gust_units {
    pthread_mutex_t lock;
    struct gust_consumer **v;
    size_t n;
    struct gust_consumer **retired; /* stopped units a new one replaced in v, to free */
    size_t nretired;
    /* reload status, shown by /units */
    uint64_t generation;
    uint64_t reloads;
    char last_reload_error[512];
    struct gust_bus *bus;       /* borrowed (may be NULL): for the units' backlog */
    struct gust_units_source *sources; /* running sources with counters */
    size_t nsources, sources_cap;
};

void gust_units_init(struct gust_units *u);
/* Adds c (owned from here on). A stopped unit of the same name (the generation a
 * reload replaces) gives it its place, so /units lists each unit once at every moment. */
int gust_units_add(struct gust_units *u, struct gust_consumer *c);
/* Stops every unit but the kept ones (each between batches, all at once). They stay
 * listed, stopped, so that /units never shows an empty generation while a reload swaps
 * them. */
void gust_units_stop(struct gust_units *u);
/* Marks the running unit `name` kept when its identity is `identity` (a reload whose
 * next generation has the same unit): returns 1 when it did. */
int gust_units_keep(struct gust_units *u, const char *name, const char *identity);
/* The kept unit `name`, no longer marked (the generation starting takes it over), or
 * NULL. */
struct gust_consumer *gust_units_adopt(struct gust_units *u, const char *name);
/* A source instance started (its counters and error shown from now) or about to stop
 * (never read again once this returns). ctx is the plugin's; counters NULL for a type
 * without any. published and note are borrowed until the remove. */
int gust_units_source_add(struct gust_units *u, const char *name, const char *type,
                          size_t (*counters)(void *ctx, struct gust_plugin_counter *out, size_t max), void *ctx,
                          struct gust_tally *published, struct gust_plugin_note *note);
/* Removes the source added with published (one per instance, whatever its ctx). */
void gust_units_source_remove(struct gust_units *u, const struct gust_tally *published);
/* Removes and frees the stopped units. */
void gust_units_drop_stopped(struct gust_units *u);
/* Calls fn on each listed unit, under the registry's lock (fn must not call back into
 * the registry). */
void gust_units_each(struct gust_units *u, void (*fn)(void *ud, struct gust_consumer *c), void *ud);
/* Records the outcome of a reload: error NULL for success (a new generation). */
void gust_units_reloaded(struct gust_units *u, const char *error);
/* The members "generation", "reload_count", "last_reload_error" and "units": [{name,
 * kind, source, state, counters..., retries, last_error, last_error_at}] of /units' object. */
void gust_units_render_fields(struct gust_units *u, struct gust_buf *out);
/* The bus's retention asks who reads the event stream (gust_bus_readers_fn; ud: the
 * registry): every unit's durable consumer, and the lowest position the others need. */
struct gust_bus_readers;
void gust_units_readers(void *ud, struct gust_bus_readers *r);
/* Prometheus text, one series per unit and counter. */
void gust_units_render_metrics(struct gust_units *u, struct gust_buf *out);

#endif
