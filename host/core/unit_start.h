/* What every consumer-core kind (flow, detect, relay, sink) does to start a unit: its
 * consumer configuration, its feed (an edge queue, an ordered read, or its durable
 * consumer <kind>_<unit>), its place in the registry, its thread. */
#ifndef GUST_CORE_UNIT_START_H
#define GUST_CORE_UNIT_START_H

#include <stdint.h>

#include "../unit/unit.h"
#include "host.h"

struct gust_unit_start {
    const char *filter;   /* the subject filter it consumes (ignored on the edge path) */
    const char *identity; /* what a reload compares to keep it (NULL: never kept) */
    int64_t batch;        /* messages taken at once */
    int ordered;          /* read in stream order with no acks (detect), not a durable consumer */
    int64_t handler_timeout_ms; /* consumer.h; 0: never judged stuck */
    int order; /* a sink's GUST_ORDER_* (gust/plugin.h): in order, its consumer hands out one
                  batch at a time and starts over from its ack floor */
    /* Optional: called with the handler's impl once the unit is listed, before its
     * thread starts. */
    int (*listed)(void *impl, struct gust_err *err);
};

/* Creates the unit u (of its kind) with handler h (owned from here on, also on
 * failure), lists it in host->units, opens its feed and starts it. */
int gust_unit_start(struct gust_host *host, const struct gust_unit_conf *u, const struct gust_unit_start *s,
                    struct gust_handler h, struct gust_bus *bus, struct gust_err *err);

#endif
