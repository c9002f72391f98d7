/* mqtt_out's keeper thread: the connection between batches. It connects (with backoff
 * after failures), sends a PINGREQ when nothing went out for half the keepalive, drops
 * a connection whose PINGRESP does not come within the keepalive, and reads what the
 * broker sends while no batch is being delivered, so a closed connection is noticed
 * within a second rather than by the next batch. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mqtt_out.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000
#define TICK_MS 1000

void out_drop(struct mqtt_out *o, const char *why)
{
    if (!o->conn.sock) {
        return;
    }
    out_conn_close(&o->conn);
    snprintf(o->last_error, sizeof(o->last_error), "connection lost: %.130s", why);
    /* The first attempt at once: a broker restart is usually over by then, or soon. */
    o->reconnect_at = gust_now_ms();
    pthread_cond_broadcast(&o->cond);
    if (!o->stopping) {
        mqtt_host->log(o->inst, GUST_LOG_WARN, "disconnected from %s:%d: %s; reconnecting with backoff", o->conf.host,
                       o->conf.port, why);
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
    struct out_conn c = o->conn; /* its buffers, reused */

    o->conn = (struct out_conn){0};
    pthread_mutex_unlock(&o->lock);
    int rc = out_conn_open(&c, &o->conf, o->tls, &refused, &err);
    pthread_mutex_lock(&o->lock);
    o->conn = c;
    if (rc == 0 && o->stopping) {
        return; /* stop sends the DISCONNECT */
    }
    if (rc == 0) {
        o->backoff_ms = BACKOFF_MIN_MS;
        o->next_id = 0;
        pthread_cond_broadcast(&o->cond);
        mqtt_host->log(o->inst, GUST_LOG_INFO, "connected to %s:%d as %s", o->conf.host, o->conf.port,
                       o->conf.client_id);
        return;
    }
    if (refused) {
        snprintf(o->last_error, sizeof(o->last_error), "broker refused the connection: %.120s", err.msg);
        mqtt_host->log(o->inst, GUST_LOG_ERROR, "broker %s:%d refused the connection: %s%s", o->conf.host,
                       o->conf.port, err.msg,
                       refused == 4 || refused == 5 ? "; check username and password/password_file" : "");
    } else {
        snprintf(o->last_error, sizeof(o->last_error), "%.150s", err.msg);
        mqtt_host->log(o->inst, GUST_LOG_WARN, "cannot connect to %s:%d: %s; retrying in %" PRId64 " ms",
                       o->conf.host, o->conf.port, err.msg, o->backoff_ms);
    }
    o->reconnect_at = gust_now_ms() + o->backoff_ms;
    o->backoff_ms = o->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : o->backoff_ms * 2;
}

/* An idle connection: what the broker sent, and the keepalive. */
static void upkeep(struct mqtt_out *o, int64_t now)
{
    struct gust_err err = {{0}};
    struct mqtt_packet p;
    int64_t ka = (int64_t)o->conf.keepalive_s * 1000;
    int got;

    if (o->conn.ping_at == 0 && now - o->conn.last_send >= ka / 2 && mqtt_wire_pingreq(&o->conn.out) == 0) {
        o->conn.ping_at = now;
    }
    if (out_conn_pump(&o->conn, 1, now, &err) != 0) {
        out_drop(o, err.msg);
        return;
    }
    while ((got = out_conn_next(&o->conn, &p)) > 0) {
        if (p.type == MQTT_PINGRESP) {
            o->conn.ping_at = 0;
        } /* a PUBACK of a batch given up on is dropped here */
    }
    if (got < 0) {
        out_drop(o, "protocol error: bad packet length");
    } else if (o->conn.ping_at && now - o->conn.ping_at >= ka) {
        out_drop(o, "no PINGRESP within the keepalive period");
    }
}

void *out_keeper_run(void *arg)
{
    struct mqtt_out *o = arg;

    pthread_mutex_lock(&o->lock);
    while (!o->stopping) {
        int64_t now = gust_now_ms(), ka = (int64_t)o->conf.keepalive_s * 1000;
        if (!o->conn.sock && now >= o->reconnect_at) {
            connect_once(o);
            continue;
        }
        if (!o->conn.sock) {
            wait_until(o, o->reconnect_at);
            continue;
        }
        upkeep(o, now);
        int64_t next = now + TICK_MS;
        if (o->conn.sock && o->conn.ping_at == 0 && o->conn.last_send + ka / 2 < next) {
            next = o->conn.last_send + ka / 2;
        }
        wait_until(o, next);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}
