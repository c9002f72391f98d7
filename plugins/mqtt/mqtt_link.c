/* mqtt_in's MQTT 3.1.1 or 5.0 client connection, and the reconnect backoff (see mqtt_link.h). */
#include "mqtt_link.h"

#include <stdlib.h>
#include <string.h>

#define READ_CHUNK 65536
/* An empty input buffer larger than this is given back (it grew for a big packet). */
#define RBUF_KEEP (1u << 20)

static void reset(struct mqtt_link *l)
{
    l->out.off = l->out.len = 0;
    l->roff = l->rlen = 0;
    l->up = 0;
    l->ping_at = 0;
    l->skip_left = 0;
    l->skip_ready = 0;
    l->why = NULL;
    l->why_rc = 0;
    l->server_keepalive = 0;
    l->max_qos = 2;
    l->reason[0] = '\0';
}

int64_t mqtt_link_close(struct mqtt_link *l)
{
    int64_t up_ms = l->sock && l->up ? gust_clock_mono_ms() - l->up_at : 0;
    gust_sock_close(l->sock);
    l->sock = NULL;
    reset(l);
    if (l->rcap > RBUF_KEEP) {
        free(l->rbuf);
        l->rbuf = NULL;
        l->rcap = 0;
    }
    return up_ms;
}

void mqtt_link_free(struct mqtt_link *l)
{
    mqtt_link_close(l);
    mqtt_wbuf_free(&l->out);
    free(l->rbuf);
    l->rbuf = NULL;
    l->rcap = 0;
}

int mqtt_link_open(struct mqtt_link *l, const struct mqtt_conf *conf, struct gust_tls *tls, int clean_session,
                   struct gust_err *err)
{
    struct gust_sock_peer peer = {conf->host, conf->port, "broker"};

    mqtt_link_close(l);
    if (gust_sock_open(&l->sock, &peer, conf->timeout_ms, tls, NULL, err) != 0) {
        return -1;
    }
    struct mqtt_connect_opts o = {.version = l->version == MQTT_V5 ? MQTT_V5 : MQTT_V311,
                                  .clean = clean_session,
                                  .keepalive_s = conf->keepalive_s,
                                  .receive_max = l->receive_max};
    if (mqtt_wire_connect(&l->out, &o, conf->client_id, conf->username, conf->password) != 0) {
        mqtt_link_close(l);
        return gust_err_set(err, -1, "CONNECT does not fit (a field over 65535 bytes?)");
    }
    int64_t now = gust_clock_mono_ms();
    l->last_send = l->last_recv = now;
    l->connack_deadline = now + conf->timeout_ms;
    return 0;
}

void mqtt_link_text(const unsigned char *s, size_t len, char *out, size_t outsz)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < outsz; i++) {
        out[n++] = s[i] >= 32 && s[i] < 127 ? (char)s[i] : '?';
    }
    out[n] = '\0';
}

/* A 5.0 CONNACK's properties (after its flags and reason code): 0, or -1 (l->why). */
static int connack_props(struct mqtt_link *l, const struct mqtt_packet *p)
{
    const unsigned char *props;
    size_t off = 2, len, at = 0;
    struct mqtt_prop pr;
    int rc;

    if (mqtt_wire_props(p->body, p->body_len, &off, &props, &len) != 0 || off != p->body_len) {
        l->why = "malformed CONNACK: its properties length does not match the packet";
        l->why_rc = MQTT_RC_MALFORMED;
        return -1;
    }
    /* Receive Maximum, Maximum Packet Size and Topic Alias Maximum bound what gust would
     * send the broker: PUBLISHes, which mqtt_in never sends. Assigned Client Identifier
     * only comes for an empty client id, which gust never uses. */
    while ((rc = mqtt_wire_prop_next(props, len, &at, &pr)) > 0) {
        if (pr.id == MQTT_P_SERVER_KEEP_ALIVE) {
            l->server_keepalive = (int)pr.num;
        } else if (pr.id == MQTT_P_MAXIMUM_QOS) {
            l->max_qos = (int)pr.num;
        } else if (pr.id == MQTT_P_REASON_STRING) {
            mqtt_link_text(pr.s, pr.slen, l->reason, sizeof(l->reason));
        }
    }
    if (rc < 0) {
        l->why = "malformed CONNACK: a bad property";
        l->why_rc = MQTT_RC_MALFORMED;
        return -1;
    }
    return 0;
}

