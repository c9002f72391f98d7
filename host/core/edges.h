/* The edge path in host.conf (see ../unit/edge.h): checking `edge NAME;` on flow and
 * detect units, and linking each source instance to the edge queues it feeds. */
#ifndef GUST_CORE_EDGES_H
#define GUST_CORE_EDGES_H

#include "../unit/edge.h"
#include "config.h"

/* The keys flow and detect units take for it, written with the caller's key macro. */
#define GUST_EDGE_QUEUE_MAX (1 << 24)
#define GUST_EDGE_KEYS(KEY, KEY_RANGE)                                                                        \
    KEY(edge, STR, NULL, 0,                                                                               \
        "take the input in memory from this source unit, not from the bus (at most once; excludes source)"), \
    KEY_RANGE(edge_queue, INT, "65536", 0, 1, GUST_EDGE_QUEUE_MAX,                                       \
              "edge: messages queued in memory; when full, new ones are dropped (counted)")

/* `edge` names a `source` unit of the same file, and excludes `source`. Errors name
 * file:line. */
int gust_edges_check(const struct gust_config *c, struct gust_err *err);

/* Which queues each source feeds, for one generation. e is borrowed (its unit owns it). */
struct gust_edge_links;
int gust_edge_links_add(struct gust_edge_links **links, const char *source, struct gust_edge *e);
/* The set for source unit `source`, or NULL when it feeds none (it publishes to the bus). */
struct gust_edge_set *gust_edge_links_find(struct gust_edge_links *links, const char *source);
/* Call once the sources are stopped. NULL is a no-op. */
void gust_edge_links_free(struct gust_edge_links *links);

#endif
