/* A JetStream delivery as the consumer core sees it (internal to host/bus): the
 * message's data and subject, its stream sequence, stored time and delivery count from
 * the metadata JetStream puts in the reply subject, and, when asked, its headers. */
#ifndef GUST_BUS_DELIVERY_H
#define GUST_BUS_DELIVERY_H

#include <nats/nats.h>

#include "port.h"

#define GUST_DELIVERY_HEADERS_MAX 32 /* headers kept per message; more are not shown */

/* What a feed keeps for its batches: the messages of a pull, and room for their headers
 * (GUST_DELIVERY_HEADERS_MAX each), which is only made for a handler that reads them: at
 * a batch of 256 it is 128 KiB a unit. */
struct gust_batch_room {
    natsMsg **msgs;
    size_t cap;            /* messages msgs has room for */
    struct gust_header *headers;
    size_t headers_cap;    /* messages headers has room for */
};

/* Grows room to max messages (and their headers when with has GUST_FEED_HEADERS): 0 or
 * GUST_ENOMEM. */
int gust_batch_room_reserve(struct gust_batch_room *room, size_t max, int with);
void gust_batch_room_free(struct gust_batch_room *room);

/* Fills in from room->msgs[slot] (which stays owned by the caller; in->ref = it), with
 * what `with` asks for (GUST_FEED_*: its headers, the room reserved so; its reply_to).
 * Returns the consumer sequence of the delivery (0 when the message carries no
 * metadata). */
uint64_t gust_delivery_fill(struct gust_in *in, struct gust_batch_room *room, size_t slot, int with);

/* A feed's release (gust_feed_ops): frees the n messages at once, on this thread. */
void gust_delivery_release(struct gust_feed *f, struct gust_in *in, size_t n);

#endif
