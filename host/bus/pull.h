/* The request loop of a pull consumer, read with our own pull requests (internal to
 * host/bus: durable.c and ordered.c build their feeds on it).
 *
 * nats.c 3.4.1's natsSubscription_Fetch overruns its message array when more than half
 * a batch is already waiting in the subscription, which is what happens after a
 * reconnect flushes the pull requests queued while the server was away (a heap
 * overflow, fixed upstream in nats.c 3.9). So the requests are sent here, on a plain
 * inbox subscription: `$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` with
 * {"batch","expires"}. A request stays open until the server has delivered its batch
 * or it expires; messages arriving meanwhile are pushed at once, so an idle unit gets
 * the next event without a request round trip. Each call asks for the next batch
 * before it takes this one (at most two batches owed), so a busy unit finds a whole
 * batch waiting when it comes back. A message from a request that outlived
 * its wait (a stale one, after a reconnect) is an ordinary delivery. */
#ifndef GUST_BUS_PULL_H
#define GUST_BUS_PULL_H

#include <nats/nats.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"

struct gust_pull;

/* Subscribes an inbox on nc for consumer `consumer` of `stream` (both copied).
 * expires_ms: a request's life on the server, and the longest wait of a call. */
int gust_pull_create(natsConnection *nc, const char *stream, const char *consumer, int64_t expires_ms,
                     struct gust_pull **out, struct gust_err *err);
/* Waits up to expires_ms for a message, then takes those already here (or that come
 * within linger_ms of the first), up to max.
 * Returns how many went into msgs (0: none in time), or -1 with why filled in (and
 * *status the JetStream status code, 0 when none: a lost connection, no responders).
 * The messages are the caller's to destroy. */
int gust_pull_next(struct gust_pull *p, natsMsg **msgs, size_t max, int64_t linger_ms, int *status, char *why,
                   size_t why_size);
/* For a consumer that acks: NAKs the messages already delivered here and not taken
 * (the next batch asked for ahead), so that another process, or the next generation,
 * gets them at once rather than after ack_wait. The inbox takes nothing more: destroy
 * p next. */
void gust_pull_hand_back(struct gust_pull *p);
/* Unsubscribes. NULL is a no-op. */
void gust_pull_destroy(struct gust_pull *p);

#endif
