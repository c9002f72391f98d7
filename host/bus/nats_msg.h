/* Publishing one message on a NATS connection, with its Nats-Msg-Id and headers: the one
 * place the bus's and ingest's connections build a natsMsg. */
#ifndef GUST_BUS_NATS_MSG_H
#define GUST_BUS_NATS_MSG_H

#include <nats/nats.h>
#include <stddef.h>

#include "gust/msg.h"

/* Publishes data on subject (reply may be NULL) with msg_id (may be NULL) and the headers.
 * Headers with an empty value are left out: nats.c 3.x cannot read back a message
 * holding one (natsMsgHeader_Keys fails, and every reader, flows included, loses all of
 * its headers). */
natsStatus gust_nats_publish(natsConnection *nc, const char *subject, const char *reply, const void *data,
                             size_t len, const char *msg_id, const struct gust_header *headers,
                             size_t nheaders);

/* The message gust_nats_publish sends, into *out (freed with gust_nats_msg_free): its
 * headers written as the wire carries them when this nats.c allows (nats_msg.c), else
 * through nats.c's header map. NATS_OK, or NATS_INVALID_ARG (an empty subject, reply or
 * header name), NATS_MAX_PAYLOAD, NATS_NO_MEMORY. */
natsStatus gust_nats_msg_build(natsMsg **out, const char *subject, const char *reply, const void *data, size_t len,
                               const char *msg_id, const struct gust_header *headers, size_t nheaders);

/* Frees a message at once, on this thread (see nats_msg.c). */
void gust_nats_msg_free(natsMsg *m);

#endif