int mqtt_link_connack(struct mqtt_link *l, const struct mqtt_packet *p)
{
    if (l->up || p->type != MQTT_CONNACK) {
        l->why = l->up ? "a second CONNACK" : "expected a CONNACK";
        l->why_rc = MQTT_RC_PROTOCOL_ERROR;
        return -1;
    }
    if (p->body_len < 2 || p->flags != 0 || (p->body[0] & 0xfe) != 0 ||
        (l->version != MQTT_V5 && p->body_len != 2)) {
        l->why = "malformed CONNACK";
        l->why_rc = MQTT_RC_MALFORMED;
        return -1;
    }
    int rc = p->body[1];
    if (l->version == MQTT_V5) {
        if (p->body_len == 2 && rc > 0 && rc < 0x80) {
            return rc; /* a 3.1.1 broker's refusal (1: unacceptable protocol version) */
        }
        if (connack_props(l, p) != 0) {
            return -1;
        }
        if (rc != 0 && rc < 0x80) {
            l->why = "malformed CONNACK: not a reason code of CONNACK";
            l->why_rc = MQTT_RC_MALFORMED;
            return -1;
        }
    }
    if (rc != 0) {
        return rc;
    }
    l->up = 1;
    l->up_at = gust_clock_mono_ms();
    return 0;
}

int mqtt_link_flush(struct mqtt_link *l, struct gust_err *err)
{
    while (l->sock && l->out.off < l->out.len) {
        ssize_t n = gust_sock_write(l->sock, l->out.p + l->out.off, l->out.len - l->out.off, err);
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }
        l->out.off += (size_t)n;
        l->last_send = gust_clock_mono_ms();
    }
    mqtt_wbuf_compact(&l->out);
    return 0;
}

int mqtt_link_read(struct mqtt_link *l, size_t max_bytes, struct gust_err *err)
{
    if (l->roff > 0) {
        memmove(l->rbuf, l->rbuf + l->roff, l->rlen - l->roff);
        l->rlen -= l->roff;
        l->roff = 0;
    }
    for (size_t got = 0; got < max_bytes;) {
        if (l->rcap - l->rlen < READ_CHUNK) {
            size_t cap = l->rcap * 2 > l->rlen + 2 * READ_CHUNK ? l->rcap * 2 : l->rlen + 2 * READ_CHUNK;
            unsigned char *b = realloc(l->rbuf, cap);
            if (b == NULL) {
                return gust_err_set(err, -1, "out of memory");
            }
            l->rbuf = b;
            l->rcap = cap;
        }
        size_t room = l->rcap - l->rlen;
        ssize_t n = gust_sock_read(l->sock, l->rbuf + l->rlen, room, err);
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }
        l->rlen += (size_t)n;
        got += (size_t)n;
        l->last_recv = gust_clock_mono_ms();
        if ((size_t)n < room && !gust_sock_buffered(l->sock)) {
            break; /* drained: another read would only say EAGAIN */
        }
    }
    return 0;
}

/* The start of an oversized PUBLISH is at roff (head bytes of fixed header, rem after
 * it): 1 once its variable header is in and the rest is being read past, 0 when more
 * must be read first, -1 when it is malformed. */
static int skip_publish(struct mqtt_link *l, size_t head, size_t rem)
{
    const unsigned char *b = l->rbuf + l->roff;
    size_t avail = l->rlen - l->roff;
    struct mqtt_oversized *o = &l->skipped;

    if (avail < head + 2) {
        return 0;
    }
    size_t tlen = (size_t)b[head] << 8 | b[head + 1];
    int qos = (b[0] >> 1) & 3;
    size_t var = 2 + tlen + (qos ? 2 : 0);
    if (qos == 3 || var > rem) {
        l->why = "malformed PUBLISH";
        l->why_rc = MQTT_RC_MALFORMED;
        return -1;
    }
    if (avail < head + var) {
        return 0; /* at most 65539 bytes: the buffer grows for them */
    }
    memset(o, 0, sizeof(*o));
    o->pub.qos = qos;
    o->pub.dup = (b[0] >> 3) & 1;
    o->pub.retain = b[0] & 1;
    o->pub.id = qos ? (uint16_t)(b[head + 2 + tlen] << 8 | b[head + 3 + tlen]) : 0;
    if (qos && o->pub.id == 0) {
        l->why = "malformed PUBLISH";
        l->why_rc = MQTT_RC_MALFORMED;
        return -1;
    }
    size_t keep = tlen < sizeof(o->topic) - 1 ? tlen : sizeof(o->topic) - 1;
    memcpy(o->topic, b + head + 2, keep);
    o->pub.topic = o->topic;
    o->pub.topic_len = keep;
    o->payload_len = rem - var;
    size_t take = avail < head + rem ? avail : head + rem;
    l->roff += take;
    l->skip_left = head + rem - take;
    l->skip_ready = 1;
    return 1;
}

