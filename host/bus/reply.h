/* Replies to calls: how a flow's reply() finds the HTTP request that waits for it,
 * in whichever process of a cluster holds that request.
 *
 * The process holding the request (POST /call, a webhook with `respond flow`)
 * subscribes an inbox of its own on core NATS (not JetStream: a reply is worth
 * nothing once the request is gone) and publishes the event with
 * GUST_REPLY_TO_HEADER: <that inbox>.<the request's id>. The event is stored as any
 * other; the process whose flow handles it publishes the reply to that subject, the
 * status in GUST_REPLY_STATUS_HEADER. A redelivered event replies again, to a request
 * already answered or gone: a message nobody reads. */
#ifndef GUST_BUS_REPLY_H
#define GUST_BUS_REPLY_H

#include <stddef.h>

struct gust_bus;

#define GUST_REPLY_TO_HEADER "Gust-Reply-To"
#define GUST_REPLY_STATUS_HEADER "Gust-Status"
/* A reply subject is an inbox: "_INBOX." and tokens, without wildcards. Anything else
 * in the header (a client that listed it in a webhook's `headers`, say) is not
 * answered, so a reply cannot be sent to an event subject. */
#define GUST_REPLY_INBOX_PREFIX "_INBOX."
#define GUST_REPLY_TO_MAX 200

/* 1 when s may be replied to. */
int gust_reply_to_ok(const char *s);

/* Publishes data (len bytes of JSON) to inbox with status, on the bus's connection
 * that writes at once. Returns 0, or an error with why filled in (not connected, over
 * the server's max_payload, an inbox refused by gust_reply_to_ok). */
int gust_bus_reply(struct gust_bus *bus, const char *inbox, int status, const void *data, size_t len, char *why,
                   size_t why_size);

#endif
