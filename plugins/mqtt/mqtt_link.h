/* mqtt_in's MQTT 3.1.1 or 5.0 client connection (mqtt_out is a libmosquitto client).
 * The socket (TCP or TLS, gust/sock.h), the output buffer, the input buffer, CONNECT and
 * its CONNACK (5.0: its properties, the broker's Server Keep Alive honoured), keepalive (PINGREQ, and a
 * connection dropped when its PINGRESP does not come). It has no thread: mqtt_in's network thread drives it
 * from its poll loop. The backoff between connection attempts is here too; mqtt_out's network thread uses it
 * as well.
 *
 * Input is bounded: a packet whose remaining length is over max_packet is never
 * buffered whole. A PUBLISH that big is read past without keeping its payload and handed
 * over as `oversized` (mqtt_in rejects and acknowledges it like any payload over
 * max_payload, so the broker's session moves on); any other packet that big is a
 * protocol error. The input buffer shrinks back once it is empty. */
#ifndef GUST_MQTT_LINK_H
#define GUST_MQTT_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "gust/sock.h"
#include "mqtt.h"
#include "mqtt_wire.h"

/* A connection that stayed up this long was a good one: the backoff starts over. One
 * that goes down sooner (a broker that accepts, then drops or confuses us) counts as a
 * failed attempt, so such a broker is not hammered. */
#define MQTT_LINK_STABLE_MS 10000

struct mqtt_backoff {
    int64_t min_ms, max_ms, next_ms;
};

/* A PUBLISH read past without its payload (see above). */
struct mqtt_oversized {
    struct mqtt_publish pub; /* payload NULL; topic points into `topic` (cut to its size) */
    size_t payload_len;      /* what the payload was */
    char topic[256];
};

struct mqtt_link {
    int version;            /* MQTT_V311 or MQTT_V5, set by the owner before open */
    uint16_t receive_max;   /* 5.0: CONNECT's Receive Maximum (the owner's room) */
    struct gust_sock *sock; /* NULL: down */
    struct mqtt_wbuf out;   /* bytes [off, len) still to write */
    unsigned char *rbuf;
    size_t roff, rlen, rcap; /* bytes [roff, rlen) read and not taken yet */
    size_t max_packet;       /* largest remaining length kept whole */
    int up;                  /* the CONNACK accepted the connection */
    int64_t connack_deadline;
    int64_t up_at, last_send, last_recv;
    int64_t ping_at;    /* when the PINGREQ awaiting its PINGRESP went out, or 0 */
    uint64_t skip_left; /* bytes of an oversized PUBLISH still to read past */
    int skip_ready;     /* `skipped` is complete and not handed over yet */
    struct mqtt_oversized skipped;
    const char *why; /* what mqtt_link_next or mqtt_link_keepalive found wrong */
    int why_rc;      /* and the 5.0 reason code to disconnect with (0: none) */
    /* From a 5.0 CONNACK: */
    int server_keepalive; /* Server Keep Alive, the keepalive to use instead (0: none) */
    int max_qos;          /* Maximum QoS (2 when not given) */
    char reason[128];     /* its Reason String (printable ASCII only), or "" */
};

/* Copies the printable ASCII of s[0..len) into out (at most outsz - 1 bytes), for a
 * broker's text in a log line. */
void mqtt_link_text(const unsigned char *s, size_t len, char *out, size_t outsz);
/* Connects (within conf->timeout_ms), and queues CONNECT (of l->version). The buffers of an earlier
 * connection are reused. -1 with err set when the connection cannot be made. */
int mqtt_link_open(struct mqtt_link *l, const struct mqtt_conf *conf, struct gust_tls *tls, int clean_session,
                   struct gust_err *err);
/* The CONNACK p, read while connecting: 0 when it accepts (the link is up), its return
 * code (3.1.1) or reason code (5.0) when it refuses, -1 when it is malformed or not
 * expected (l->why). A 5.0 CONNECT answered in 3.1.1's form (a broker that does not
 * speak 5.0) gives that form's return code. */
int mqtt_link_connack(struct mqtt_link *l, const struct mqtt_packet *p);
/* Closes the socket (a no-op when down); the buffers stay for the next connection.
 * Returns how long the connection was up (0 when it never was), for the backoff. */
int64_t mqtt_link_close(struct mqtt_link *l);
void mqtt_link_free(struct mqtt_link *l);

/* Writes what it can without waiting. 0, or -1 when the connection failed (err). */
int mqtt_link_flush(struct mqtt_link *l, struct gust_err *err);
/* Reads what is there (at most about max_bytes), without waiting. 0, or -1 when the
 * connection failed or the broker closed it (err). */
int mqtt_link_read(struct mqtt_link *l, size_t max_bytes, struct gust_err *err);
/* The next whole packet read: 1 (its body valid until the next call here or to
 * mqtt_link_read), 0 when there is
 * none yet, or when it is a PUBLISH and take_publish is 0 (it waits), -1 on a protocol
 * error (l->why). PINGRESPs are taken here. *oversized is set for a PUBLISH read past
 * (see above): then p is not filled and the publish is in l->skipped. */
int mqtt_link_next(struct mqtt_link *l, int take_publish, struct mqtt_packet *p, int *oversized);
/* Keepalive and the CONNACK deadline at now: queues a PINGREQ once either direction has
 * been silent for half keepalive_s, and returns -1 (l->why) when a PINGREQ got no
 * PINGRESP within keepalive_s, or no CONNACK came in time. reading: whether the owner
 * reads the socket at all now (mqtt_in stops while its ring is full, and then no
 * PINGRESP can be seen). *next_ms: when to look again. */
int mqtt_link_keepalive(struct mqtt_link *l, int keepalive_s, int64_t now, int reading, int64_t *next_ms);

/* Backoff between connection attempts: starts at min_ms, doubles up to max_ms. */
void mqtt_backoff_init(struct mqtt_backoff *b, int64_t min_ms, int64_t max_ms);
/* An attempt failed, or a connection went down after up_ms (0: it never came up):
 * returns how long to wait before the next attempt. */
int64_t mqtt_backoff_next(struct mqtt_backoff *b, int64_t up_ms);

#endif
