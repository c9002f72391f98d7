/* A sink plugin instance as a unit's handler (host/unit/unit.h): each batch is
 * delivered, and what the sink says of each message becomes its outcome. */
#ifndef GUST_PLUGIN_SINK_HANDLER_H
#define GUST_PLUGIN_SINK_HANDLER_H

#include "../unit/unit.h"
#include "instance.h"

/* inst is created and started by the caller and owned by the handler from here on
 * (disposed of in its destroy). ack_wait_ms (nats { ack_wait }) goes to the plugin's
 * fetch_limits. impl is NULL when out of memory. */
struct gust_handler gust_sink_handler(struct gust_instance *inst, int64_t ack_wait_ms);

#endif
