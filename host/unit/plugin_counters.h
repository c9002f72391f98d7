/* What a plugin says of its instances, read and shown the same way for the sources of
 * struct gust_units and the sinks of sink_handler.c: its own counters (ABI 1.4
 * `counters`) in /units as an object "plugin":{name:value,...} and in /metrics as
 * gust_plugin_value{unit,name}; its current error (ABI 1.6 `set_error`) in /units. */
#ifndef GUST_UNIT_PLUGIN_COUNTERS_H
#define GUST_UNIT_PLUGIN_COUNTERS_H

#include <pthread.h>

#include "gust/plugin.h"
#include "gust/sdk.h"

/* ABI 1.6 set_error: an instance's current trouble as its plugin words it (a broker
 * unreachable, credentials refused), kept until the plugin clears it. Written from the
 * plugin's threads, read by /units. */
struct gust_plugin_note {
    pthread_mutex_t lock;
    char text[256];
    int64_t at_ms; /* wall clock of the last change to a new text; 0 when clear */
};

void gust_plugin_note_init(struct gust_plugin_note *n);
void gust_plugin_note_destroy(struct gust_plugin_note *n);
/* text NULL or "" clears it. */
void gust_plugin_note_set(struct gust_plugin_note *n, const char *text);
/* Appends ,"plugin_error":"..."|null,"plugin_error_at":"RFC 3339"|null. */
void gust_plugin_note_json(struct gust_buf *out, struct gust_plugin_note *n);

typedef size_t (*gust_plugin_counters_fn)(void *ctx, struct gust_plugin_counter *out, size_t max);

/* fn's counters into c (room for GUST_PLUGIN_COUNTERS_MAX); how many. */
size_t gust_plugin_counters_read(gust_plugin_counters_fn fn, void *ctx, struct gust_plugin_counter *c);
/* Appends ,"plugin":{...} (nothing when n is 0 and always_object is 0). */
void gust_plugin_counters_json(struct gust_buf *out, const struct gust_plugin_counter *c, size_t n,
                               int always_object);
/* Appends one gust_plugin_value line per counter; unit and counter names need no escaping
 * (unit names are checked at load, counter names are [a-z0-9_]+). */
void gust_plugin_counters_metrics(struct gust_buf *out, const char *unit, const struct gust_plugin_counter *c,
                                  size_t n);

#endif
