/* MQTT 3.1.1 packet encoding and decoding for mqtt_in's client. */
#include <stdlib.h>
#include <string.h>

#include "mqtt_wire.h"

void mqtt_wbuf_free(struct mqtt_wbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void mqtt_wbuf_compact(struct mqtt_wbuf *b)
{
    if (b->off == b->len) {
        b->off = b->len = 0;
    } else if (b->off > 0) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
}

static int reserve(struct mqtt_wbuf *b, size_t more)
{
    if (b->len + more <= b->cap) {
        return 0;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more) {
        cap *= 2;
    }
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Fixed header: type/flags byte and the remaining length as a varint (§2.2.3). */
static int header(struct mqtt_wbuf *b, int type, int flags, size_t remaining)
{
    if (remaining > MQTT_MAX_PACKET || reserve(b, 5 + remaining) != 0) {
        return -1;
    }
    b->p[b->len++] = (unsigned char)(type << 4 | flags);
    do {
        unsigned char d = remaining % 128;
        remaining /= 128;
        b->p[b->len++] = d | (remaining ? 0x80 : 0);
    } while (remaining);
    return 0;
}

static void u16(struct mqtt_wbuf *b, size_t v)
{
    b->p[b->len++] = (unsigned char)(v >> 8);
    b->p[b->len++] = (unsigned char)v;
}

static void str(struct mqtt_wbuf *b, const char *s)
{
    size_t n = strlen(s);
    u16(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

int mqtt_wire_connect(struct mqtt_wbuf *b, const char *client_id, const char *user, const char *pass,
                      int clean_session, int keepalive_s)
{
    size_t cid = strlen(client_id), ul = user ? strlen(user) : 0, pl = pass ? strlen(pass) : 0;
    if (cid > 65535 || ul > 65535 || pl > 65535) {
        return -1;
    }
    size_t rem = 10 + 2 + cid + (user ? 2 + ul : 0) + (pass ? 2 + pl : 0);
    if (header(b, MQTT_CONNECT, 0, rem) != 0) {
        return -1;
    }
    str(b, "MQTT");
    b->p[b->len++] = 4; /* protocol level: 3.1.1 */
    b->p[b->len++] = (unsigned char)((user ? 0x80 : 0) | (pass ? 0x40 : 0) | (clean_session ? 0x02 : 0));
    u16(b, (size_t)keepalive_s);
    str(b, client_id);
    if (user) {
        str(b, user);
    }
    if (pass) {
        str(b, pass);
    }
    return 0;
}

int mqtt_wire_subscribe(struct mqtt_wbuf *b, uint16_t id, const char *const *filters, size_t n, int qos)
{
    size_t rem = 2;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(filters[i]);
        if (l > 65535) {
            return -1;
        }
        rem += 2 + l + 1;
    }
    if (header(b, MQTT_SUBSCRIBE, 0x2, rem) != 0) { /* flags 0010 are mandatory (§3.8.1) */
        return -1;
    }
    u16(b, id);
    for (size_t i = 0; i < n; i++) {
        str(b, filters[i]);
        b->p[b->len++] = (unsigned char)qos;
    }
    return 0;
}

static int ack(struct mqtt_wbuf *b, int type, uint16_t id)
{
    if (header(b, type, 0, 2) != 0) {
        return -1;
    }
    u16(b, id);
    return 0;
}

int mqtt_wire_puback(struct mqtt_wbuf *b, uint16_t id)
{
    return ack(b, MQTT_PUBACK, id);
}

int mqtt_wire_pubrec(struct mqtt_wbuf *b, uint16_t id)
{
    return ack(b, MQTT_PUBREC, id);
}

int mqtt_wire_pubcomp(struct mqtt_wbuf *b, uint16_t id)
{
    return ack(b, MQTT_PUBCOMP, id);
}

int mqtt_wire_publish_fits(size_t topic_len, size_t len, int qos)
{
    return topic_len <= 65535 && len <= MQTT_MAX_PACKET - 2 - topic_len - (qos ? 2 : 0);
}

int mqtt_wire_pingreq(struct mqtt_wbuf *b)
{
    return header(b, MQTT_PINGREQ, 0, 0);
}

int mqtt_wire_disconnect(struct mqtt_wbuf *b)
{
    return header(b, MQTT_DISCONNECT, 0, 0);
}

int mqtt_wire_header(const unsigned char *p, size_t len, size_t *head_len, size_t *remaining)
{
    size_t rem = 0, mult = 1;

    for (size_t i = 1;; i++) {
        if (i > 4) {
            return -1; /* at most four length bytes */
        }
        if (i >= len) {
            return 0;
        }
        rem += (size_t)(p[i] & 0x7f) * mult;
        mult *= 128;
        if (!(p[i] & 0x80)) {
            *head_len = i + 1;
            *remaining = rem;
            return 1;
        }
    }
}

long mqtt_wire_next(const unsigned char *p, size_t len, size_t max_len, struct mqtt_packet *pkt)
{
    size_t head, rem;
    int h = mqtt_wire_header(p, len, &head, &rem);

    if (h <= 0) {
        return h;
    }
    if (rem > max_len) {
        return -1;
    }
    if (len < head + rem) {
        return 0;
    }
    pkt->type = p[0] >> 4;
    pkt->flags = p[0] & 0xf;
    pkt->body = p + head;
    pkt->body_len = rem;
    return (long)(head + rem);
}

int mqtt_wire_publish_parse(const struct mqtt_packet *pkt, struct mqtt_publish *out)
{
    const unsigned char *b = pkt->body;
    size_t n = pkt->body_len, off;

    out->qos = (pkt->flags >> 1) & 3;
    out->dup = (pkt->flags >> 3) & 1;
    out->retain = pkt->flags & 1;
    if (out->qos == 3 || n < 2) {
        return -1;
    }
    out->topic_len = (size_t)b[0] << 8 | b[1];
    out->topic = (const char *)b + 2;
    off = 2 + out->topic_len;
    if (off > n) {
        return -1;
    }
    out->id = 0;
    if (out->qos > 0) {
        if (off + 2 > n) {
            return -1;
        }
        out->id = (uint16_t)(b[off] << 8 | b[off + 1]);
        off += 2;
        if (out->id == 0) {
            return -1; /* ids of QoS 1 and 2 packets are non-zero (§2.3.1) */
        }
    }
    out->payload = b + off;
    out->payload_len = n - off;
    return 0;
}

long mqtt_wire_ack_id(const struct mqtt_packet *pkt)
{
    int want_flags = pkt->type == MQTT_PUBREL ? 0x2 : 0;
    if (pkt->body_len != 2 || pkt->flags != want_flags) {
        return -1;
    }
    return (long)(pkt->body[0] << 8 | pkt->body[1]);
}
