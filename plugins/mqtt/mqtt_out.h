/* mqtt_out internals: one instance, shared by the sink (mqtt_out.c: keys, deliver) and
 * its libmosquitto client (mqtt_out_net.c: the network thread and libmosquitto's callbacks).
 *
 * Threads: the unit's thread (deliver) publishes through libmosquitto; the network thread
 * drives mosquitto_loop() and gets libmosquitto's callbacks. Both hold `lock` for what
 * they share: the connection's state and the batch's acks.
 *
 * The session is clean, and each connection gets a client started afresh
 * (mosquitto_reinitialise): what the broker has not PUBACKed when a connection goes is
 * retried by the host, in order, and by no one else. libmosquitto would otherwise send
 * its own copies again after reconnecting, and hold them (their memory, their
 * max_inflight slots) until then. For the same reason a batch that gives up waiting on a
 * connection that is still up drops it: MQTT 3.1.1 sends an unacknowledged PUBLISH again
 * only on a new connection, so its slot would never come free on this one. */
#ifndef GUST_MQTT_OUT_H
#define GUST_MQTT_OUT_H

#include <mosquitto.h>
#include <pthread.h>
#include <stdint.h>

#include "mqtt.h"
#include "mqtt_link.h" /* the backoff */

#define NO_SLOT UINT32_MAX

/* The keys of an mqtt_out block, bound by mqtt_out_schema. */
struct mqtt_out_keys {
    struct mqtt_keys common;
    const char *topic;
    int topic_from_subject;
    const char *topic_strip;
    const char *topic_prefix;
    int64_t max_inflight;
};

struct mqtt_out {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    struct mqtt_out_keys k;
    struct mqtt_conf conf;
    char client_id[160];
    const char *topic;        /* fixed topic, or NULL: from the subject or a template */
    struct gust_tpl *tpl;     /* owned: `topic` with {subject} / {payload.FIELD} */
    const char *topic_strip;  /* subject prefix removed first */
    const char *topic_prefix; /* prepended to the mapped topic */
    int max_inflight;
    struct mosquitto *mosq;
    struct out_guard *guard; /* of the connection under way (plain TCP), or NULL */
    pthread_t net;
    int net_started;
    int wake_fd; /* eventfd: wakes the network thread (a batch handed over, a drop, stop) */

    /* The network thread's own (libmosquitto calls back on it). */
    struct mqtt_backoff backoff;
    int client_ok;       /* mosq is set up for the next attempt */
    int open;            /* an attempt or a connection is under way on mosq */
    int64_t attempt_at;  /* when it began */
    int64_t retry_at;    /* when the next attempt may begin */
    int64_t up_at;       /* when its CONNACK accepted it; 0: not (yet) */
    int refused;         /* the return code of a refusing CONNACK, or 0 */
    int lost_errno;      /* errno when libmosquitto reported the connection gone */
    char lib_error[160]; /* libmosquitto's last warning or error while connecting */

    pthread_mutex_t lock;
    pthread_cond_t cond; /* a connection came up or went, a batch is acked, stopping */
    /* Under lock. */
    int stopping;
    int64_t stop_by;
    int connected;
    uint64_t conn_gen;    /* bumped whenever a connection comes up or goes */
    char drop_why[120];   /* a batch gave up on the connection, which is to be dropped */
    char guard_why[120];  /* why the guard ended the connection (mqtt_out_guard.c) */
    char last_error[160]; /* why it is not connected, for the batches' RETRY reason */

    /* The batch being delivered (under lock once handed to libmosquitto). */
    uint32_t *slot_of_mid; /* 65536 entries: packet id -> index in the batch, or NO_SLOT */
    uint8_t *state;        /* per message: 0 pending, 1 delivered, 2 settled here (rejected) */
    int32_t *mid;          /* per message: its packet id, -1 when not handed over */
    size_t batch_cap, want, nacked;
};

/* Until at_ms (gust_clock_mono_ms), or a broadcast; 0, or ETIMEDOUT. Under lock. */
int out_wait_until(struct mqtt_out *o, int64_t at_ms);

/* mqtt_out_net.c. Sets up the client (no I/O) and starts the network thread, which
 * connects and keeps connecting; a broker that is not up yet is not an error. */
int out_net_start(struct mqtt_out *o, struct gust_err *err);
/* Says DISCONNECT when connected and ends the network thread, within a second. */
void out_net_stop(struct mqtt_out *o);
/* Wakes the network thread: what was handed to libmosquitto goes out. Any thread. */
void out_net_wake(struct mqtt_out *o);

/* mqtt_out_guard.c. Puts a guard between libmosquitto and the broker on the connection
 * mosquitto_connect_async just began (plain TCP): a packet from the broker over the
 * limit drops the connection, with guard_why. 0, or -1 with why. Network thread, as are
 * the other out_guard_* but stop (also once that thread has ended). */
int out_guard_start(struct mqtt_out *o, char *why, size_t whysz);
/* Ends the guard of the last connection, if any: what libmosquitto wrote last goes out,
 * its sockets are closed. Without a guard, nothing. */
void out_guard_stop(struct mqtt_out *o);
/* The network thread's loop, while o->guard is set. The socket to poll (the broker's),
 * the events to poll it for; timeout_ms set to 0 when there is work without waiting. */
int out_guard_fd(const struct mqtt_out *o, short *events, int *timeout_ms);
/* Passes what the broker sent (readable: the socket polled readable) on to libmosquitto,
 * packet by packet; 1 when libmosquitto has something to read (the end, too). */
int out_guard_in(struct mqtt_out *o, int readable);
/* Sends what libmosquitto wrote to the broker (in one send when the socket takes it). */
void out_guard_out(struct mqtt_out *o);

#endif
