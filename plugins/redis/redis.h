/* redis plugin internals shared by its files. Nothing here is exported from the .so.
 *
 *   redis.c          the descriptor: types redis_in and redis_out
 *   redis_conf.c     the keys both types share: url, user, password_file, db, timeout
 *   redis_conn.c     one connection (hiredis, blocking with timeouts): AUTH, SELECT,
 *                    reconnect backoff, one log line per state change
 *   redis_entry.c    a stream entry -> the message's JSON (field or whole entry, non_json)
 *   redis_in.c       the source: XREADGROUP, publish with Nats-Msg-Id, XACK after PubAck
 *   redis_out.c      the sink: XADD pipelined per batch, acked when Redis answered
 *
 * hiredis 0.14 (Debian 12) has no TLS: rediss:// is refused at config time. */
#ifndef GUST_REDIS_H
#define GUST_REDIS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/plugin.h"
#include "gust/sdk.h"

extern const struct gust_host_api *redis_host;

/* The keys both types share, as written; each type's keys struct holds them as member
 * `common`, and REDIS_COMMON_KEYS(struct type_keys) binds them there. */
struct redis_keys {
    const char *url;
    const char *user;
    const char *password_file;
    int64_t db;
    int64_t timeout;
    const char *field;
};

/* clang-format off */
#define REDIS_KEY(S, f, T, def, flags, help) GUST_KEY_AS(S, common.f, #f, T, def, flags, help)
#define REDIS_KEY_RANGE(S, f, T, def, lo, hi, help) \
    {#f, GUST_T_##T, def, GUST_K_BOUND | GUST_K_RANGE, help, GUST__AT(S, common.f, T), lo, hi, NULL}
#define REDIS_COMMON_KEYS(S)                                                                               \
    GUST_KEY_URL_AS(S, common.url, "url", NULL, GUST_K_REQUIRED, "redis|rediss",                           \
                    "redis://[user@]host[:port][/db] (no rediss://: hiredis 0.14 has no TLS)"),            \
    REDIS_KEY(S, user, STR, NULL, 0, "ACL user name (Redis 6+): AUTH user password"),                      \
    REDIS_KEY(S, password_file, PATH, NULL, GUST_K_SECRET, "file whose first line is the password"),       \
    REDIS_KEY_RANGE(S, db, INT, "0", 0, 1000000, "database number (SELECT); 0: the URL's /N, else 0"),     \
    REDIS_KEY_RANGE(S, timeout, DURATION, "5s", 100, 60000, "connect and command timeout"),                \
    REDIS_KEY(S, field, STR, "data", 0,                                                                    \
              "the entry field that holds the message (redis_in: an entry without it is taken whole)")
/* clang-format on */

/* What both types make of those keys. */
struct redis_conf {
    char host[256];
    int port;
    int db;
    const char *user; /* borrowed, or owned (from the URL) when owns_user */
    int owns_user;
    const char *password_file; /* borrowed; read at each connect */
    int64_t timeout_ms;
    char shown[300]; /* host:port/db, for logs */
};

int redis_conf_load(struct redis_conf *c, const struct redis_keys *k, const struct gust_cfg *cfg,
                    struct gust_err *err);
void redis_conf_free(struct redis_conf *c);

/* One connection, used by one thread. */
struct redis_conn {
    struct gust_instance *inst;
    const struct redis_conf *conf;
    void *ctx;          /* redisContext *, NULL when down */
    int64_t retry_at;   /* monotonic ms: no attempt before it */
    int64_t backoff_ms; /* next wait: 100 ms doubling to 10 s */
    int64_t up_since;
    int was_up; /* ever connected (for the log line's wording) */
    char last_error[200];
    atomic_int connected;
    atomic_uint_fast64_t connects, errors;
};

void redis_conn_init(struct redis_conn *c, struct gust_instance *inst, const struct redis_conf *conf);
/* 0 when connected (connecting now if the backoff allows); GUST_EAGAIN while the backoff
 * runs or when the attempt failed (why filled). */
int redis_conn_ensure(struct redis_conn *c, char *why, size_t whysz);
/* Drops the connection after an I/O or protocol error; logs when the state changes. */
void redis_conn_drop(struct redis_conn *c, const char *why);
/* ms until the next attempt may be made (0: now). */
int64_t redis_conn_wait_ms(const struct redis_conn *c);
void redis_conn_close(struct redis_conn *c);
/* 1 when a Redis error reply is worth retrying (the server is loading, busy, read-only,
 * out of memory, not authenticated yet...), 0 when the command is refused for good. */
int redis_error_transient(const char *msg);

/* The non-JSON policy of redis_in (as mqtt_in's). */
enum { REDIS_NJ_REJECT, REDIS_NJ_WRAP, REDIS_NJ_PASS };

/* An entry's fields: names[i] and values[i] with their lengths. */
struct redis_entry {
    const char *id;
    size_t nfields;
    const char **names, **values;
    const size_t *name_lens, *value_lens;
};

/* The message for entry e into out (cleared first): the field `field` when the entry has
 * it, else every field as a JSON object of strings. 0, or 1 when the message is not one
 * JSON object and the policy rejects it, or GUST_ENOMEM. */
int redis_entry_json(const struct redis_entry *e, const char *field, const char *stream, int non_json,
                     struct gust_buf *out);

extern const struct gust_schema_key redis_in_schema[];
int redis_in_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err);
int redis_in_start(void *ctx, struct gust_err *err);
void redis_in_stop(void *ctx);
size_t redis_in_counters(void *ctx, struct gust_plugin_counter *c, size_t max);
void redis_in_destroy(void *ctx);

extern const struct gust_schema_key redis_out_schema[];
int redis_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                     struct gust_err *err);
int redis_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results);
void redis_out_stop(void *ctx);
size_t redis_out_counters(void *ctx, struct gust_plugin_counter *c, size_t max);
void redis_out_destroy(void *ctx);

#endif
