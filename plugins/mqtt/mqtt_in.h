/* mqtt_in internals: one instance, its network thread and its in-flight ring.
 *
 * Why not libmosquitto here: libmosquitto 2.0 sends the PUBACK of a QoS 1 message
 * itself, before or right after on_message returns (eclipse-mosquitto/mosquitto issue
 * #118 "Support delaying PUBACKs", open; PR #1932 never merged; 2.0.11 has no manual-ack
 * option). The broker would then forget a message gust has not stored yet, and a kill -9
 * at that moment loses it. So mqtt_in speaks MQTT 3.1.1 itself (mqtt_wire.c) and sends
 * each PUBACK only after the bus's PubAck for that message.
 *
 * Threads: one network thread owns the socket, the ring and the connection. Bus threads
 * run on_stored (the publish callback): it only records the outcome in a queue under
 * `lock` and wakes the network thread through an eventfd. On the edge path (and for a
 * publish the host refuses at once) on_stored runs inside publish, on the network thread
 * itself: then it only sets `self_woken`, and the loop goes round again instead of
 * polling, which spares an eventfd write, a poll and a read per socket read.
 *
 * The ring holds every message from when it is read off the socket until its PUBACK is
 * queued, in the order the broker sent them, so PUBACKs go out in that order (MQTT 3.1.1
 * §4.6) and a full ring stops reading: the broker holds the rest (back-pressure). */
#ifndef GUST_MQTT_IN_H
#define GUST_MQTT_IN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "mqtt.h"
#include "mqtt_link.h"

enum { E_FREE, E_INFLIGHT, E_RETRY, E_DONE };   /* entry states */
enum { NJ_REJECT, NJ_WRAP, NJ_PASS };           /* non_json */

struct in_entry {
    struct mqtt_in *in; /* for on_stored, which only gets the entry */
    char *buf;          /* owned: subject, NUL, payload; kept for the next message (KEEP_BUF) */
    size_t buf_cap;
    const char *subject;
    const char *data;
    size_t len;
    uint64_t epoch;     /* connection it arrived on: a PUBACK only goes back on that one */
    uint16_t id;        /* MQTT packet id (QoS 1 and 2) */
    uint8_t qos;        /* 2 only from a broker that ignores the QoS gust subscribed with */
    uint8_t ack;        /* E_DONE: PUBACK (QoS 2: PUBREC) it (stored, or rejected on purpose) */
    int state;          /* E_*; network thread only */
    int status;         /* outcome from on_stored (read after dequeuing) */
    char why[120];
    int64_t retry_at;
    int delay_ms;
};

struct mqtt_in {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    struct mqtt_conf conf;
    char client_id[160];
    const char *subject, *prefix; /* exactly one set */
    int non_json;                 /* NJ_* */
    size_t max_payload;
    int64_t reconnect_max_ms;
    const char **filters;         /* borrowed items of the cfg */
    size_t nfilters;
    struct gust_tls *tls;

    pthread_t thread;
    int running;
    int wake_fd;
    atomic_int stopping;

    /* Network thread only. */
    struct in_entry *ring;
    size_t cap, head, count, nretry;
    size_t *cq_local;
    struct mqtt_link link; /* link.sock NULL: down; link.up: CONNACK'd */
    struct mqtt_backoff backoff;
    uint64_t epoch;
    int64_t reconnect_at;
    uint16_t next_id;
    uint16_t sub_id; /* of the SUBSCRIBE awaiting its SUBACK, or 0 */
    int bus_failing;
    uint64_t received, stored, rejected, wrapped, lost;

    /* Shared with bus threads, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t idle;
    size_t *cq; /* indexes of entries whose publish completed */
    size_t cq_len;
    size_t outstanding; /* publishes whose callback has not run yet */
    int self_woken;     /* a completion was queued on the network thread (which alone sets and reads it) */
};

/* The instance whose network thread this is (NULL on other threads). */
extern __thread struct mqtt_in *in_network_thread;

/* mqtt_in_ring.c */
/* Takes one PUBLISH read off the wire (the ring has room); -1 when out of memory. A
 * PUBLISH read past for its size (payload NULL, payload_len its length) is rejected. */
int in_ring_accept(struct mqtt_in *in, const struct mqtt_publish *p, size_t payload_len);
/* Completions, due retries, and releasing the head (queuing PUBACKs). */
void in_ring_progress(struct mqtt_in *in);
/* The bus callback. */
void in_on_stored(void *ud, int status, uint64_t seq, const char *error);
size_t in_outstanding(struct mqtt_in *in);

/* mqtt_in_conn.c */
void in_conn_connect(struct mqtt_in *in);
void in_conn_drop(struct mqtt_in *in, const char *why);
/* Parses what has been read; 0, or -1 when the connection was dropped. */
int in_conn_input(struct mqtt_in *in);
int in_conn_read(struct mqtt_in *in);
int in_conn_flush(struct mqtt_in *in);
/* Keepalive and CONNACK deadline; returns ms until the next timer. */
int64_t in_conn_timers(struct mqtt_in *in, int64_t now);
/* The largest PUBLISH kept whole: max_payload and the biggest topic and id there can be. */
size_t in_conn_max_packet(const struct mqtt_in *in);

#endif
