/* MQTT 3.1.1 and 5.0 packet encoding and decoding for mqtt_in's client (see mqtt_wire.h). */
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

/* A variable byte integer (§1.5.5 of 5.0, the remaining length of 3.1.1). */
static void varint(struct mqtt_wbuf *b, size_t v)
{
    do {
        unsigned char d = v % 128;
        v /= 128;
        b->p[b->len++] = d | (v ? 0x80 : 0);
    } while (v);
}

/* Fixed header: type/flags byte and the remaining length as a varint (§2.2.3). */
static int header(struct mqtt_wbuf *b, int type, int flags, size_t remaining)
{
    if (remaining > MQTT_MAX_PACKET || reserve(b, 5 + remaining) != 0) {
        return -1;
    }
    b->p[b->len++] = (unsigned char)(type << 4 | flags);
    varint(b, remaining);
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

static void u32(struct mqtt_wbuf *b, uint32_t v)
{
    u16(b, v >> 16);
    u16(b, v & 0xffff);
}

/* CONNECT's 5.0 properties: 5 + 3 + 3 bytes. */
#define CONNECT_PROPS 11

int mqtt_wire_connect(struct mqtt_wbuf *b, const struct mqtt_connect_opts *o, const char *client_id,
                      const char *user, const char *pass)
{
    size_t cid = strlen(client_id), ul = user ? strlen(user) : 0, pl = pass ? strlen(pass) : 0;
    int v5 = o->version == MQTT_V5;
    if (cid > 65535 || ul > 65535 || pl > 65535) {
        return -1;
    }
    size_t rem = 10 + (v5 ? 1 + CONNECT_PROPS : 0) + 2 + cid + (user ? 2 + ul : 0) + (pass ? 2 + pl : 0);
    if (header(b, MQTT_CONNECT, 0, rem) != 0) {
        return -1;
    }
    str(b, "MQTT");
    b->p[b->len++] = v5 ? MQTT_V5 : MQTT_V311;
    b->p[b->len++] = (unsigned char)((user ? 0x80 : 0) | (pass ? 0x40 : 0) | (o->clean ? 0x02 : 0));
    u16(b, (size_t)o->keepalive_s);
    if (v5) {
        varint(b, CONNECT_PROPS);
        /* A persistent session outlives the connection as 3.1.1's does: 5.0 would end it
         * with the connection unless told otherwise. */
        b->p[b->len++] = MQTT_P_SESSION_EXPIRY;
        u32(b, o->clean ? 0 : 0xffffffffu);
        b->p[b->len++] = MQTT_P_RECEIVE_MAXIMUM;
        u16(b, o->receive_max ? o->receive_max : 65535);
        /* 0 is the default; said anyway, so a capture shows it: no aliases towards gust. */
        b->p[b->len++] = MQTT_P_TOPIC_ALIAS_MAXIMUM;
        u16(b, 0);
    }
    str(b, client_id);
    if (user) {
        str(b, user);
    }
    if (pass) {
        str(b, pass);
    }
    return 0;
}

int mqtt_wire_subscribe(struct mqtt_wbuf *b, int version, uint16_t id, const char *const *filters, size_t n,
                        int qos)
{
    int v5 = version == MQTT_V5;
    size_t rem = 2 + (v5 ? 1 : 0);
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
    if (v5) {
        varint(b, 0); /* no properties */
    }
    for (size_t i = 0; i < n; i++) {
        str(b, filters[i]);
        /* 3.1.1: the QoS; 5.0: options whose other bits (No Local, Retain As Published,
         * Retain Handling 0: retained messages at subscribe) keep 3.1.1's behaviour. */
        b->p[b->len++] = (unsigned char)qos;
    }
    return 0;
}

int mqtt_wire_ack(struct mqtt_wbuf *b, int version, int type, uint16_t id, int rc)
{
    /* 5.0 lets the properties length go when nothing follows the reason code (§3.4.2.2). */
    int v5 = version == MQTT_V5;
    if (header(b, type, type == MQTT_PUBREL ? 0x2 : 0, v5 ? 3 : 2) != 0) {
        return -1;
    }
    u16(b, id);
    if (v5) {
        b->p[b->len++] = (unsigned char)rc;
    }
    return 0;
}

int mqtt_wire_publish_fits(size_t topic_len, size_t len, int qos)
{
    return topic_len <= 65535 && len <= MQTT_MAX_PACKET - 2 - topic_len - (qos ? 2 : 0);
}

int mqtt_wire_pingreq(struct mqtt_wbuf *b)
{
    return header(b, MQTT_PINGREQ, 0, 0);
}

int mqtt_wire_disconnect(struct mqtt_wbuf *b, int version, int rc)
{
    if (version != MQTT_V5) {
        return header(b, MQTT_DISCONNECT, 0, 0);
    }
    if (header(b, MQTT_DISCONNECT, 0, 1) != 0) {
        return -1;
    }
    b->p[b->len++] = (unsigned char)rc;
    return 0;
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

/* Reads a variable byte integer at b[*off..n): 0, or -1 when it is longer than four
 * bytes or runs past n. */
static int read_varint(const unsigned char *b, size_t n, size_t *off, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        if (*off >= n) {
            return -1;
        }
        unsigned char d = b[(*off)++];
        v |= (uint32_t)(d & 0x7f) << (7 * i);
        if (!(d & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

int mqtt_wire_props(const unsigned char *b, size_t n, size_t *off, const unsigned char **props, size_t *len)
{
    uint32_t l;
    if (read_varint(b, n, off, &l) != 0 || l > n - *off) {
        return -1;
    }
    *props = b + *off;
    *len = l;
    *off += l;
    return 0;
}

enum { P_NONE, P_BYTE, P_U16, P_U32, P_VARINT, P_STR, P_BIN, P_PAIR };

/* The type of each property id of MQTT 5.0 (§2.2.2.2); P_NONE: not a property. */
static const unsigned char prop_types[0x2B] = {
    [0x01] = P_BYTE, [0x02] = P_U32,  [0x03] = P_STR,  [0x08] = P_STR,  [0x09] = P_BIN,  [0x0B] = P_VARINT,
    [0x11] = P_U32,  [0x12] = P_STR,  [0x13] = P_U16,  [0x15] = P_STR,  [0x16] = P_BIN,  [0x17] = P_BYTE,
    [0x18] = P_U32,  [0x19] = P_BYTE, [0x1A] = P_STR,  [0x1C] = P_STR,  [0x1F] = P_STR,  [0x21] = P_U16,
    [0x22] = P_U16,  [0x23] = P_U16,  [0x24] = P_BYTE, [0x25] = P_BYTE, [0x26] = P_PAIR, [0x27] = P_U32,
    [0x28] = P_BYTE, [0x29] = P_BYTE, [0x2A] = P_BYTE,
};

/* A two-byte length and that many bytes at p[*off..len). */
static int read_str(const unsigned char *p, size_t len, size_t *off, const unsigned char **s, size_t *slen)
{
    if (len - *off < 2) {
        return -1;
    }
    size_t l = (size_t)p[*off] << 8 | p[*off + 1];
    *off += 2;
    if (l > len - *off) {
        return -1;
    }
    *s = p + *off;
    *slen = l;
    *off += l;
    return 0;
}

int mqtt_wire_prop_next(const unsigned char *p, size_t len, size_t *off, struct mqtt_prop *out)
{
    uint32_t id;
    if (*off >= len) {
        return 0;
    }
    memset(out, 0, sizeof(*out));
    /* Ids are variable byte integers, though every one defined fits in one byte. */
    if (read_varint(p, len, off, &id) != 0) {
        return -1;
    }
    out->id = (int)id;
    size_t left = len - *off;
    switch (id < sizeof(prop_types) ? prop_types[id] : P_NONE) {
    case P_BYTE:
        if (left < 1) {
            return -1;
        }
        out->num = p[(*off)++];
        return 1;
    case P_U16:
        if (left < 2) {
            return -1;
        }
        out->num = (uint32_t)p[*off] << 8 | p[*off + 1];
        *off += 2;
        return 1;
    case P_U32:
        if (left < 4) {
            return -1;
        }
        out->num =
            (uint32_t)p[*off] << 24 | (uint32_t)p[*off + 1] << 16 | (uint32_t)p[*off + 2] << 8 | p[*off + 3];
        *off += 4;
        return 1;
    case P_VARINT:
        return read_varint(p, len, off, &out->num) == 0 ? 1 : -1;
    case P_STR:
    case P_BIN:
        return read_str(p, len, off, &out->s, &out->slen) == 0 ? 1 : -1;
    case P_PAIR:
        return read_str(p, len, off, &out->s, &out->slen) == 0 &&
                       read_str(p, len, off, &out->v, &out->vlen) == 0
                   ? 1
                   : -1;
    default:
        return -1;
    }
}

int mqtt_wire_publish_parse(const struct mqtt_packet *pkt, int version, struct mqtt_publish *out,
                            const char **why)
{
    const unsigned char *b = pkt->body;
    size_t n = pkt->body_len, off;

    *why = "malformed PUBLISH";
    out->qos = (pkt->flags >> 1) & 3;
    out->dup = (pkt->flags >> 3) & 1;
    out->retain = pkt->flags & 1;
    out->props = NULL;
    out->props_len = 0;
    if (out->qos == 3 || n < 2) {
        return MQTT_RC_MALFORMED;
    }
    out->topic_len = (size_t)b[0] << 8 | b[1];
    out->topic = (const char *)b + 2;
    off = 2 + out->topic_len;
    if (off > n) {
        return MQTT_RC_MALFORMED;
    }
    out->id = 0;
    if (out->qos > 0) {
        if (off + 2 > n) {
            return MQTT_RC_MALFORMED;
        }
        out->id = (uint16_t)(b[off] << 8 | b[off + 1]);
        off += 2;
        if (out->id == 0) {
            return MQTT_RC_MALFORMED; /* ids of QoS 1 and 2 packets are non-zero (§2.3.1) */
        }
    }
    if (version == MQTT_V5) {
        struct mqtt_prop pr;
        size_t at = 0;
        int rc;
        if (mqtt_wire_props(b, n, &off, &out->props, &out->props_len) != 0) {
            *why = "malformed PUBLISH: its properties length runs past the packet";
            return MQTT_RC_MALFORMED;
        }
        while ((rc = mqtt_wire_prop_next(out->props, out->props_len, &at, &pr)) > 0) {
            if (pr.id == MQTT_P_TOPIC_ALIAS) {
                *why = "a PUBLISH with a topic alias (gust allows none: Topic Alias Maximum 0)";
                return MQTT_RC_TOPIC_ALIAS_INVALID;
            }
        }
        if (rc < 0) {
            *why = "malformed PUBLISH: a bad property";
            return MQTT_RC_MALFORMED;
        }
        if (out->topic_len == 0) {
            *why = "a PUBLISH with an empty topic";
            return MQTT_RC_PROTOCOL_ERROR;
        }
    }
    out->payload = b + off;
    out->payload_len = n - off;
    *why = NULL;
    return 0;
}

long mqtt_wire_ack_id(const struct mqtt_packet *pkt, int version)
{
    int want_flags = pkt->type == MQTT_PUBREL ? 0x2 : 0;
    if (pkt->body_len < 2 || pkt->flags != want_flags || (version != MQTT_V5 && pkt->body_len != 2)) {
        return -1;
    }
    if (pkt->body_len > 3) { /* 5.0: id, reason code, properties */
        const unsigned char *props;
        size_t off = 3, len, at = 0;
        struct mqtt_prop pr;
        int rc;
        if (mqtt_wire_props(pkt->body, pkt->body_len, &off, &props, &len) != 0 || off != pkt->body_len) {
            return -1;
        }
        while ((rc = mqtt_wire_prop_next(props, len, &at, &pr)) > 0) {
        }
        if (rc < 0) {
            return -1;
        }
    }
    return (long)(pkt->body[0] << 8 | pkt->body[1]);
}

const char *mqtt_reason_text(int rc)
{
    switch (rc) {
    case 0x00:
        return "success";
    /* 3.1.1 CONNACK return codes */
    case 0x01:
        return "unacceptable protocol version";
    case 0x02:
        return "client identifier rejected";
    case 0x03:
        return "server unavailable";
    case 0x04:
        return "bad user name or password";
    case 0x05:
        return "not authorized";
    /* 5.0 reason codes */
    case 0x80:
        return "unspecified error";
    case 0x81:
        return "malformed packet";
    case 0x82:
        return "protocol error";
    case 0x83:
        return "implementation specific error";
    case 0x84:
        return "unsupported protocol version";
    case 0x85:
        return "client identifier not valid";
    case 0x86:
        return "bad user name or password";
    case 0x87:
        return "not authorized";
    case 0x88:
        return "server unavailable";
    case 0x89:
        return "server busy";
    case 0x8A:
        return "banned";
    case 0x8B:
        return "server shutting down";
    case 0x8C:
        return "bad authentication method";
    case 0x8D:
        return "keep alive timeout";
    case 0x8E:
        return "session taken over";
    case 0x8F:
        return "topic filter invalid";
    case 0x90:
        return "topic name invalid";
    case 0x91:
        return "packet identifier in use";
    case 0x93:
        return "receive maximum exceeded";
    case 0x94:
        return "topic alias invalid";
    case 0x95:
        return "packet too large";
    case 0x96:
        return "message rate too high";
    case 0x97:
        return "quota exceeded";
    case 0x98:
        return "administrative action";
    case 0x99:
        return "payload format invalid";
    case 0x9A:
        return "retain not supported";
    case 0x9B:
        return "QoS not supported";
    case 0x9C:
        return "use another server";
    case 0x9D:
        return "server moved";
    case 0x9E:
        return "shared subscriptions not supported";
    case 0x9F:
        return "connection rate exceeded";
    case 0xA0:
        return "maximum connect time";
    case 0xA1:
        return "subscription identifiers not supported";
    case 0xA2:
        return "wildcard subscriptions not supported";
    default:
        return "unknown reason code";
    }
}
