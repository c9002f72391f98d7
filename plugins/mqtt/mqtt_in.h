/* mqtt_in internals: one instance, its network thread and its in-flight ring.
 *
 * Why not libmosquitto here: libmosquitto 2.0 sends the PUBACK of a QoS 1 message
 * itself, before or right after on_message returns (eclipse-mosquitto/mosquitto issue
 * #118 "Support delaying PUBACKs", open; PR #1932 never merged; 2.0.11 has no manual-ack
 * option). The broker would then forget a message gust has not stored yet, and a kill -9
 * at that moment loses it. So mqtt_in speaks MQTT itself (mqtt_wire.c: 3.1.1, or 5.0
 * with `mqtt_version 5`) and sends each PUBACK only after the bus's PubAck for that
 * message. With 5.0, user properties become the event's headers (mqtt_props.c: the W3C
 * trace context, and those `headers` names), and a PUBACK says why a message was
 * rejected (reason code).
 *
 * Publishing goes through the SDK's publisher (gust/source.h), which hands each message to
 * the bus, counts the outcomes and logs a streak of failures; what is MQTT's stays here:
 * the order of the PUBACKs, the packet ids, retrying a message the broker still holds.
 *
 * Threads: one network thread owns the socket, the ring and the connection. Bus threads
 * run on_stored (the publisher's per-message callback): it only records the outcome in a
 * queue under `lock` and wakes the network thread through an eventfd. On the edge path
 * (and for a publish the host refuses at once) on_stored runs inside the send, on the
 * network thread itself: then it only sets `self_woken`, and the loop goes round again
 * instead of polling, which spares an eventfd write, a poll and a read per socket read.
 *
 * The ring holds every message from when it is read off the socket until its PUBACK is
 * queued, in the order the broker sent them, so PUBACKs go out in that order (MQTT 3.1.1
 * §4.6) and a full ring stops reading: the broker holds the rest (back-pressure). */
#ifndef GUST_MQTT_IN_H
#define GUST_MQTT_IN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gust/source.h"
#include "mqtt.h"
#include "mqtt_link.h"

enum { E_FREE, E_INFLIGHT, E_RETRY, E_DONE };   /* entry states */
enum { NJ_REJECT, NJ_WRAP, NJ_PASS };           /* non_json */

/* The keys of an mqtt_in block, bound by mqtt_in_schema. */
struct mqtt_in_keys {
    struct mqtt_keys common;
    struct gust_list topic;
    const char *subject;
    const char *subject_prefix;
    const char *non_json;
    const char *mqtt_version;
    struct gust_list headers;
    int64_t max_payload;
    int64_t max_inflight;
    int64_t reconnect_max;
};

struct in_entry {
    struct mqtt_in *in; /* for on_stored, which only gets the entry */
    char *buf;          /* owned: headers, subject, NUL, payload, header text; kept for the
                           next message (KEEP_BUF) */
    size_t buf_cap;
    const char *subject;
    const char *data;
    size_t len;
    uint64_t epoch;     /* connection it arrived on: a PUBACK only goes back on that one */
    uint16_t id;        /* MQTT packet id (QoS 1 and 2) */
    uint8_t qos;        /* 2 only from a broker that ignores the QoS gust subscribed with */
    uint8_t ack;        /* E_DONE: PUBACK (QoS 2: PUBREC) it (stored, or rejected on purpose) */
    uint8_t rc;         /* 5.0: the PUBACK's reason code (why it was rejected) */
    const struct gust_header *hdrs; /* in buf: headers from its user properties (5.0) */
    size_t nhdrs;
    int state;          /* E_*; network thread only */
    int status;         /* outcome from on_stored (read after dequeuing) */
    int64_t retry_at;
    int delay_ms;
};

struct mqtt_in {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    struct mqtt_in_keys k;
    struct mqtt_conf conf;
    char client_id[160];
    const char *subject, *prefix; /* exactly one set */
    int non_json;                 /* NJ_* */
    int version;                  /* MQTT_V311 or MQTT_V5 */
    size_t max_payload;
    int64_t reconnect_max_ms;
    const char *const *filters;   /* k.topic's items */
    size_t nfilters;
    struct gust_tls *tls;
    struct gust_publisher *pub;   /* the bus side: sends, outcomes, their counts */

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
    uint64_t received, rejected, wrapped, lost;

    /* Shared with bus threads, under lock. */
    pthread_mutex_t lock;
    size_t *cq; /* indexes of entries whose publish completed */
    size_t cq_len;
    int self_woken; /* a completion was queued on the network thread (which alone sets and reads it) */
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

/* mqtt_in_conn.c */
void in_conn_connect(struct mqtt_in *in);
void in_conn_drop(struct mqtt_in *in, const char *why);
/* The same, and with 5.0 a DISCONNECT with reason code rc goes first (rc 0: none; a
 * protocol error gust found says so to the broker). */
void in_conn_drop_rc(struct mqtt_in *in, int rc, const char *why);
/* Parses what has been read; 0, or -1 when the connection was dropped. */
int in_conn_input(struct mqtt_in *in);
int in_conn_read(struct mqtt_in *in);
int in_conn_flush(struct mqtt_in *in);
/* Keepalive and CONNACK deadline; returns ms until the next timer. */
int64_t in_conn_timers(struct mqtt_in *in, int64_t now);
/* The largest PUBLISH kept whole: max_payload and the biggest topic and id there can be. */
size_t in_conn_max_packet(const struct mqtt_in *in);

#endif
