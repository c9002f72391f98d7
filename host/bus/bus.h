/* The durable bus: one NATS connection, the streams, and confirmed publishes.
 *
 * A publish is a plain NATS publish with a reply subject of ours; JetStream answers
 * there with its PubAck. So many publishes are in flight at once from any thread, each
 * completes through its own callback, and none blocks the caller. */
#ifndef GUST_BUS_BUS_H
#define GUST_BUS_BUS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"
#include "gust/sdk.h" /* gust_clock_mono_ms, the clock of its deadlines */
#include "link_conf.h"
#include "pending.h"
#include "port.h"

struct gust_bus_conf {
    const char *const *urls; /* none: start the embedded nats-server (the bus copies
                                these and every string below) */
    size_t nurls;
    const char *server_bin; /* embedded: the nats-server binary (NULL: from PATH) */
    const char *state_dir;  /* embedded: the store goes under <state_dir>/nats */
    const char *stream;     /* "GUST" */
    const char *subjects;   /* "ev.>" */
    const char *dlq_stream; /* "GUST_DLQ" */
    const char *dlq_subjects;
    int64_t dlq_max_msgs;
    int64_t dlq_max_bytes; /* 0: no bound in bytes */
    /* The event stream's bounds (retention.c): max_bytes refuses new events past it
     * (0: none), max_age removes older ones (0: none), keep_ms is how long consumed ones
     * stay (< 0: gust removes nothing). */
    int64_t max_bytes;
    int64_t max_age_ms;
    int64_t keep_ms;
    const char *state_stream;   /* "GUST_STATE": the detect units' checkpoints */
    const char *state_subjects; /* "gust.state.>" */
    const char *lease_bucket;   /* KV buckets, for /metrics only (NULL: not shown) */
    const char *flow_state_bucket;
    int64_t duplicate_window_ms; /* of the event stream: a Nats-Msg-Id seen within it is
                                    stored once */
    int64_t publish_timeout_ms;
    size_t max_pending; /* publishes awaiting their PubAck at once */
    int send_asap;      /* units and sources write each publish and ack at once */
    int replicas;       /* of each stream */
    struct gust_nats_link_conf link; /* TLS, credentials, keepalive, reconnection */
    /* At start (may be NULL): set when the start is to be given up (SIGTERM). With it,
     * gust_bus_create waits for JetStream for as long as it takes; without, 30 s. */
    const atomic_int *cancel;
};

/* How long a health check of JetStream (once a second) waits for its answer, and how
 * long JetStream may go without answering one before the bus counts as not answering
 * (a frozen server keeps its connection up for ping_interval x max_pings_out). */
#define GUST_BUS_CHECK_WAIT_MS 1000
#define GUST_BUS_SILENT_MS 4000

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
/* The same with a message id and headers (port.h). */
int gust_bus_publish_msg(struct gust_bus *bus, const struct gust_pub *p, gust_publish_done_fn fn, void *ud,
                         atomic_int *inflight);
/* The bus as the consumer core's outlet (port.h); borrowed, lives as long as the bus. */
struct gust_outlet *gust_bus_outlet(struct gust_bus *bus);
/* Publishes and waits for the PubAck (at most publish_timeout): 0, or the error with
 * why. Not on an event loop. */
int gust_bus_publish_wait(struct gust_bus *bus, const struct gust_pub *p, uint64_t *seq, char *why,
                          size_t why_size);

/* The servers to connect to (the embedded one's URL in embedded mode): fills urls (at
 * most max, the bus's own, valid for its life) and returns how many. */
size_t gust_bus_urls(const struct gust_bus *bus, const char **urls, size_t max);
/* What the bus was created with (its own copies). */
const struct gust_bus_conf *gust_bus_config(const struct gust_bus *bus);

/* Connected, and JetStream answered the last check (once a second). */
int gust_bus_healthy(struct gust_bus *bus);
/* Connected, and JetStream answered a check within GUST_BUS_SILENT_MS: 1, else 0 with
 * why filled in (for /healthz). */
int gust_bus_answering(struct gust_bus *bus, char *why, size_t size);
int gust_bus_connected(struct gust_bus *bus);
/* Waits up to timeout_ms for every pending publish to complete. */
void gust_bus_drain(struct gust_bus *bus, int64_t timeout_ms);

/* Who reads the event stream, for the purge of what they are all done with
 * (retention.c). Filled by the registry of units on the bus's thread. */
#define GUST_BUS_READERS_MAX 512
struct gust_bus_readers {
    int ready;   /* 0: not known yet (starting): nothing is removed */
    size_t n;    /* the configured units' durable consumers on the event stream */
    char names[GUST_BUS_READERS_MAX][160];
    /* Per name: how many messages its consumer still had to deliver after a read in the
     * last second, or -1 when it read nothing in that time. */
    int64_t busy_behind[GUST_BUS_READERS_MAX];
    uint64_t floor; /* the lowest sequence the other readers (detect checkpoints) still
                       need: 0 unknown (nothing is removed), UINT64_MAX none */
};
typedef void (*gust_bus_readers_fn)(void *ud, struct gust_bus_readers *r);
/* Sets (fn NULL: clears) who tells the readers. Until set, nothing is removed. */
void gust_bus_set_readers(struct gust_bus *bus, gust_bus_readers_fn fn, void *ud);

/* The event stream is full and refuses new events (a publish was refused as such in the
 * last 2 s, or it is within 1 % of max_bytes). For /healthz. */
int gust_bus_store_full(struct gust_bus *bus);
/* Messages a durable consumer has yet to take or settle (pending + ack pending), as of
 * the last pass (at most 250 ms old); -1 when unknown. */
int64_t gust_bus_backlog(struct gust_bus *bus, const char *consumer);
/* Prometheus text: gust_stream_bytes, gust_stream_messages, gust_stream_max_bytes per
 * stream, gust_store_full, gust_stream_purges_total. */
struct gust_buf;
void gust_bus_render_metrics(struct gust_bus *bus, struct gust_buf *out);
/* The same sizes as JSON members for the console (GET /topology): "streams": [{role,
 * stream, bytes, messages, max_bytes}] of the streams read so far, and "store_full". */
void gust_bus_render_store_json(struct gust_bus *bus, struct gust_buf *out);


/* At exit, after every bus is destroyed: the NATS library's own threads and memory. */
void gust_bus_library_close(void);

#endif
