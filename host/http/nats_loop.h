/* Ingest's own NATS connection, driven by the h2o event loop.
 *
 * Ingest answers each POST only after JetStream's PubAck. Through nats.c that costs two
 * thread hand-offs per request (nats.c's reader thread, then the reply subscription's
 * delivery thread, then h2o's multithread queue back to the loop) and one write per
 * publish: on this kind of 2-core VM those wake-ups and syscalls were most of ingest's
 * CPU. Here the loop itself writes the publishes (all those of one loop iteration in one
 * write), reads the PubAcks and answers: no other thread is involved.
 *
 * It speaks the plain NATS client protocol (nats:// URLs, user:password@ or token@ in the
 * URL), publishes with a reply subject of its own, and takes JetStream's PubAck (or the
 * server's no-responders status) from it. A lost connection fails what is in flight at
 * once (the caller answers 503: it may or may not be stored) and reconnects, trying the
 * URLs in turn. Names in URLs are resolved on the loop when (re)connecting. */
#ifndef GUST_HTTP_NATS_LOOP_H
#define GUST_HTTP_NATS_LOOP_H

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"
#include "gust/plugin.h" /* gust_publish_done_fn */

struct nats_loop_conf {
    const char *const *urls; /* borrowed for the call */
    size_t nurls;
    int64_t publish_timeout_ms; /* no PubAck within it: the publish fails */
    size_t max_pending;         /* publishes awaiting their PubAck at once */
};

struct nats_loop;

/* Checks the URLs and starts connecting (the loop does the rest). */
int nats_loop_create(h2o_loop_t *loop, const struct nats_loop_conf *conf, struct nats_loop **out,
                     struct gust_err *err);
/* Fails what is pending (fn is called) and closes the connection. NULL is a no-op. */
void nats_loop_destroy(struct nats_loop *n);

/* Queues a publish (data is copied) and calls fn on the loop with the PubAck's outcome.
 * Returns GUST_EAGAIN when not connected or too much is pending, GUST_EINVAL when the
 * message is over the server's max_payload; fn is then not called. */
int nats_loop_publish(struct nats_loop *n, const char *subject, const void *data, size_t len,
                      gust_publish_done_fn fn, void *ud);
int nats_loop_connected(const struct nats_loop *n);

#endif
