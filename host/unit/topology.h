/* GET /topology: the pipeline as a graph for the console. Every unit of the registry
 * and every source running here is a node, with the nodes the front adds (ingest,
 * webhooks) and the dead-letter stream; every subject a producer published to since it
 * started is an edge to each consumer whose input it matches.
 *
 * Rates, errors in the last minute and the sparklines come from one ring of samples per
 * node, taken every GUST_TOPO_INTERVAL_MS for GUST_TOPO_RING samples (15 minutes) from
 * the counters /units and /metrics show: nothing is counted twice. The sampler and the
 * render run on one thread (the event loop). */
#ifndef GUST_UNIT_TOPOLOGY_H
#define GUST_UNIT_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"

#define GUST_TOPO_INTERVAL_MS 5000
#define GUST_TOPO_RING 180 /* 15 minutes */

struct gust_units;
struct gust_tally;

/* A producer the registry does not know: the ingest route, a webhook. */
struct gust_topo_extra {
    const char *kind; /* "ingest", "webhook" */
    const char *name;
    const char *state;        /* "running", "failing" */
    struct gust_tally *tally; /* borrowed: the subjects it published to */
    const char *only;         /* a webhook: its one subject (counted from tally), an output before
                                 any traffic; NULL: every subject of tally */
};

struct gust_topology;

struct gust_topology *gust_topology_create(void);
/* NULL is a no-op. */
void gust_topology_destroy(struct gust_topology *t);
/* Takes one sample of every node (now_ms: CLOCK_MONOTONIC). A node unseen for a whole
 * ring (a unit a reload removed) is forgotten. */
void gust_topology_sample(struct gust_topology *t, struct gust_units *u, const struct gust_topo_extra *extra,
                          size_t nextra, int64_t now_ms);
/* The members "interval_s", "generation", "nodes" and "edges" of GET /topology's object;
 * dlq_prefix ("dlq.") names a unit's dead-letter subject. spark: with the sparklines. */
void gust_topology_render(struct gust_topology *t, struct gust_units *u, const struct gust_topo_extra *extra,
                          size_t nextra, const char *dlq_prefix, int spark, struct gust_buf *out);
/* Members "flows": [{unit, heap_bytes, memory_max}] for the memory gauge. */
void gust_topology_render_flow_memory(struct gust_units *u, struct gust_buf *out);

#endif
