/* The handlers a unit can run on the consumer core. Each takes ownership of what it
 * is given and frees it in its destroy. */
#ifndef GUST_UNIT_HANDLERS_H
#define GUST_UNIT_HANDLERS_H

#include "../plugin/instance.h"
#include "unit.h"

struct gust_flow;

/* A Lua flow: each message runs on_event; its emits are published. */
struct gust_handler gust_flow_handler(struct gust_flow *flow);
/* Forwards each message unchanged to `to` (copied). impl is NULL when out of memory. */
struct gust_handler gust_relay_handler(const char *to);
/* A sink plugin instance (created and started by the caller): each batch is delivered. */
struct gust_handler gust_sink_handler(struct gust_instance *inst);

#endif
