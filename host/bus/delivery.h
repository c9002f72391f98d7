/* A JetStream delivery as the consumer core sees it (internal to host/bus): the
 * message's data and subject, its stream sequence, stored time and delivery count from
 * the metadata JetStream puts in the reply subject, and, when asked, its headers. */
#ifndef GUST_BUS_DELIVERY_H
#define GUST_BUS_DELIVERY_H

#include <nats/nats.h>

#include "port.h"

#define GUST_DELIVERY_HEADERS_MAX 32 /* headers kept per message; more are not shown */

/* Room for the headers of a batch: GUST_DELIVERY_HEADERS_MAX per message. */
struct gust_headers_room {
    struct gust_header *v;
    size_t msgs; /* messages it has room for */
};

/* Fills in from m (which stays owned by the caller; in->ref = m). Headers go into
 * room's slot `slot` when with_headers. Returns the consumer sequence of the delivery
 * (0 when m carries no metadata). */
uint64_t gust_delivery_fill(struct gust_in *in, natsMsg *m, struct gust_headers_room *room, size_t slot,
                            int with_headers);
/* Grows room to n messages: 0 or GUST_ENOMEM. */
int gust_headers_room_reserve(struct gust_headers_room *room, size_t n);
void gust_headers_room_free(struct gust_headers_room *room);

#endif
