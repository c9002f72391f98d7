/* MQTT 3.1.1 and 5.0 packets, just what mqtt_in's client sends and reads, and mqtt_out's
 * check that a PUBLISH fits (OASIS MQTT 3.1.1 §2-3, MQTT 5.0 §2-3). Pure functions over
 * byte buffers: no I/O, no state.
 *
 * Version 5 adds a properties section (a variable byte integer length, then properties)
 * to CONNECT, CONNACK, PUBLISH, the acks, SUBSCRIBE, SUBACK and DISCONNECT, and reason
 * codes to the acks and DISCONNECT. What is read is bounded by the packet: a property
 * whose length runs past its section, an unknown property id, or a section longer than
 * its packet is malformed (MQTT 5.0 §2.2.2.2). */
#ifndef GUST_MQTT_WIRE_H
#define GUST_MQTT_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum {
    MQTT_CONNECT = 1, MQTT_CONNACK = 2, MQTT_PUBLISH = 3, MQTT_PUBACK = 4, MQTT_PUBREC = 5, MQTT_PUBREL = 6,
    MQTT_PUBCOMP = 7, MQTT_SUBSCRIBE = 8, MQTT_SUBACK = 9, MQTT_PINGREQ = 12, MQTT_PINGRESP = 13,
    MQTT_DISCONNECT = 14, MQTT_AUTH = 15,
};

/* Protocol levels (the byte in CONNECT). */
enum { MQTT_V311 = 4, MQTT_V5 = 5 };

/* MQTT 5.0 reason codes gust sends (§2.4). */
enum {
    MQTT_RC_SUCCESS = 0x00,
    MQTT_RC_MALFORMED = 0x81,
    MQTT_RC_PROTOCOL_ERROR = 0x82,
    MQTT_RC_QUOTA_EXCEEDED = 0x97,
    MQTT_RC_PAYLOAD_FORMAT_INVALID = 0x99,
    MQTT_RC_TOPIC_ALIAS_INVALID = 0x94,
    MQTT_RC_PACKET_TOO_LARGE = 0x95,
};

/* MQTT 5.0 property ids gust reads or sends (§2.2.2.2). */
enum {
    MQTT_P_CONTENT_TYPE = 0x03,
    MQTT_P_SESSION_EXPIRY = 0x11,
    MQTT_P_SERVER_KEEP_ALIVE = 0x13,
    MQTT_P_REASON_STRING = 0x1F,
    MQTT_P_RECEIVE_MAXIMUM = 0x21,
    MQTT_P_TOPIC_ALIAS_MAXIMUM = 0x22,
    MQTT_P_TOPIC_ALIAS = 0x23,
    MQTT_P_MAXIMUM_QOS = 0x24,
    MQTT_P_USER_PROPERTY = 0x26,
};

/* Text for a reason code of MQTT 5.0 (CONNACK, SUBACK, DISCONNECT) or a CONNACK return
 * code of 3.1.1 (1 to 5, which 5.0 does not use). */
const char *mqtt_reason_text(int rc);

/* A growing output buffer; bytes [off, len) are still to be written. */
struct mqtt_wbuf {
    unsigned char *p;
    size_t off, len, cap;
};

void mqtt_wbuf_free(struct mqtt_wbuf *b);
/* Drops what was written and moves the rest to the front. */
void mqtt_wbuf_compact(struct mqtt_wbuf *b);

/* What CONNECT says besides its fields. */
struct mqtt_connect_opts {
    int version;          /* MQTT_V311 or MQTT_V5 */
    int clean;            /* clean session (3.1.1) / clean start and a session that ends
                             with the connection (5.0) */
    int keepalive_s;
    uint16_t receive_max; /* 5.0: QoS 1 and 2 PUBLISHes the broker may have unacknowledged */
};

/* Each appends one packet; 0, or -1 when out of memory or a field is over 65535 bytes.
 * With version MQTT_V5, CONNECT carries Session Expiry Interval (0 when clean, else
 * never), Receive Maximum and Topic Alias Maximum 0 (the broker may not use topic
 * aliases towards gust: a PUBLISH with one is then a protocol error), and SUBSCRIBE
 * empty properties and options with only the QoS set. */
