/* mqtt_in's connection: connect with backoff, CONNECT/CONNACK, SUBSCRIBE/SUBACK, reading
 * PUBLISHes into the ring, keepalive, writing, all on the shared link (mqtt_link.c).
 * Network thread only.
 *
 * The session is persistent for QoS 1 (clean session off, fixed client id): while gust
 * is down or reconnecting the broker keeps every message it has not had a PUBACK for,
 * and sends those again (DUP set) once we are back.
 *
 * gust subscribes at QoS 1 at most, so a broker sends QoS 2 only if it ignores the QoS
 * it granted. Such a message is taken like a QoS 1 one, and answered as QoS 2 wants:
 * PUBREC once it is stored, PUBCOMP to the broker's PUBREL (at least once, like QoS 1:
 * a broker that sends it again before the PUBREL has it stored again). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt_in.h"

#define READ_BUDGET (4 * 65536) /* bytes read per turn of the loop */

static void log_state(struct mqtt_in *in, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void log_state(struct mqtt_in *in, int level, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mqtt_host->log(in->inst, level, "%s", msg);
    if (level <= GUST_LOG_WARN) {
        mqtt_host->set_error(in->inst, msg); /* until the next CONNACK that accepts us */
    }
}

size_t in_conn_max_packet(const struct mqtt_in *in)
{
    return in->max_payload + 2 + 65535 + 2;
}

/* Closes the link; the next attempt comes after the backoff, which starts over only
 * after a connection that stayed up a while. */
static int64_t close_link(struct mqtt_in *in)
{
    int64_t delay = mqtt_backoff_next(&in->backoff, mqtt_link_close(&in->link));
    in->reconnect_at = gust_clock_mono_ms() + delay;
    /* Entries of this connection will not be PUBACKed (their ids belong to it). */
    in->epoch++;
    in->sub_id = 0;
    return delay;
}

void in_conn_drop(struct mqtt_in *in, const char *why)
{
    if (!in->link.sock) {
        return;
    }
    int64_t delay = close_link(in);
    if (!atomic_load(&in->stopping)) {
        log_state(in, GUST_LOG_WARN, "disconnected from %s:%d: %s; reconnecting in %" PRId64 " ms",
                  in->conf.host, in->conf.port, why, delay);
    }
}

void in_conn_connect(struct mqtt_in *in)
{
    struct gust_err err = {{0}};
    const struct mqtt_conf *c = &in->conf;

    in->link.max_packet = in_conn_max_packet(in);
    /* QoS 0 has nothing for the broker to keep: a clean session then. */
    if (mqtt_link_open(&in->link, c, in->tls, c->qos == 0, &err) != 0) {
        int64_t delay = mqtt_backoff_next(&in->backoff, 0);
        in->reconnect_at = gust_clock_mono_ms() + delay;
        log_state(in, GUST_LOG_WARN, "cannot connect to %s:%d: %s; retrying in %" PRId64 " ms", c->host,
                  c->port, err.msg, delay);
    }
}

static int on_connack(struct mqtt_in *in, const struct mqtt_packet *p)
{
    int rc = mqtt_link_connack(&in->link, p);
    if (rc < 0) {
        char why[120];
        snprintf(why, sizeof(why), "protocol error: %s", in->link.why);
        in_conn_drop(in, why);
        return -1;
    }
    if (rc > 0) {
        /* Refusals (credentials, client id) will not fix themselves quickly: error level,
         * and the backoff grows to reconnect_max. */
        int64_t delay = close_link(in);
        log_state(in, GUST_LOG_ERROR,
                  "broker %s:%d refused the connection: %s (CONNACK %d)%s; retrying in %" PRId64 " ms",
                  in->conf.host, in->conf.port, mqtt_connack_text(rc), rc,
                  rc == 4 || rc == 5 ? "; check username and password/password_file" : "", delay);
        return -1;
    }
    mqtt_host->set_error(in->inst, NULL);
    log_state(in, GUST_LOG_INFO, "connected to %s:%d as %s (%s session%s)", in->conf.host, in->conf.port,
              in->conf.client_id, in->conf.qos ? "persistent" : "clean", p->body[0] & 1 ? ", resumed" : "");
    /* Subscribing again on a resumed session is harmless and picks up changed topics
     * (the broker then resends retained messages: at least once). */
    in->next_id = (uint16_t)(in->next_id % 65535 + 1);
    in->sub_id = in->next_id;
    if (mqtt_wire_subscribe(&in->link.out, in->sub_id, in->filters, in->nfilters, in->conf.qos) != 0) {
        in_conn_drop(in, "SUBSCRIBE does not fit");
        return -1;
    }
    return 0;
}

/* One return code per filter (§3.9.3): the QoS granted, or 0x80 for a refusal. A
 * downgrade is worth a warning (QoS 0 is not acknowledged: a message the broker sends
 * while gust is down or restarting is lost), anything else the broker must not send. */
static int on_suback(struct mqtt_in *in, const struct mqtt_packet *p)
{
    char list[400] = "";
    size_t o = 0;

    if (p->body_len < 2 || p->flags != 0 || (uint16_t)(p->body[0] << 8 | p->body[1]) != in->sub_id ||
        p->body_len - 2 != in->nfilters) {
        in_conn_drop(in, "protocol error: a SUBACK that does not answer our SUBSCRIBE");
        return -1;
    }
    for (size_t i = 0; i < in->nfilters; i++) {
        int code = p->body[2 + i];
        if (code != 0 && code != 1 && code != 2 && code != 0x80) {
            char why[120];
            snprintf(why, sizeof(why), "protocol error: SUBACK return code 0x%02x for %.60s", code,
                     in->filters[i]);
            in_conn_drop(in, why);
            return -1;
        }
    }
    in->sub_id = 0;
    for (size_t i = 0; i < in->nfilters; i++) {
        const char *f = in->filters[i];
        int code = p->body[2 + i];
        if (code == 0x80) {
            log_state(in, GUST_LOG_ERROR, "broker refused the subscription to %s", f);
            continue;
        }
        if (code < in->conf.qos) {
            log_state(
                in, GUST_LOG_WARN,
                "broker granted QoS %d for %s (asked for %d): its messages are not acknowledged, and those "
                "sent while gust is away are lost",
                code, f, in->conf.qos);
        }
        if (o < sizeof(list)) {
            o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s (QoS %d)", o ? ", " : "", f, code);
        }
    }
    if (o) {
        log_state(in, GUST_LOG_INFO, "subscribed to %s", list);
    }
    return 0;
}

/* One packet; 0, or -1 when the connection was dropped. */
static int on_packet(struct mqtt_in *in, const struct mqtt_packet *p)
{
    struct mqtt_publish pub;
    long id;

    if (!in->link.up) {
        return on_connack(in, p);
    }
    switch (p->type) {
    case MQTT_SUBACK:
        return on_suback(in, p);
    case MQTT_PUBLISH:
        if (mqtt_wire_publish_parse(p, &pub) != 0) {
            in_conn_drop(in, "protocol error: malformed PUBLISH");
            return -1;
        }
        if (in_ring_accept(in, &pub, pub.payload_len) != 0) {
            in_conn_drop(in, "out of memory");
            return -1;
        }
        return 0;
    case MQTT_PUBREL:
        /* The second half of a QoS 2 delivery whose PUBREC went out (on this connection
         * or, after a reconnect, an earlier one): nothing is left to do but say so. */
        if ((id = mqtt_wire_ack_id(p)) <= 0) {
            in_conn_drop(in, "protocol error: malformed PUBREL");
            return -1;
        }
        if (mqtt_wire_pubcomp(&in->link.out, (uint16_t)id) != 0) {
            in_conn_drop(in, "out of memory");
            return -1;
        }
        return 0;
    default: {
        char why[80];
        snprintf(why, sizeof(why), "protocol error: unexpected packet type %d", p->type);
        in_conn_drop(in, why);
        return -1;
    }
    }
}

int in_conn_input(struct mqtt_in *in)
{
    struct mqtt_packet p;
    int oversized;

    while (in->link.sock) {
        int got = mqtt_link_next(&in->link, in->count < in->cap, &p, &oversized);
        if (got < 0) {
            char why[120];
            snprintf(why, sizeof(why), "protocol error: %s", in->link.why);
            in_conn_drop(in, why);
            return -1;
        }
        if (got == 0) {
            return 0; /* incomplete, or a PUBLISH with the ring full: the rest waits */
        }
        if (oversized) {
            /* Read past, not kept: rejected like any payload over max_payload. */
            if (in_ring_accept(in, &in->link.skipped.pub, in->link.skipped.payload_len) != 0) {
                in_conn_drop(in, "out of memory");
                return -1;
            }
            continue;
        }
        if (on_packet(in, &p) != 0) {
            return -1;
        }
    }
    return 0;
}

int in_conn_read(struct mqtt_in *in)
{
    struct gust_err err = {{0}};

    if (mqtt_link_read(&in->link, READ_BUDGET, &err) != 0) {
        /* What came before the end still counts: a refusing CONNACK arrives together with
         * the broker's FIN, and its reason is the one worth logging. */
        if (in_conn_input(in) == 0) {
            in_conn_drop(in, err.msg);
        }
        return -1;
    }
    return 0;
}

int in_conn_flush(struct mqtt_in *in)
{
    struct gust_err err = {{0}};

    if (in->link.sock && mqtt_link_flush(&in->link, &err) != 0) {
        in_conn_drop(in, err.msg);
        return -1;
    }
    return 0;
}

int64_t in_conn_timers(struct mqtt_in *in, int64_t now)
{
    int64_t next;

    if (!in->link.sock) {
        return in->reconnect_at > now ? in->reconnect_at - now : 0;
    }
    /* While the ring is full nothing is read. */
    if (mqtt_link_keepalive(&in->link, in->conf.keepalive_s, now, in->count < in->cap, &next) != 0) {
        in_conn_drop(in, in->link.why);
        return 0;
    }
    return next;
}
