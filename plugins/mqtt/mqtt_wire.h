/* MQTT 3.1.1 packets, just what mqtt_in's client sends and reads, and mqtt_out's check
 * that a PUBLISH fits (OASIS MQTT 3.1.1, §2 and §3). Pure functions over byte buffers: no I/O, no state. */
#ifndef GUST_MQTT_WIRE_H
#define GUST_MQTT_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum {
    MQTT_CONNECT = 1, MQTT_CONNACK = 2, MQTT_PUBLISH = 3, MQTT_PUBACK = 4, MQTT_PUBREC = 5, MQTT_PUBREL = 6,
    MQTT_PUBCOMP = 7, MQTT_SUBSCRIBE = 8, MQTT_SUBACK = 9, MQTT_PINGREQ = 12, MQTT_PINGRESP = 13,
    MQTT_DISCONNECT = 14,
};

/* A growing output buffer; bytes [off, len) are still to be written. */
struct mqtt_wbuf {
    unsigned char *p;
    size_t off, len, cap;
};

void mqtt_wbuf_free(struct mqtt_wbuf *b);
/* Drops what was written and moves the rest to the front. */
void mqtt_wbuf_compact(struct mqtt_wbuf *b);

/* Each appends one packet; 0, or -1 when out of memory or a field is over 65535 bytes. */
int mqtt_wire_connect(struct mqtt_wbuf *b, const char *client_id, const char *user, const char *pass,
                      int clean_session, int keepalive_s);
int mqtt_wire_subscribe(struct mqtt_wbuf *b, uint16_t id, const char *const *filters, size_t n, int qos);
int mqtt_wire_puback(struct mqtt_wbuf *b, uint16_t id);
/* PUBREC (the answer to a QoS 2 PUBLISH) and PUBCOMP (to the PUBREL that follows). */
int mqtt_wire_pubrec(struct mqtt_wbuf *b, uint16_t id);
int mqtt_wire_pubcomp(struct mqtt_wbuf *b, uint16_t id);
/* 1 when a PUBLISH of that topic and payload is within the protocol's packet size. */
int mqtt_wire_publish_fits(size_t topic_len, size_t len, int qos);
int mqtt_wire_pingreq(struct mqtt_wbuf *b);
int mqtt_wire_disconnect(struct mqtt_wbuf *b);

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
    const unsigned char *payload;
    size_t payload_len;
};

/* 0, or -1 when the PUBLISH is malformed (QoS 3, or a QoS 1 or 2 one without a packet id). */
int mqtt_wire_publish_parse(const struct mqtt_packet *pkt, struct mqtt_publish *out);
/* The packet id of a PUBACK, PUBREC, PUBREL or PUBCOMP, or -1 when the packet is not
 * exactly one (a PUBREL must carry the flags 0010). */
long mqtt_wire_ack_id(const struct mqtt_packet *pkt);

#endif
