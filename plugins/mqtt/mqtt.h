/* mqtt plugin internals shared by its files. Nothing here is exported from the .so.
 *
 *   mqtt.c          the descriptor: types mqtt_in and mqtt_out, init/fini
 *   mqtt_conf.c     keys both types share (broker, credentials, TLS)
 *   mqtt_subject.c  MQTT topic <-> NATS subject mapping
 *   mqtt_payload.c  the non-JSON policy: JSON object check, base64 wrap
 *   mqtt_wire.c     MQTT 3.1.1 and 5.0 packets for mqtt_in's own client
 *   mqtt_props.c    MQTT 5.0 user properties -> the event's headers (trace context)
 *   mqtt_link.c     mqtt_in's client connection: socket (gust/sock.h), buffers,
 *                   CONNECT/CONNACK, keepalive; the reconnect backoff (both types)
 *   mqtt_in.c       the source: network thread, PUBACK ring (mqtt_in_ring.c) on the SDK's
 *                   publisher; mqtt_in_conn.c its session (SUBSCRIBE, PUBLISH, QoS 2 acks)
 *   mqtt_out.c      the sink, on libmosquitto: a batch published from the unit's thread;
 *                   mqtt_out_net.c its client and the network thread that drives
 *                   libmosquitto's loop and reconnects
 */
#ifndef GUST_MQTT_H
#define GUST_MQTT_H

#include <stddef.h>
#include <stdint.h>

#include "gust/plugin.h"
#include "gust/sdk.h"

extern const struct gust_host_api *mqtt_host;

/* The keys both types share, as written; each type's keys struct holds them as its
 * member `common`, and MQTT_COMMON_KEYS(struct type_keys) binds them there. */
struct mqtt_keys {
    const char *broker;
    int64_t qos;
    const char *client_id;
    const char *username;
    const char *password;
    const char *password_file;
    const char *tls_ca, *tls_cert, *tls_key;
    int64_t keepalive;
    int64_t timeout;
};

#define MQTT_KEY(S, f, T, def, flags, help) GUST_KEY_AS(S, common.f, #f, T, def, flags, help)
#define MQTT_KEY_RANGE(S, f, T, def, flags, lo, hi, help) \
    {#f, GUST_T_##T, def, (flags) | GUST_K_BOUND | GUST_K_RANGE, help, GUST__AT(S, common.f, T), lo, hi, NULL}
/* The schema entries both types share; expand inside a schema table of S. */
#define MQTT_COMMON_KEYS(S)                                                                         \
    MQTT_KEY(S, broker, ADDR, NULL, GUST_K_REQUIRED, "MQTT broker host:port"),                      \
    MQTT_KEY_RANGE(S, qos, INT, "1", 0, 0, 1,                                                       \
                   "0 (at most once) or 1 (at least once, acked end to end); QoS 2 is not supported"), \
    MQTT_KEY(S, client_id, STR, NULL, 0, "MQTT client id (default: gust-<unit>)"),                  \
    MQTT_KEY(S, username, STR, NULL, 0, "MQTT user name"),                                          \
    MQTT_KEY(S, password, STR, NULL, GUST_K_SECRET, "MQTT password (use ${ENV}); never logged"),    \
    MQTT_KEY(S, password_file, PATH, NULL, GUST_K_SECRET, "file whose first line is the password"), \
    MQTT_KEY(S, tls_ca, PATH, NULL, 0, "CA certificate file: connect with TLS"),                    \
    MQTT_KEY(S, tls_cert, PATH, NULL, 0, "client certificate (with tls_key)"),                      \
    MQTT_KEY(S, tls_key, PATH, NULL, GUST_K_SECRET, "client private key"),                          \
    MQTT_KEY_RANGE(S, keepalive, DURATION, "30s", 0, 1000, 65535000, "MQTT keepalive (mqtt_out: at least 5s)"), \
    MQTT_KEY_RANGE(S, timeout, DURATION, "5s", 0, 10, INT64_MAX,                                    \
                   "connect timeout; mqtt_out: also the longest a batch waits for the connection and its PUBACKs")

/* What both types make of those keys. Strings are borrowed from the cfg (which outlives
 * the instance) except password, which is owned (read from password_file). */
struct mqtt_conf {
    char host[256];
    int port;
    const char *client_id;
    const char *username;
    char *password;            /* owned, NULL when none; never logged */
    const char *password_file; /* read at start */
    const char *tls_ca, *tls_cert, *tls_key;
    int tls;            /* any of the three set */
    int keepalive_s;    /* seconds */
    int qos;            /* 0 or 1 */
    int64_t timeout_ms; /* connect (and, for mqtt_out, PUBACK) limit */
};

/* Checks the bound common keys k (borrowed from the cfg) into conf; cfg only names
 * file:line in errors. Default client id "gust-<unit name>". No I/O. */
int mqtt_conf_load(struct mqtt_conf *conf, const struct mqtt_keys *k, const struct gust_cfg *cfg,
                   const char *unit, char *client_id_buf, size_t bufsz, struct gust_err *err);
/* Reads password_file when set (at start: create does no I/O). */
int mqtt_conf_read_password(struct mqtt_conf *conf, const struct gust_cfg *cfg, struct gust_err *err);
void mqtt_conf_free(struct mqtt_conf *conf);

/* Topic <-> subject (see mqtt_subject.c for the mapping). Both return the length
 * written (NUL excluded) or -1 when out does not have room. */
int mqtt_topic_to_subject(const char *prefix, const char *topic, size_t topic_len, char *out, size_t outsz);
int mqtt_subject_to_topic(const char *strip, const char *subject, char *out, size_t outsz);

/* 1 when data is exactly one JSON object (surrounding white space allowed). */
int mqtt_is_json_object(const void *data, size_t len);
/* {"payload_base64":"...","topic":"..."}: malloc'd, length in *outlen; NULL on ENOMEM. */
char *mqtt_wrap_payload(const char *topic, size_t topic_len, const void *data, size_t len, size_t *outlen);

/* A header kept from an MQTT 5.0 PUBLISH's user properties, borrowed from the packet
 * (name and value not NUL-terminated). */
struct mqtt_kept {
    const char *name;
    size_t nlen;
    const char *value;
    size_t vlen;
};
/* The user properties of props (a PUBLISH's properties, checked by
 * mqtt_wire_publish_parse) that become headers: traceparent and tracestate, and those
 * named in keep (see mqtt_props.c). Writes at most max into out; returns how many. */
size_t mqtt_props_headers(const unsigned char *props, size_t len, const char *const *keep, size_t nkeep,
                          struct mqtt_kept *out, size_t max);

/* The two types; mqtt.c puts them in the descriptor. */
extern const struct gust_schema_key mqtt_in_schema[];
int mqtt_in_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err);
int mqtt_in_start(void *ctx, struct gust_err *err);
void mqtt_in_stop(void *ctx);
void mqtt_in_destroy(void *ctx);

extern const struct gust_schema_key mqtt_out_schema[];
int mqtt_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err);
int mqtt_out_start(void *ctx, struct gust_err *err);
int mqtt_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results);
void mqtt_out_stop(void *ctx);
void mqtt_out_destroy(void *ctx);

#endif
