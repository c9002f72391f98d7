/* The durable bus: one NATS connection, the streams, and confirmed publishes.
 *
 * A publish is a plain NATS publish with a reply subject of ours; JetStream answers
 * there with its PubAck. So many publishes are in flight at once from any thread, each
 * completes through its own callback, and none blocks the caller. */
#ifndef GUST_BUS_BUS_H
#define GUST_BUS_BUS_H

#include <nats/nats.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"
#include "nats_opts.h"
#include "pending.h"

struct gust_bus_conf {
    const char *const *urls; /* borrowed; none: start the embedded nats-server */
    size_t nurls;
    const char *server_bin; /* embedded: the nats-server binary (NULL: from PATH) */
    const char *state_dir;  /* embedded: the store goes under <state_dir>/nats */
    const char *stream;     /* "GUST" */
    const char *subjects;   /* "ev.>" */
    const char *dlq_stream; /* "GUST_DLQ" */
    const char *dlq_subjects;
    int64_t dlq_max_msgs;
    int64_t publish_timeout_ms;
    size_t max_pending; /* publishes awaiting their PubAck at once */
    int send_asap;      /* units and sources write each publish and ack at once */
    int replicas;       /* of each stream */
    struct gust_nats_link_conf link; /* TLS, credentials, keepalive, reconnection */
};

struct gust_bus;

/* Connects (starting the embedded server first when no url is given) and sets up the
 * streams. With urls, a server that is not up yet is retried forever in the
 * background; the streams are created once it answers. */
int gust_bus_create(const struct gust_bus_conf *conf, struct gust_bus **out, struct gust_err *err);
/* Fails what is pending, closes the connection, stops the embedded server. */
void gust_bus_destroy(struct gust_bus *bus);

/* Publishes data (copied before return) and calls fn once with the PubAck's outcome.
 * Returns GUST_EAGAIN when the bus is not connected or too many publishes are pending;
 * fn is then not called. inflight (may be NULL) is one higher until fn has returned.
 * Thread-safe. */
int gust_bus_publish(struct gust_bus *bus, const char *subject, const void *data, size_t len,
                     gust_publish_done_fn fn, void *ud, atomic_int *inflight);

/* The servers to connect to (the embedded one's URL in embedded mode): fills urls (at
 * most max, borrowed for the bus's life) and returns how many. */
size_t gust_bus_urls(const struct gust_bus *bus, const char **urls, size_t max);
/* What the bus was created with (urls borrowed from the configuration). */
const struct gust_bus_conf *gust_bus_config(const struct gust_bus *bus);

/* Connected, and JetStream answered the last check (once a second). */
int gust_bus_healthy(struct gust_bus *bus);
int gust_bus_connected(struct gust_bus *bus);
/* Waits up to timeout_ms for every pending publish to complete. */
void gust_bus_drain(struct gust_bus *bus, int64_t timeout_ms);

/* For the consumer core, which makes its own JetStream calls. Borrowed. The buffered
 * connection, for acks and publishes that leave in batches: */
natsConnection *gust_bus_conn(struct gust_bus *bus);
/* JetStream's API, on the connection that writes at once (requests someone waits for): */
jsCtx *gust_bus_js(struct gust_bus *bus);
/* The connection that writes each message at once: the units' pull requests go out on
 * it without waiting for the next batch of writes (up to 1 ms). Acks do not belong there
 * (one write each): publish them on gust_bus_conn. */
natsConnection *gust_bus_conn_now(struct gust_bus *bus);

int64_t gust_now_ms(void); /* CLOCK_MONOTONIC */

#endif
