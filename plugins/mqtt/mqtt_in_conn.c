/* mqtt_in's connection: connect with backoff, CONNECT/CONNACK, SUBSCRIBE/SUBACK, reading
 * PUBLISHes into the ring, keepalive, writing. Network thread only.
 *
 * The session is persistent for QoS 1 (clean session off, fixed client id): while gust
 * is down or reconnecting the broker keeps every message it has not had a PUBACK for,
 * and sends those again (DUP set) once we are back. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt_in.h"

#define BACKOFF_MIN_MS 100
#define READ_CHUNK 65536

static void log_state(struct mqtt_in *in, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void log_state(struct mqtt_in *in, int level, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mqtt_host->log(in->inst, level, "%s", msg);
}

static void next_attempt(struct mqtt_in *in)
{
    in->reconnect_at = gust_now_ms() + in->backoff_ms;
    in->backoff_ms = in->backoff_ms * 2 > in->reconnect_max_ms ? in->reconnect_max_ms : in->backoff_ms * 2;
}

void in_conn_drop(struct mqtt_in *in, const char *why)
{
    if (!in->sock) {
        return;
    }
    if (!atomic_load(&in->stopping)) {
        log_state(in, GUST_LOG_WARN, "disconnected from %s:%d: %s; reconnecting in %" PRId64 " ms",
                  in->conf.host, in->conf.port, why, in->backoff_ms);
    }
    gust_sock_close(in->sock);
    in->sock = NULL;
    in->cstate = C_DOWN;
    /* Entries of this connection will not be PUBACKed (their ids belong to it). */
    in->epoch++;
    in->out.off = in->out.len = 0;
    in->rlen = 0;
    next_attempt(in);
}

void in_conn_connect(struct mqtt_in *in)
{
    struct gust_err err = {{0}};
    const struct mqtt_conf *c = &in->conf;
    struct gust_sock_peer peer = {c->host, c->port, "broker"};

    if (gust_sock_open(&in->sock, &peer, c->timeout_ms, in->tls, NULL, &err) != 0) {
        log_state(in, GUST_LOG_WARN, "cannot connect to %s:%d: %s; retrying in %" PRId64 " ms", c->host, c->port,
                  err.msg, in->backoff_ms);
        next_attempt(in);
        return;
    }
    in->out.off = in->out.len = 0;
    in->rlen = 0;
    /* QoS 0 has nothing for the broker to keep: a clean session then. */
    if (mqtt_wire_connect(&in->out, c->client_id, c->username, c->password, c->qos == 0, c->keepalive_s) != 0) {
        in_conn_drop(in, "CONNECT does not fit (a field over 65535 bytes?)");
        return;
    }
    in->cstate = C_CONNECTING;
    in->last_send = in->last_recv = gust_now_ms();
    in->connect_deadline = in->last_send + c->timeout_ms;
}

static int on_connack(struct mqtt_in *in, const struct mqtt_packet *p)
{
    if (p->body_len != 2 || in->cstate != C_CONNECTING) {
        in_conn_drop(in, "protocol error: unexpected CONNACK");
        return -1;
    }
    if (p->body[1] != 0) {
        /* Refusals (credentials, client id) will not fix themselves quickly: error level,
         * and the backoff grows to reconnect_max. */
        log_state(in, GUST_LOG_ERROR, "broker %s:%d refused the connection: %s (CONNACK %d)%s", in->conf.host,
                  in->conf.port, mqtt_connack_text(p->body[1]), p->body[1],
                  p->body[1] == 4 || p->body[1] == 5 ? "; check username and password/password_file" : "");
        gust_sock_close(in->sock);
        in->sock = NULL;
        in->cstate = C_DOWN;
        in->epoch++;
        next_attempt(in);
        return -1;
    }
    in->cstate = C_UP;
    in->backoff_ms = BACKOFF_MIN_MS;
    log_state(in, GUST_LOG_INFO, "connected to %s:%d as %s (%s session%s)", in->conf.host, in->conf.port,
              in->conf.client_id, in->conf.qos ? "persistent" : "clean",
              p->body[0] & 1 ? ", resumed" : "");
    /* Subscribing again on a resumed session is harmless and picks up changed topics
     * (the broker then resends retained messages: at least once). */
    in->next_id = (uint16_t)(in->next_id % 65535 + 1);
    if (mqtt_wire_subscribe(&in->out, in->next_id, in->filters, in->nfilters, in->conf.qos) != 0) {
        in_conn_drop(in, "SUBSCRIBE does not fit");
        return -1;
    }
    return 0;
}

