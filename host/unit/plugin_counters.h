/* A plugin's own counters (ABI 1.4 `counters`), read and shown the same way for the
 * sources of struct gust_units and the sinks of sink_handler.c: in /units as an object
 * "plugin":{name:value,...}, in /metrics as gust_plugin_value{unit,name}. */
#ifndef GUST_UNIT_PLUGIN_COUNTERS_H
#define GUST_UNIT_PLUGIN_COUNTERS_H

#include "gust/plugin.h"
#include "gust/sdk.h"

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
