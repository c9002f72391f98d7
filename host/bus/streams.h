/* Creating (or verifying) the event stream and the dead-letter stream. */
#ifndef GUST_BUS_STREAMS_H
#define GUST_BUS_STREAMS_H

#include <nats/nats.h>

#include "bus.h"

/* Blocking JetStream calls: never call on an event-loop thread. */
int gust_streams_ensure(jsCtx *js, const struct gust_bus_conf *conf, struct gust_err *err);

#endif
