/* Ingest's own connection to the bus: nats.c, driven by the HTTP front's event loop
 * (loop.h: the bus's view of it; the HTTP layer gives it h2o's).
 *
 * Ingest answers each POST only after JetStream's PubAck. Through nats.c's own threads
 * that costs two thread hand-offs per request (its reader thread, a subscription's
 * delivery thread, then h2o's queue back to the loop) and one write per publish. Here
 * nats.c runs in its external-event-loop mode on the loop's thread: the loop tells it
 * when the socket is readable, the publishes of one loop turn leave in one write at the
 * end of the turn, and the PubAcks arrive on a synchronous subscription that the loop
 * drains right after each read. No other thread touches a request.
 *
 * nats.c still has threads of its own: the PING timer and the reconnect thread call the
 * event-loop callbacks (attach, stop polling, want to write) from there. Those only
 * record what happened and wake the loop through an eventfd; the loop then adopts the
 * new socket, drops the old one, or writes. Nothing on the loop ever waits for nats.c's
 * threads (its blocking calls would deadlock there).
 *
 * TLS, credentials, keepalive and reconnection are the bus's (nats_opts.h). A lost
 * connection fails what is in flight at once with an unknown outcome (the server may
 * have stored it). */
#ifndef GUST_BUS_INGEST_LINK_H
#define GUST_BUS_INGEST_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"
#include "gust/api.h"    /* struct gust_pub_msg */
#include "gust/plugin.h" /* gust_publish_done_fn */
#include "loop.h"

struct gust_nats_link_conf; /* link_conf.h */

/* The done callback's status, besides 0 (stored, seq given): */
#define GUST_PUBLISH_DUPLICATE 1 /* stored before, under the same msg_id (seq: that copy's) */
/* GUST_EIO: JetStream refused it: not stored.
 * GUST_ETIMEOUT (no PubAck in time), GUST_EAGAIN (the connection was lost after it was
 * sent), GUST_EINVAL (the answer was no PubAck): the outcome is unknown. */

struct gust_ingest_link_conf {
    const char *const *urls; /* borrowed for the call */
    size_t nurls;
    const struct gust_nats_link_conf *link; /* borrowed for the call */
    const char *stream_subjects;            /* the stream's filter ("ev.>"): nothing else is sent */
    int64_t publish_timeout_ms;             /* no PubAck within it: the publish fails */
    size_t max_pending;                     /* publishes awaiting their PubAck at once */
};

struct gust_ingest_link;

/* Connects (the server may be down: it is retried in the background). Call on the
 * thread that runs loop (copied; its impl must outlive the link). */
int gust_ingest_link_create(const struct gust_loop *loop, const struct gust_ingest_link_conf *conf,
                            struct gust_ingest_link **out, struct gust_err *err);
/* Fails what is pending (fn is called) and closes the connection. NULL is a no-op. */
void gust_ingest_link_destroy(struct gust_ingest_link *l);

/* On the loop: publishes m's data (copied) to m's subject, with a Nats-Msg-Id header
 * when m->msg_id is not NULL (JetStream then stores it once within its duplicate window)
 * and m's other NATS headers, and calls fn on the loop with the outcome, possibly
 * before this returns. Returns GUST_EIO when the stream does not take the subject,
 * GUST_EAGAIN when not connected or too much is waiting to be written, GUST_EINVAL
 * when the message is over the server's max_payload; fn is then not called. */
int gust_ingest_link_publish(struct gust_ingest_link *l, const struct gust_pub_msg *m, gust_publish_done_fn fn,
                             void *ud);
int gust_ingest_link_connected(const struct gust_ingest_link *l);

/* Calls (reply.h): every connection of the link also subscribes an inbox of its own
 * for replies, drained on the loop like the PubAcks. A call's reply subject (its
 * GUST_REPLY_TO_HEADER) is the inbox plus the caller's id: written into out, its
 * length returned (0 when it does not fit). Each reply that comes is handed to fn on
 * the loop with that id, the status it carries (200 without one; 502 when it makes no
 * sense) and its data (borrowed for the call). Set fn before any call is published. */
typedef void (*gust_ingest_reply_fn)(void *ud, uint64_t id, int status, const void *data, size_t len);
void gust_ingest_link_on_replies(struct gust_ingest_link *l, gust_ingest_reply_fn fn, void *ud);
size_t gust_ingest_link_reply_subject(const struct gust_ingest_link *l, uint64_t id, char *out, size_t size);

#endif