int mqtt_wire_connect(struct mqtt_wbuf *b, const struct mqtt_connect_opts *o, const char *client_id,
                      const char *user, const char *pass);
int mqtt_wire_subscribe(struct mqtt_wbuf *b, int version, uint16_t id, const char *const *filters, size_t n,
                        int qos);
/* PUBACK, PUBREC (the answer to a QoS 2 PUBLISH) and PUBCOMP (to the PUBREL that
 * follows): with MQTT_V5 the reason code rc follows the id; 3.1.1 has none. */
int mqtt_wire_ack(struct mqtt_wbuf *b, int version, int type, uint16_t id, int rc);
/* 1 when a PUBLISH of that topic and payload is within the protocol's packet size. */
int mqtt_wire_publish_fits(size_t topic_len, size_t len, int qos);
int mqtt_wire_pingreq(struct mqtt_wbuf *b);
/* With MQTT_V5 the reason code rc (0: normal disconnection). */
int mqtt_wire_disconnect(struct mqtt_wbuf *b, int version, int rc);

/* One MQTT 5.0 property, borrowed from the packet. */
struct mqtt_prop {
    int id;                  /* MQTT_P_* or another valid id */
    uint32_t num;            /* byte, two- and four-byte and variable byte integers */
    const unsigned char *s;  /* UTF-8 strings and binary data: s[0..slen); a user property's name */
    size_t slen;
    const unsigned char *v;  /* a user property's value: v[0..vlen) */
    size_t vlen;
};

/* The properties section at b[*off..n): its length, then that many bytes. 0 with
 * [*props, *props + *len) the properties and *off past them, -1 when the length is
 * malformed or runs past n. */
int mqtt_wire_props(const unsigned char *b, size_t n, size_t *off, const unsigned char **props, size_t *len);
/* The property at p[*off..len): 1 with *off past it, 0 at the end, -1 when it is
 * malformed (an unknown id, or a value that runs past len). */
int mqtt_wire_prop_next(const unsigned char *p, size_t len, size_t *off, struct mqtt_prop *out);

/* One packet read from the wire; body is borrowed from the input buffer. */
struct mqtt_packet {
    int type;  /* MQTT_* */
    int flags; /* low nibble of the first byte */
    const unsigned char *body;
    size_t body_len;
};

/* The protocol's largest remaining length: the max_len of a reader that takes what it allows. */
#define MQTT_MAX_PACKET 268435455
/* The fixed header at p[0..len): 1 with the header's length and the remaining length
 * (what follows it), 0 when more bytes are needed, -1 when the length field is malformed
 * (more than four bytes). */
int mqtt_wire_header(const unsigned char *p, size_t len, size_t *head_len, size_t *remaining);
/* Splits the first packet off p[0..len): returns its whole length, 0 when more bytes are
 * needed, -1 when the length field is malformed or over max_len. */
long mqtt_wire_next(const unsigned char *p, size_t len, size_t max_len, struct mqtt_packet *pkt);

struct mqtt_publish {
    const char *topic; /* not NUL-terminated */
    size_t topic_len;
    int qos, dup, retain;
    uint16_t id; /* 0 for QoS 0 */
    const unsigned char *props; /* 5.0: its properties (checked), NULL for 3.1.1 */
    size_t props_len;
    const unsigned char *payload;
    size_t payload_len;
};

/* 0, or the 5.0 reason code to disconnect with when the PUBLISH is malformed (QoS 3, a
 * QoS 1 or 2 one without a packet id, a bad properties section: MQTT_RC_MALFORMED) or
 * breaks the protocol (a topic alias, which gust never allows, or an empty topic:
 * MQTT_RC_TOPIC_ALIAS_INVALID, MQTT_RC_PROTOCOL_ERROR); *why says which. */
int mqtt_wire_publish_parse(const struct mqtt_packet *pkt, int version, struct mqtt_publish *out, const char **why);
/* The packet id of a PUBACK, PUBREC, PUBREL or PUBCOMP, or -1 when the packet is not
 * one (a PUBREL must carry the flags 0010). 3.1.1: exactly the id; 5.0: the id, then
 * optionally a reason code and properties. */
long mqtt_wire_ack_id(const struct mqtt_packet *pkt, int version);

#endif
