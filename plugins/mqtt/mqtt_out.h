/* mqtt_out internals: one instance, its connection and the thread that keeps it.
 *
 * Why not libmosquitto (which mqtt_out used before): it hands every publish to its own
 * network thread with a wake-up byte, and that thread writes each packet with its own
 * write(). On the edge path (QoS 0, batches of 1024) that was about 37% of gust's CPU,
 * on a machine where every cycle gust spends is one the broker does not get. Here the
 * unit's thread encodes a whole batch into one buffer, writes it at once, and reads the
 * PUBACKs itself: a few system calls per batch instead of several per message.
 *
 * Threads: the unit's thread (deliver) and the keeper thread, which looks after the
 * connection between batches: connects with backoff, sends PINGREQs, notices the broker
 * closing it. Both hold `lock` while they touch the connection, so a batch has it to
 * itself; the keeper connects without the lock and installs the new socket under it. */
#ifndef GUST_MQTT_OUT_H
#define GUST_MQTT_OUT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "mqtt.h"
#include "gust_sock.h"
#include "mqtt_wire.h"

/* One connection and its buffers (mqtt_out_conn.c). */
struct out_conn {
    struct gust_sock *sock; /* NULL: down */
    struct mqtt_wbuf out;
    unsigned char *rbuf;
    size_t roff, rlen, rcap; /* bytes [roff, rlen) read and not parsed yet */
    uint64_t written; /* bytes written since connecting */
    int64_t last_send;
    int64_t ping_at; /* when the PINGREQ that awaits its PINGRESP went out, or 0 */
};

/* Connects, sends CONNECT (clean session) and waits for the CONNACK, all within the
 * conf's timeout. -1 with err set on failure; *refused is the CONNACK code of a refusal
 * (0 for any other failure). c's buffers are reused across connections. */
int out_conn_open(struct out_conn *c, const struct mqtt_conf *conf, struct gust_tls *tls, int *refused,
                  struct gust_err *err);
/* Closes the socket (a no-op when down); the buffers stay for the next connection. */
void out_conn_close(struct out_conn *c);
void out_conn_free(struct out_conn *c);
/* Bytes put into `out` since connecting: a packet queued when this was q is on the wire
 * once `written` reaches q. */
uint64_t out_conn_queued(const struct out_conn *c);
/* One round of I/O: writes what is pending; then, when there is nothing left to write
 * and want_input is 0, returns. Otherwise waits until input arrives (read into the
 * buffer) or until deadline (gust_now_ms; at or before now: no waiting). 0, or -1 when
 * the connection failed (err says why; the caller closes it). */
int out_conn_pump(struct out_conn *c, int want_input, int64_t deadline, struct gust_err *err);
/* The next complete packet read: 1 (body valid until the next pump), 0 when none, -1
 * when the input is malformed. */
int out_conn_next(struct out_conn *c, struct mqtt_packet *p);

struct mqtt_out {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    struct mqtt_conf conf;
    char client_id[160];
    const char *topic;        /* fixed topic, or NULL: from the subject or a template */
    struct mqtt_tpl *tpl;     /* owned: `topic` with {subject} / {payload.FIELD} */
    const char *topic_strip;  /* subject prefix removed first */
    const char *topic_prefix; /* prepended to the mapped topic */
    int max_inflight;
    struct gust_tls *tls;

    pthread_t keeper;
    int keeper_started;

    pthread_mutex_t lock;
    pthread_cond_t cond; /* the connection came up or went down; stopping */
    /* Under lock. */
    int stopping;
    struct out_conn conn;
    int64_t reconnect_at, backoff_ms;
    char last_error[160];
    uint16_t next_id;

    /* The batch being delivered (unit's thread, under lock). */
    uint32_t *slot_of_mid; /* 65536 entries: packet id -> index in the batch */
    uint8_t *state;        /* per message: 0 pending, 1 delivered, 2 settled here (rejected) */
    uint16_t *mid;         /* packet id per message (QoS 1) */
    uint64_t *end;         /* out_conn_queued() after its packet was queued */
    size_t batch_cap;
};

/* mqtt_out_keeper.c: the keeper thread, and dropping a connection (either thread, under lock). */
void *out_keeper_run(void *arg);
void out_drop(struct mqtt_out *o, const char *why);
/* ms from now on the clock of pthread_cond_timedwait (CLOCK_REALTIME). */
void out_deadline_in(struct timespec *ts, int64_t ms);

#endif
