/* What the files of host/bus share and nothing outside it sees: the connections and
 * JetStream context of a bus. */
#ifndef GUST_BUS_BUS_INT_H
#define GUST_BUS_BUS_INT_H

#include <nats/nats.h>

#include "bus.h"

/* The buffered connection: publishes and acks that leave in batches (nats.c's flusher
 * gathers them for up to 1 ms). */
natsConnection *gust_bus__conn(struct gust_bus *bus);
/* The connection that writes each message at once: pull requests, which the next
 * message waits for (acks do not belong there: one write each). */
natsConnection *gust_bus__conn_now(struct gust_bus *bus);
/* JetStream's API on the connection that writes at once (requests someone waits for). */
jsCtx *gust_bus__js(struct gust_bus *bus);

struct gust_retention *gust_bus__retention(struct gust_bus *bus);

/* nats_GetLastError when set, else the status's text. */
const char *gust_bus__reason(natsStatus s);

#endif
