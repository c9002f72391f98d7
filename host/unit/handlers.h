/* The handlers a unit can run on the consumer core. Each takes ownership of what it
 * is given and frees it in its destroy. */
#ifndef GUST_UNIT_HANDLERS_H
#define GUST_UNIT_HANDLERS_H

#include "../plugin/instance.h"
#include "unit.h"

struct gust_flow_opts;

/* A Lua flow for `unit`, made from opts (borrowed; the log callback is the handler's):
 * each message runs on_event with its meta, its emits are published; the script's log
 * lines go to gust's log and /events, at most log_rate a second (the rest counted).
 * Fails as gust_flow_create does. *source is the script's `source` (or NULL), owned
 * by the handler. */
int gust_flow_handler_create(const char *unit, const struct gust_flow_opts *opts, long log_rate,
                             struct gust_handler *out, const char **source, struct gust_err *err);
/* Forwards each message unchanged to `to` (copied). impl is NULL when out of memory. */
struct gust_handler gust_relay_handler(const char *to);
/* A VPL program (src[0..len), read from path) fed with the unit's messages; its alerts
 * go to each stream's .to() topic, or <prefix>detect.<unit>.<stream>, and a .from()
 * without a topic reads <prefix><EventType> (prefix: "ev." of `subjects ev.>;`). Fills
 * *filter (owned by the caller) with the one subject filter covering every .from()
 * subject. */
int gust_detect_handler_create(const char *unit, const char *prefix, const char *src, size_t len, const char *path,
                               struct gust_handler *out, char **filter, struct gust_err *err);
/* A sink plugin instance (created and started by the caller): each batch is delivered. */
struct gust_handler gust_sink_handler(struct gust_instance *inst);

#endif
