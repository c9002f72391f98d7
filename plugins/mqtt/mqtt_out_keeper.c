/* mqtt_out's keeper thread: the connection between batches. It connects (with backoff
 * after failures, and after a connection that did not stay up), keeps it alive
 * (mqtt_link_keepalive: a PINGREQ once either side has been silent for half the
 * keepalive, the connection dropped when its PINGRESP does not come within it), and
 * reads what the broker sends while no batch is being delivered, so a closed connection
 * is noticed within a second rather than by the next batch. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mqtt_out.h"

#define TICK_MS 1000

void out_drop(struct mqtt_out *o, const char *why)
{
    if (!o->conn.sock) {
        return;
    }
    int64_t delay = mqtt_backoff_next(&o->backoff, mqtt_link_close(&o->conn));
    snprintf(o->last_error, sizeof(o->last_error), "connection lost: %.130s", why);
    o->reconnect_at = gust_now_ms() + delay;
    pthread_cond_broadcast(&o->cond);
    if (!o->stopping) {
        mqtt_host->log(o->inst, GUST_LOG_WARN, "disconnected from %s:%d: %s; reconnecting in %" PRId64 " ms",
                       o->conf.host, o->conf.port, why, delay);
    }
}

void out_deadline_in(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

static void wait_until(struct mqtt_out *o, int64_t at_ms)
{
    struct timespec ts;

    if (at_ms > gust_now_ms()) {
        out_deadline_in(&ts, at_ms - gust_now_ms());
        pthread_cond_timedwait(&o->cond, &o->lock, &ts);
    }
}

/* Without the lock: a batch waiting for the connection keeps waiting on the condition. */
static void connect_once(struct mqtt_out *o)
{
    struct gust_err err = {{0}};
    int refused;
    struct mqtt_link c = o->conn; /* its buffers, reused */

    o->conn = (struct mqtt_link){0};
    pthread_mutex_unlock(&o->lock);
    /* The host redelivers what was not acked: no session state to keep at the broker. */
    int rc = mqtt_link_connect(&c, &o->conf, o->tls, 1, &refused, &err);
    pthread_mutex_lock(&o->lock);
    o->conn = c;
    if (rc == 0 && o->stopping) {
        return; /* stop sends the DISCONNECT */
    }
    if (rc == 0) {
        o->next_id = 0;
        pthread_cond_broadcast(&o->cond);
        mqtt_host->log(o->inst, GUST_LOG_INFO, "connected to %s:%d as %s", o->conf.host, o->conf.port,
                       o->conf.client_id);
        return;
    }
    int64_t delay = mqtt_backoff_next(&o->backoff, 0);
    if (refused) {
        snprintf(o->last_error, sizeof(o->last_error), "broker refused the connection: %.120s", err.msg);
        mqtt_host->log(o->inst, GUST_LOG_ERROR, "broker %s:%d refused the connection: %s%s; retrying in %" PRId64
                       " ms", o->conf.host, o->conf.port, err.msg,
                       refused == 4 || refused == 5 ? "; check username and password/password_file" : "", delay);
    } else {
        snprintf(o->last_error, sizeof(o->last_error), "%.150s", err.msg);
        mqtt_host->log(o->inst, GUST_LOG_WARN, "cannot connect to %s:%d: %s; retrying in %" PRId64 " ms",
                       o->conf.host, o->conf.port, err.msg, delay);
    }
    o->reconnect_at = gust_now_ms() + delay;
}

/* An idle connection: what the broker sent, and the keepalive. Returns when to look
 * again (ms from now). */
static int64_t upkeep(struct mqtt_out *o, int64_t now)
{
    struct gust_err err = {{0}};
    struct mqtt_packet p;
    int64_t next = TICK_MS;
    int got, oversized;

    /* What came first (a PINGRESP among it), then the keepalive, then what it queued. */
    if (mqtt_link_pump(&o->conn, 1, now, &err) != 0) {
        out_drop(o, err.msg);
        return 0;
    }
    while ((got = mqtt_link_next(&o->conn, 1, &p, &oversized)) > 0) {
        if (oversized || p.type != MQTT_PUBACK || mqtt_wire_ack_id(&p) < 0) {
            out_drop(o, "protocol error: expected a PUBACK");
            return 0;
        } /* a PUBACK of a batch given up on is dropped here */
    }
    if (got < 0) {
        char why[120];
        snprintf(why, sizeof(why), "protocol error: %s", o->conn.why);
        out_drop(o, why);
        return 0;
    }
    if (mqtt_link_keepalive(&o->conn, o->conf.keepalive_s, gust_now_ms(), 1, &next) != 0) {
        out_drop(o, o->conn.why);
        return 0;
    }
    if (mqtt_link_flush(&o->conn, &err) != 0) {
        out_drop(o, err.msg);
        return 0;
    }
    return next < TICK_MS ? next : TICK_MS;
}

void *out_keeper_run(void *arg)
{
    struct mqtt_out *o = arg;

    pthread_mutex_lock(&o->lock);
    while (!o->stopping) {
        int64_t now = gust_now_ms();
        if (!o->conn.sock && now >= o->reconnect_at) {
            connect_once(o);
            continue;
        }
        if (!o->conn.sock) {
            wait_until(o, o->reconnect_at);
            continue;
        }
        wait_until(o, now + upkeep(o, now));
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}
