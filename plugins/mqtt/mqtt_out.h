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
 * itself; the keeper connects without the lock and installs the new socket under it.
 * The connection itself (CONNECT/CONNACK, buffers, keepalive, backoff) is mqtt_link.c,
 * which mqtt_in uses too. */
#ifndef GUST_MQTT_OUT_H
#define GUST_MQTT_OUT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "mqtt.h"
#include "mqtt_link.h"

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
    struct mqtt_link conn;
    struct mqtt_backoff backoff;
    int64_t reconnect_at;
    char last_error[160];
    uint16_t next_id;

    /* The batch being delivered (unit's thread, under lock). */
    uint32_t *slot_of_mid; /* 65536 entries: packet id -> index in the batch */
    uint8_t *state;        /* per message: 0 pending, 1 delivered, 2 settled here (rejected) */
    uint16_t *mid;         /* packet id per message (QoS 1) */
    uint64_t *end;         /* mqtt_link_queued() after its packet was queued */
    size_t batch_cap;
};

/* mqtt_out_keeper.c: the keeper thread, and dropping a connection (either thread, under lock). */
void *out_keeper_run(void *arg);
void out_drop(struct mqtt_out *o, const char *why);
/* ms from now on the clock of pthread_cond_timedwait (CLOCK_REALTIME). */
void out_deadline_in(struct timespec *ts, int64_t ms);

#endif
