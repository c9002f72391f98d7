/* A sink plugin instance as a unit's handler (host/unit/unit.h): each batch is
 * delivered, and what the sink says of each message becomes its outcome. */
#ifndef GUST_PLUGIN_SINK_HANDLER_H
#define GUST_PLUGIN_SINK_HANDLER_H

#include "../unit/unit.h"
#include "instance.h"

struct gust_sink_opts {
    int64_t ack_wait_ms;        /* nats { ack_wait }: for the plugin's fetch_limits */
    int64_t retry_delay_ms;     /* an ordered sink's retries in place: from this, */
    int64_t retry_max_delay_ms; /* doubling up to this (nats { retry_delay ... }) */
    int order;                  /* the instance's GUST_ORDER_* */
};

/* inst is created and started by the caller and owned by the handler from here on
 * (disposed of in its destroy). impl is NULL when out of memory.
 *
 * A sink in stream order (GUST_ORDER_STREAM) gets its batch whole and holds it: the
 * messages deliver() leaves GUST_RETRY are handed to it again, in order, after the retry
 * delay (doubling), marked in progress on the bus meanwhile, until none is left or the
 * unit stops (then they are redelivered, and the next start reads from the first of
 * them: feeds.h from_ack_floor). A message it sees again (the bus delivered it again
 * while it waited behind a held batch) is not sent again: acked when it went already,
 * else settled as the copy it holds is. */
struct gust_handler gust_sink_handler(struct gust_instance *inst, const struct gust_sink_opts *o);

#endif