static void on_suback(struct mqtt_in *in, const struct mqtt_packet *p)
{
    char list[400] = "";
    size_t o = 0;

    for (size_t i = 2; i < p->body_len && i - 2 < in->nfilters; i++) {
        const char *f = in->filters[i - 2];
        if (p->body[i] == 0x80) {
            log_state(in, GUST_LOG_ERROR, "broker refused the subscription to %s", f);
        } else if (o < sizeof(list)) {
            o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s (QoS %d)", o ? ", " : "", f, p->body[i]);
        }
    }
    if (o) {
        log_state(in, GUST_LOG_INFO, "subscribed to %s", list);
    }
}

/* One packet; 0, or -1 when the connection was dropped. */
static int on_packet(struct mqtt_in *in, const struct mqtt_packet *p)
{
    struct mqtt_publish pub;

    switch (p->type) {
    case MQTT_CONNACK:
        return on_connack(in, p);
    case MQTT_SUBACK:
        on_suback(in, p);
        return 0;
    case MQTT_PUBLISH:
        if (mqtt_wire_publish_parse(p, &pub) != 0 || (pub.qos > 0 && pub.id == 0)) {
            in_conn_drop(in, "protocol error: malformed PUBLISH");
            return -1;
        }
        if (in_ring_accept(in, &pub) != 0) {
            in_conn_drop(in, "out of memory");
            return -1;
        }
        return 0;
    default:
        return 0; /* PINGRESP (reading it is the point), and nothing else is expected */
    }
}

int in_conn_input(struct mqtt_in *in)
{
    size_t off = 0;
    struct mqtt_packet p;

    while (in->sock) {
        long n = mqtt_wire_next(in->rbuf + off, in->rlen - off, MQTT_MAX_PACKET, &p);
        if (n < 0) {
            in_conn_drop(in, "protocol error: bad packet length");
            return -1;
        }
        if (n == 0 || (p.type == MQTT_PUBLISH && in->count == in->cap)) {
            break; /* incomplete, or the ring is full: the rest waits */
        }
        if (on_packet(in, &p) != 0) {
            return -1;
        }
        off += (size_t)n;
    }
    if (off) {
        memmove(in->rbuf, in->rbuf + off, in->rlen - off);
        in->rlen -= off;
    }
    return 0;
}

int in_conn_read(struct mqtt_in *in)
{
    struct gust_err err = {{0}};

    for (size_t got = 0; got < 4 * READ_CHUNK;) {
        if (in->rcap - in->rlen < READ_CHUNK) {
            unsigned char *b = realloc(in->rbuf, in->rcap + 2 * READ_CHUNK);
            if (!b) {
                in_conn_drop(in, "out of memory");
                return -1;
            }
            in->rbuf = b;
            in->rcap += 2 * READ_CHUNK;
        }
        size_t room = in->rcap - in->rlen;
        ssize_t n = gust_sock_read(in->sock, in->rbuf + in->rlen, room, &err);
        if (n < 0) {
            /* What came before the end still counts: a refusing CONNACK arrives together
             * with the broker's FIN, and its reason is the one worth logging. */
            if (in_conn_input(in) == 0) {
                in_conn_drop(in, err.msg);
            }
            return -1;
        }
        if (n == 0) {
            break;
        }
        in->rlen += (size_t)n;
        got += (size_t)n;
        in->last_recv = gust_now_ms();
        if ((size_t)n < room) {
            break; /* drained: another read would only say EAGAIN; poll tells when more comes */
        }
    }
    return 0;
}

int in_conn_flush(struct mqtt_in *in)
{
    struct gust_err err = {{0}};

    while (in->sock && in->out.off < in->out.len) {
        ssize_t n = gust_sock_write(in->sock, in->out.p + in->out.off, in->out.len - in->out.off, &err);
        if (n < 0) {
            in_conn_drop(in, err.msg);
            return -1;
        }
        if (n == 0) {
            break;
        }
        in->out.off += (size_t)n;
        in->last_send = gust_now_ms();
    }
    mqtt_wbuf_compact(&in->out);
    return 0;
}

int64_t in_conn_timers(struct mqtt_in *in, int64_t now)
{
    int64_t ka = (int64_t)in->conf.keepalive_s * 1000, next;

    if (!in->sock) {
        return in->reconnect_at > now ? in->reconnect_at - now : 0;
    }
    if (in->cstate == C_CONNECTING && now >= in->connect_deadline) {
        in_conn_drop(in, "no CONNACK in time");
        return 0;
    }
    /* While the ring is full nothing is read, so silence proves nothing. */
    if (in->count == in->cap) {
        in->last_recv = now;
    }
    if (now - in->last_recv > ka * 3 / 2) {
        in_conn_drop(in, "no answer from the broker within 1.5 keepalive periods");
        return 0;
    }
    if (in->cstate == C_UP && now - in->last_send >= ka / 2 && in->out.len == 0) {
        mqtt_wire_pingreq(&in->out);
    }
    next = in->last_send + ka / 2 - now;
    if (in->cstate == C_CONNECTING && in->connect_deadline - now < next) {
        next = in->connect_deadline - now;
    }
    return next > 0 ? next : 1;
}
