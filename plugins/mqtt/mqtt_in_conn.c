/* mqtt_in's connection: connect with backoff, CONNECT/CONNACK, SUBSCRIBE/SUBACK, reading
 * PUBLISHes into the ring, keepalive, writing, all on the shared link (mqtt_link.c).
 * Network thread only.
 *
 * MQTT 5.0 (mqtt_version 5): refusals and errors are named by their reason codes (and
 * the broker's reason string); a protocol error gust finds is said to the broker in a
 * DISCONNECT before the connection closes; a DISCONNECT from the broker is logged with
 * its reason. CONNECT's Receive Maximum is max_inflight, so a 5.0 broker sends no more
 * unacknowledged QoS 1 messages than the ring holds; its Topic Alias Maximum is 0, so a
 * PUBLISH carrying a topic alias is a protocol error (reason code 0x94).
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

/* The properties of a 5.0 PUBLISH kept whole; a PUBLISH with more is read past, as one
 * over max_payload is. */
#define MAX_PROPS 65536

size_t in_conn_max_packet(const struct mqtt_in *in)
{
    return in->max_payload + 2 + 65535 + 2 + (in->version == MQTT_V5 ? 4 + MAX_PROPS : 0);
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
    in_conn_drop_rc(in, 0, why);
}

void in_conn_drop_rc(struct mqtt_in *in, int rc, const char *why)
{
    if (!in->link.sock) {
        return;
    }
    if (rc != 0 && in->version == MQTT_V5) {
        /* Best effort, without waiting: the connection closes either way. */
        struct gust_err err = {{0}};
        if (mqtt_wire_disconnect(&in->link.out, MQTT_V5, rc) == 0) {
            mqtt_link_flush(&in->link, &err);
        }
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
    in->link.version = in->version;
    in->link.receive_max = (uint16_t)in->cap;
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
        in_conn_drop_rc(in, in->link.why_rc, why);
        return -1;
    }
    if (rc > 0) {
        /* Refusals (credentials, client id) will not fix themselves quickly: error level,
         * and the backoff grows to reconnect_max. */
        char reason[sizeof(in->link.reason) + 4];
        snprintf(reason, sizeof(reason), "%s%s", in->link.reason[0] ? ": " : "", in->link.reason);
        char code[8];
        snprintf(code, sizeof(code), rc >= 0x80 ? "0x%02x" : "%d", rc); /* 5.0 codes are written in hex */
        int creds = rc == 4 || rc == 5 || rc == 0x86 || rc == 0x87;
        int64_t delay = close_link(in);
        log_state(in, GUST_LOG_ERROR,
                  "broker %s:%d refused the connection: %s (CONNACK %s)%s%s%s; retrying in %" PRId64 " ms",
                  in->conf.host, in->conf.port, mqtt_reason_text(rc), code, reason,
                  in->version == MQTT_V5 && rc < 0x80 ? ", answered as MQTT 3.1.1" : "",
                  creds ? "; check username and password/password_file" : "", delay);
        return -1;
    }
    mqtt_host->set_error(in->inst, NULL);
    char v5[80] = "";
    if (in->version == MQTT_V5) {
        int n = snprintf(v5, sizeof(v5), ", MQTT 5");
        if (in->link.server_keepalive > 0) {
            snprintf(v5 + n, sizeof(v5) - (size_t)n, ", keepalive %ds as the broker asks",
                     in->link.server_keepalive);
        }
    }
    log_state(in, GUST_LOG_INFO, "connected to %s:%d as %s (%s session%s%s)", in->conf.host, in->conf.port,
              in->conf.client_id, in->conf.qos ? "persistent" : "clean", p->body[0] & 1 ? ", resumed" : "",
              v5);
    /* Subscribing again on a resumed session is harmless and picks up changed topics
     * (the broker then resends retained messages: at least once). */
    in->next_id = (uint16_t)(in->next_id % 65535 + 1);
    in->sub_id = in->next_id;
    if (mqtt_wire_subscribe(&in->link.out, in->version, in->sub_id, in->filters, in->nfilters,
                            in->conf.qos) != 0) {
        in_conn_drop(in, "SUBSCRIBE does not fit");
        return -1;
    }
    return 0;
}

/* One return code per filter (3.1.1 §3.9.3): the QoS granted, or 0x80 for a refusal;
 * 5.0 (§3.9.3) puts properties before them and refuses with any code from 0x80 up. A
 * downgrade is worth a warning (QoS 0 is not acknowledged: a message the broker sends
 * while gust is down or restarting is lost), anything else the broker must not send. */