int mqtt_link_next(struct mqtt_link *l, int take_publish, struct mqtt_packet *p, int *oversized)
{
    *oversized = 0;
    for (;;) {
        if (l->skip_left > 0) {
            size_t have = l->rlen - l->roff, d = have < l->skip_left ? have : (size_t)l->skip_left;
            l->roff += d;
            l->skip_left -= d;
        }
        if (l->roff == l->rlen && l->rcap > RBUF_KEEP) {
            free(l->rbuf); /* a big packet made it grow: give it back */
            l->rbuf = NULL;
            l->rcap = l->roff = l->rlen = 0;
        }
        if (l->skip_left > 0) {
            return 0;
        }
        if (l->skip_ready) {
            if (!take_publish) {
                return 0;
            }
            l->skip_ready = 0;
            *oversized = 1;
            return 1;
        }
        size_t avail = l->rlen - l->roff, head, rem;
        int h = avail > 0 ? mqtt_wire_header(l->rbuf + l->roff, avail, &head, &rem) : 0;
        if (h < 0) {
            l->why = "bad packet length";
            l->why_rc = MQTT_RC_MALFORMED;
            return -1;
        }
        if (h == 0) {
            return 0;
        }
        int type = l->rbuf[l->roff] >> 4;
        if (type == MQTT_PUBLISH && !take_publish) {
            return 0;
        }
        if (rem > l->max_packet) {
            if (type != MQTT_PUBLISH) {
                l->why = "a packet over the size limit";
                l->why_rc = MQTT_RC_PACKET_TOO_LARGE;
                return -1;
            }
            int rc = skip_publish(l, head, rem);
            if (rc <= 0) {
                return rc;
            }
            continue; /* handed over once it is read past */
        }
        if (avail < head + rem) {
            return 0;
        }
        p->type = type;
        p->flags = l->rbuf[l->roff] & 0xf;
        p->body = l->rbuf + l->roff + head;
        p->body_len = rem;
        l->roff += head + rem;
        if (type != MQTT_PINGRESP) {
            return 1;
        }
        if (rem != 0 || p->flags != 0) {
            l->why = "malformed PINGRESP";
            l->why_rc = MQTT_RC_MALFORMED;
            return -1;
        }
        l->ping_at = 0;
    }
}

int mqtt_link_keepalive(struct mqtt_link *l, int keepalive_s, int64_t now, int reading, int64_t *next_ms)
{
    int64_t ka = (int64_t)keepalive_s * 1000, half = ka / 2, next;

    *next_ms = 1000;
    if (!l->sock) {
        return 0;
    }
    if (!l->up) {
        if (now >= l->connack_deadline) {
            l->why = "no CONNACK in time";
            return -1;
        }
        *next_ms = l->connack_deadline - now;
        return 0;
    }
    if (!reading) {
        /* Nothing is read: silence proves nothing, and a PINGRESP could not be seen. */
        l->last_recv = now;
        if (l->ping_at) {
            l->ping_at = now;
        }
    }
    if (l->ping_at && now - l->ping_at >= ka) {
        l->why = "no PINGRESP within the keepalive period";
        return -1;
    }
    /* Silence from the broker counts as much as our own: a broker that only ever gets
     * our retried publishes and never answers must still be asked (a ping timed from our
     * writes alone would never go out while we write). */
    if (!l->ping_at && (now - l->last_send >= half || now - l->last_recv >= half) &&
        mqtt_wire_pingreq(&l->out) == 0) {
        l->ping_at = now;
    }
    if (l->ping_at) {
        next = l->ping_at + ka - now;
    } else {
        int64_t a = l->last_send + half - now, b = l->last_recv + half - now;
        next = a < b ? a : b;
    }
    *next_ms = next > 0 ? next : 1;
    return 0;
}

void mqtt_backoff_init(struct mqtt_backoff *b, int64_t min_ms, int64_t max_ms)
{
    b->min_ms = min_ms;
    b->max_ms = max_ms > min_ms ? max_ms : min_ms;
    b->next_ms = min_ms;
}

int64_t mqtt_backoff_next(struct mqtt_backoff *b, int64_t up_ms)
{
    if (up_ms >= MQTT_LINK_STABLE_MS) {
        b->next_ms = b->min_ms;
    }
    int64_t d = b->next_ms;
    b->next_ms = d * 2 > b->max_ms ? b->max_ms : d * 2;
    return d;
}
