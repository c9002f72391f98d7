/* One generation of the host: its configuration, plugins, and units. */
#ifndef GUST_CORE_HOST_H
#define GUST_CORE_HOST_H

#include "../plugin/loader.h"
#include "../unit/units.h"
#include "config.h"

struct gust_bus;
struct gust_leases;
struct gust_nodes;
struct gust_tables;

/* A unit started with state of its own (kind.h: start's *state), for its kind's stop. */
struct gust_started {
    const struct gust_unit_conf *unit;
    void *state;
};

struct gust_host {
    struct gust_config *config;
    struct gust_plugins plugins;
    struct gust_started *started; /* the units with state of their own (sources) */
    size_t nstarted;
    struct gust_units *units; /* borrowed: the process's registry, which this generation's
                                 flows, detects, relays and sinks join when started */
    struct gust_leases *leases; /* borrowed: the process's lease manager */
    struct gust_nodes *nodes;   /* borrowed: the node directory with `cluster on;`, else NULL */
    char dlq_prefix[128];    /* "dlq." from nats { dlq_subjects dlq.>; } */
    struct gust_edge_links *edges; /* the edge path: which units each source feeds */
    struct gust_tables *tables;    /* the lookup tables, shared by this generation's flows */
};

/* Loads and checks everything host.conf names: the config, the plugins, every unit's
 * keys, every flow script and VPL program. Nothing connects or starts. Errors name
 * file:line. On failure, release what was made with gust_host_release. */
int gust_host_prepare(struct gust_host *host, const char *config_path, struct gust_err *err);
/* Creates and starts the units on the consumer core (into units, borrowed) and the
 * source instances, on bus (borrowed); singleton sources run under leases (borrowed),
 * which then gives back the leases no source of this generation wants; nodes (borrowed,
 * NULL without `cluster on;`) is told this generation's config digest. */
int gust_host_start(struct gust_host *host, struct gust_bus *bus, struct gust_units *units,
                    struct gust_leases *leases, struct gust_nodes *nodes, struct gust_err *err);
/* Stops the units with state of their own (sources keep their leases for the next
 * generation), then the consumer-core units (between batches); these stay in the
 * registry, stopped, until gust_host_release or gust_units_drop_stopped. */
void gust_host_stop(struct gust_host *host);
void gust_host_release(struct gust_host *host);

#endif