static int on_suback(struct mqtt_in *in, const struct mqtt_packet *p)
{
    char list[400] = "", reason[sizeof(in->link.reason)] = "";
    size_t o = 0, off = 2;

    if (p->body_len < 2 || p->flags != 0 || (uint16_t)(p->body[0] << 8 | p->body[1]) != in->sub_id) {
        in_conn_drop_rc(in, MQTT_RC_PROTOCOL_ERROR,
                        "protocol error: a SUBACK that does not answer our SUBSCRIBE");
        return -1;
    }
    if (in->version == MQTT_V5) {
        const unsigned char *props;
        size_t len, at = 0;
        struct mqtt_prop pr;
        int rc;
        if (mqtt_wire_props(p->body, p->body_len, &off, &props, &len) != 0) {
            in_conn_drop_rc(in, MQTT_RC_MALFORMED, "protocol error: malformed SUBACK properties");
            return -1;
        }
        while ((rc = mqtt_wire_prop_next(props, len, &at, &pr)) > 0) {
            if (pr.id == MQTT_P_REASON_STRING) {
                mqtt_link_text(pr.s, pr.slen, reason, sizeof(reason));
            }
        }
        if (rc < 0) {
            in_conn_drop_rc(in, MQTT_RC_MALFORMED, "protocol error: malformed SUBACK properties");
            return -1;
        }
    }
    const unsigned char *codes = p->body + off;
    if (p->body_len - off != in->nfilters) {
        in_conn_drop_rc(in, MQTT_RC_PROTOCOL_ERROR,
                        "protocol error: a SUBACK that does not answer our SUBSCRIBE");
        return -1;
    }
    for (size_t i = 0; i < in->nfilters; i++) {
        int code = codes[i];
        if (code > 2 && (in->version == MQTT_V5 ? code < 0x80 : code != 0x80)) {
            char why[120];
            snprintf(why, sizeof(why), "protocol error: SUBACK return code 0x%02x for %.60s", code,
                     in->filters[i]);
            in_conn_drop_rc(in, MQTT_RC_PROTOCOL_ERROR, why);
            return -1;
        }
    }
    in->sub_id = 0;
    for (size_t i = 0; i < in->nfilters; i++) {
        const char *f = in->filters[i];
        int code = codes[i];
        if (code >= 0x80) {
            if (in->version == MQTT_V5) {
                log_state(in, GUST_LOG_ERROR, "broker refused the subscription to %s: %s (0x%02x)%s%s", f,
                          mqtt_reason_text(code), code, reason[0] ? ": " : "", reason);
            } else {
                log_state(in, GUST_LOG_ERROR, "broker refused the subscription to %s", f);
            }
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

/* A 5.0 broker's DISCONNECT: it closes the connection after it, with a reason. */
static int on_disconnect(struct mqtt_in *in, const struct mqtt_packet *p)
{
    char why[300], reason[sizeof(in->link.reason)] = "";
    int rc = p->body_len > 0 ? p->body[0] : 0;
    size_t off = 1;

    if (p->body_len > 1) {
        const unsigned char *props;
        size_t len, at = 0;
        struct mqtt_prop pr;
        if (mqtt_wire_props(p->body, p->body_len, &off, &props, &len) == 0) {
            while (mqtt_wire_prop_next(props, len, &at, &pr) > 0) {
                if (pr.id == MQTT_P_REASON_STRING) {
                    mqtt_link_text(pr.s, pr.slen, reason, sizeof(reason));
                }
            }
        }
    }
    /* No DISCONNECT back: after the broker's, the client only closes (§3.14). */
    snprintf(why, sizeof(why), "the broker disconnected: %s (0x%02x)%s%s", mqtt_reason_text(rc), rc,
             reason[0] ? ": " : "", reason);
    in_conn_drop(in, why);
    return -1;
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
    case MQTT_PUBLISH: {
        const char *bad;
        int rc = mqtt_wire_publish_parse(p, in->version, &pub, &bad);
        if (rc != 0) {
            char why[120];
            snprintf(why, sizeof(why), "protocol error: %s", bad);
            in_conn_drop_rc(in, rc, why);
            return -1;
        }
        if (in_ring_accept(in, &pub, pub.payload_len) != 0) {
            in_conn_drop(in, "out of memory");
            return -1;
        }
        return 0;
    }
    case MQTT_DISCONNECT:
        if (in->version == MQTT_V5) {
            return on_disconnect(in, p);
        }
        in_conn_drop(in, "protocol error: a DISCONNECT from the broker (MQTT 3.1.1 has none)");
        return -1;
    case MQTT_PUBREL:
        /* The second half of a QoS 2 delivery whose PUBREC went out (on this connection
         * or, after a reconnect, an earlier one): nothing is left to do but say so. */
        if ((id = mqtt_wire_ack_id(p, in->version)) <= 0) {
            in_conn_drop_rc(in, MQTT_RC_MALFORMED, "protocol error: malformed PUBREL");
            return -1;
        }
        if (mqtt_wire_ack(&in->link.out, in->version, MQTT_PUBCOMP, (uint16_t)id, MQTT_RC_SUCCESS) != 0) {
            in_conn_drop(in, "out of memory");
            return -1;
        }
        return 0;
    default: {
        char why[80];
        snprintf(why, sizeof(why), "protocol error: unexpected packet type %d", p->type);
        in_conn_drop_rc(in, MQTT_RC_PROTOCOL_ERROR, why);
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
            in_conn_drop_rc(in, in->link.why_rc, why);
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
    /* While the ring is full nothing is read. A 5.0 broker's Server Keep Alive wins (§3.2.2.3.14). */
    int ka = in->link.server_keepalive > 0 ? in->link.server_keepalive : in->conf.keepalive_s;
    if (mqtt_link_keepalive(&in->link, ka, now, in->count < in->cap, &next) != 0) {
        in_conn_drop(in, in->link.why);
        return 0;
    }
    return next;
}
