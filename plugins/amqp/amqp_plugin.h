/* amqp plugin internals shared by its files (not named amqp.h: that is rabbitmq-c's).
 * Nothing here is exported from the .so.
 *
 *   amqp.c         the descriptor: types amqp_in and amqp_out
 *   amqp_conf.c    the keys both types share: url, password_file, tls_ca, timeout
 *   amqp_conn.c    one connection and channel (rabbitmq-c, blocking with timeouts):
 *                  login, reconnect backoff, one log line per state change
 *   amqp_props.c   AMQP properties and headers <-> NATS headers
 *   amqp_in.c      the source: basic.consume, publish with Nats-Msg-Id, basic.ack after PubAck
 *   amqp_out.c     the sink: basic.publish mandatory and persistent, publisher confirms
 *
 * rabbitmq-c connections are not thread-safe: each connection is used by one thread
 * only (the source's own thread, or the sink unit's thread in deliver()). */
#ifndef GUST_AMQP_H
#define GUST_AMQP_H

#include <sys/time.h>

#include <amqp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/plugin.h"
#include "gust/sdk.h"

extern const struct gust_host_api *amqp_host;
/* Set once a TLS socket was made: fini then frees rabbitmq-c's OpenSSL state. */
extern atomic_int amqp_tls_used;

/* The keys both types share, as written; each type's keys struct holds them as member
 * `common`, and AMQP_COMMON_KEYS(struct type_keys) binds them there. */
struct amqp_keys {
    const char *url;
    const char *password_file;
    const char *tls_ca;
    int64_t timeout;
    int64_t heartbeat; /* amqp_in only: the sink idles between batches, and rabbitmq-c
                          answers heartbeats only while it reads */
};

/* clang-format off */
#define AMQP_KEY(S, f, T, def, flags, help) GUST_KEY_AS(S, common.f, #f, T, def, flags, help)
#define AMQP_KEY_RANGE(S, f, T, def, flags, lo, hi, help) \
    {#f, GUST_T_##T, def, (flags) | GUST_K_BOUND | GUST_K_RANGE, help, GUST__AT(S, common.f, T), lo, hi, NULL}
#define AMQP_COMMON_KEYS(S)                                                                                \
    GUST_KEY_URL_AS(S, common.url, "url", NULL, GUST_K_REQUIRED | GUST_K_SECRET, "amqp|amqps",            \
                    "amqp[s]://[user[:password]@]host[:port][/vhost] (vhost \"/\" is %2f)"),              \
    AMQP_KEY(S, password_file, PATH, NULL, GUST_K_SECRET,                                                 \
             "file whose first line is the password (instead of the URL's)"),                              \
    AMQP_KEY(S, tls_ca, PATH, NULL, 0, "amqps://: the CA file that signed the broker's certificate"),     \
    AMQP_KEY_RANGE(S, timeout, DURATION, "10s", 0, 100, 600000,                                           \
                   "connect, login and (amqp_out) publisher confirm timeout")
/* clang-format on */

/* What both types make of those keys. */
struct amqp_conf {
    char *url_copy; /* amqp_parse_url's buffer: the strings below point into it */
    const char *host, *user, *url_password, *vhost;
    int port;
    int tls;
    const char *password_file; /* borrowed; read at each connect */
    const char *tls_ca;        /* borrowed */
    int64_t timeout_ms;
    int heartbeat_s;
    char shown[300]; /* amqp[s]://host:port/vhost, no credentials: for logs */
};

int amqp_conf_load(struct amqp_conf *c, const struct amqp_keys *k, const struct gust_cfg *cfg,
                   struct gust_err *err);
void amqp_conf_free(struct amqp_conf *c);

/* One connection with channel 1 open, used by one thread. */
struct amqp_link {
    struct gust_instance *inst;
    const struct amqp_conf *conf;
    amqp_connection_state_t conn; /* NULL when down */
    int64_t retry_at;             /* monotonic ms: no attempt before it */
    int64_t backoff_ms;           /* next wait: 100 ms doubling to 10 s */
    int64_t up_since;
    int was_up;
    int quiet; /* reset over one refused message: the next ready is no news */
    char last_error[300];
    atomic_int connected;
    atomic_uint_fast64_t connects, errors;
};

void amqp_link_init(struct amqp_link *l, struct gust_instance *inst, const struct amqp_conf *conf);
/* 0 when connected with channel 1 open (connecting now if the backoff allows);
 * GUST_EAGAIN while the backoff runs or when the attempt failed (why filled). */
int amqp_link_ensure(struct amqp_link *l, char *why, size_t whysz);
/* The type's own setup (consumer, confirm mode) is done: the link counts as up, and
 * says so in the log. Until then a failure repeats the last reason silently. */
void amqp_link_ready(struct amqp_link *l);
/* After connecting, the type's own setup failed (why says how): closes and backs off,
 * logging when the reason changes. */
void amqp_link_drop(struct amqp_link *l, const char *why);
/* Closes at once without backing off: the next ensure connects again (after a channel
 * the broker closed over one message, not over the link). */
void amqp_link_reset(struct amqp_link *l);
/* Closes cleanly (unacked deliveries go back to the queue). */
void amqp_link_close(struct amqp_link *l);
/* ms until the next attempt may be made (0: now). */
int64_t amqp_link_wait_ms(const struct amqp_link *l);
/* What an RPC reply says, one line: the broker's close text, or the library's error.
 * Returns 1 when the reply is a success. */
int amqp_reply_text(amqp_rpc_reply_t r, const char *what, char *out, size_t outsz);
/* A close method the broker sent (channel.close or connection.close) as one line:
 * returns 1, or 0 when m is no such method. */
int amqp_close_text(amqp_connection_state_t conn, const amqp_method_t *m, char *out, size_t outsz);

/* The non-JSON policy of amqp_in (as mqtt_in's). */
enum { AMQP_NJ_REJECT, AMQP_NJ_WRAP, AMQP_NJ_PASS };

/* NATS headers for a delivery: its exchange and routing key, its properties and its
 * headers table. names and values point into buf (owned by the caller, reset here) or
 * the message; at most max. */
#define AMQP_MAX_HEADERS 48
struct amqp_hdrs {
    struct gust_header h[AMQP_MAX_HEADERS];
    size_t n;
    struct gust_buf text; /* storage for names and values made here */
};
int amqp_props_to_headers(const amqp_envelope_t *env, struct amqp_hdrs *out);
void amqp_hdrs_free(struct amqp_hdrs *h);

/* AMQP properties for an outgoing message from its NATS headers: message_id from
 * Nats-Msg-Id (else fallback_id), content_type (default application/json), the mapped
 * properties and the other headers as a headers table. Entries point into msg's
 * headers; fields must hold AMQP_MAX_HEADERS entries. */
void amqp_headers_to_props(const struct gust_msg *msg, const char *fallback_id, amqp_basic_properties_t *p,
                           amqp_table_entry_t *fields);

extern const struct gust_schema_key amqp_in_schema[];
int amqp_in_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err);
int amqp_in_start(void *ctx, struct gust_err *err);
void amqp_in_stop(void *ctx);
size_t amqp_in_counters(void *ctx, struct gust_plugin_counter *c, size_t max);
void amqp_in_destroy(void *ctx);

extern const struct gust_schema_key amqp_out_schema[];
int amqp_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err);
int amqp_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results);
void amqp_out_stop(void *ctx);
size_t amqp_out_counters(void *ctx, struct gust_plugin_counter *c, size_t max);
void amqp_out_destroy(void *ctx);

#endif
