/* A plugin instance: one sink or source unit of host.conf bound to its plugin type. */
#ifndef GUST_PLUGIN_INSTANCE_H
#define GUST_PLUGIN_INSTANCE_H

#include <stdatomic.h>

#include "../common/tally.h"
#include "../unit/plugin_counters.h"
#include "gust/plugin.h"

struct gust_bus;

struct gust_instance {
    char name[96]; /* "sink:crm", used as the log prefix */
    const struct gust_plugin_type *type;
    const struct gust_cfg *cfg; /* borrowed from the config, or own_cfg */
    struct gust_cfg *own_cfg;   /* set by the caller after create: a copy with secrets in it
                                   (core/unit_secrets.c), zeroed and freed by dispose */
    struct gust_bus *bus;       /* borrowed; sources publish through it */
    void *ctx;                  /* the plugin's */
    struct gust_edge_set *edges; /* borrowed: set before start when the source feeds edge
                                    units; its publishes then go there, not to the bus */
    int started;
    struct gust_plugin_note note; /* set_error's (ABI 1.6): shown by /units */
    atomic_int inflight; /* source publishes awaiting their outcome */
    struct gust_tally published; /* a source's subjects, for GET /topology */
    /* deliver's arrays in the plugin's layout, when it was built with other sizes */
    char *msg_scratch, *result_scratch;
    size_t msg_scratch_cap, result_scratch_cap;
};

/* Creates the plugin's side (no I/O yet). cfg and bus are borrowed. */
int gust_instance_create(struct gust_instance *inst, const char *kind, const char *name,
                         const struct gust_plugin_type *type, const struct gust_cfg *cfg, struct gust_bus *bus,
                         struct gust_err *err);
int gust_instance_start(struct gust_instance *inst, struct gust_err *err);
/* A sink's deliver(), with msgs and results laid out as the plugin was built to read
 * them (gust_plugin_desc.msg_size, .result_size). On the unit's thread. */
int gust_instance_deliver(struct gust_instance *inst, const struct gust_msg *msgs, size_t n,
                          struct gust_result *results);
/* stop (if started) and destroy; a zeroed instance is a no-op. */
void gust_instance_dispose(struct gust_instance *inst);

#endif
