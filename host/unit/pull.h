/* A unit's durable pull consumer, read with our own pull requests.
 *
 * nats.c 3.4.1's natsSubscription_Fetch overruns its message array when more than half
 * a batch is already waiting in the subscription, which is what happens after a
 * reconnect flushes the pull requests queued while the server was away (a heap
 * overflow, fixed upstream in nats.c 3.9). So the unit sends the requests itself on a
 * plain inbox subscription: `$JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>` with
 * {"batch","expires"}. One request stays open until the server has delivered its batch
 * or it expires; messages arriving meanwhile are pushed at once, so an idle unit gets
 * the next event without a request round trip. A message from a request that outlived
 * its wait (a stale one, after a reconnect) is an ordinary delivery: it is handled and
 * acked like any other. */
#ifndef GUST_UNIT_PULL_H
#define GUST_UNIT_PULL_H

#include <nats/nats.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"

struct gust_pull_conf {
    const char *stream;
    const char *durable;
    const char *filter;
    int batch;
    int64_t ack_wait_ms;
    int64_t max_ack_pending;
    int64_t expires_ms; /* a request's life on the server, and the longest wait of a call */
};

struct gust_pull;

/* Creates the durable consumer, or brings an existing one to conf (a changed filter
 * recreates it: nats-server 2.9 cannot change one), over js; requests and messages go
 * over nc. Blocking JetStream calls: not on an event loop. */
int gust_pull_open(const struct gust_pull_conf *conf, jsCtx *js, natsConnection *nc, struct gust_pull **out,
                   struct gust_err *err);
/* Waits up to expires_ms for a message, then takes those already here, up to max.
 * Returns how many went into msgs (0: none in time), or -1 with why filled in. The
 * messages are the caller's to ack and destroy. */
int gust_pull_next(struct gust_pull *p, natsMsg **msgs, size_t max, char *why, size_t why_size);
/* Unsubscribes; the durable consumer stays on the server. NULL is a no-op. */
void gust_pull_close(struct gust_pull *p);

#endif
