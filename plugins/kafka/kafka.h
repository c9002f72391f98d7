/* kafka plugin internals shared by its files. Nothing here is exported from the .so.
 *
 *   kafka.c          the descriptor: types kafka_in and kafka_out
 *   kafka_conf.c     the keys both types share (brokers, SASL, TLS, rdkafka pass-through)
 *                    -> one rd_kafka_conf_t, checked at create (gust -t) with file:line
 *   kafka_link.c     connection state from librdkafka's callbacks: one log line per change
 *   kafka_track.c    kafka_in's offsets: per partition, the contiguous prefix stored in
 *                    JetStream, which is all that may be committed
 *   kafka_payload.c  a Kafka message -> the event's JSON (non_json) and NATS headers
 *   kafka_in.c       the source: consumer group, publish with Nats-Msg-Id, commit after
 *   kafka_out.c      the sink: idempotent producer, acked on the delivery report
 *
 * librdkafka (Debian 12: librdkafka-dev 2.0) brings its own threads; every callback we
 * register is served from rd_kafka_*poll on the thread that owns the handle. */
#ifndef GUST_KAFKA_H
#define GUST_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/plugin.h"
#include "gust/sdk.h"

extern const struct gust_host_api *kafka_host;

/* The keys both types share, as written; each type's keys struct holds them as member
 * `common`, and KAFKA_COMMON_KEYS(struct type_keys) binds them there. */
struct kafka_keys {
    struct gust_list brokers;
    const char *sasl_mechanism;
    const char *sasl_username;
    const char *sasl_password_file;
    const char *tls_ca;
    struct gust_list rdkafka;
};

/* clang-format off */
#define KAFKA_KEY(S, f, T, def, flags, help) GUST_KEY_AS(S, common.f, #f, T, def, flags, help)
#define KAFKA_COMMON_KEYS(S)                                                                               \
    KAFKA_KEY(S, brokers, LIST, NULL, GUST_K_REQUIRED, "bootstrap brokers, host:port each"),               \
    {"sasl_mechanism", GUST_T_STR, NULL, GUST_K_BOUND, "SASL mechanism (default PLAIN when sasl_username is set)", \
     GUST__AT(S, common.sasl_mechanism, STR), 0, 0, "PLAIN|SCRAM-SHA-256|SCRAM-SHA-512"},                  \
    KAFKA_KEY(S, sasl_username, STR, NULL, 0, "SASL user name (needs sasl_password_file)"),                \
    KAFKA_KEY(S, sasl_password_file, PATH, NULL, GUST_K_SECRET, "file whose first line is the SASL password"), \
    KAFKA_KEY(S, tls_ca, PATH, NULL, 0, "CA file: connect with TLS and check the brokers against it"),     \
    KAFKA_KEY(S, rdkafka, LIST, NULL, GUST_K_PREFIX,                                                      \
              "librdkafka's own properties, one a line: `rdkafka.linger.ms 20;`")
/* clang-format on */

/* Builds the librdkafka configuration of k: bootstrap.servers, security, then the
 * rdkafka pairs, refusing the properties in `owned` (NULL-terminated: the ones the type
 * sets itself because the guarantee depends on them). defaults are (name, value) pairs
 * set before the user's pairs (a user's pair overrides them). No I/O but reading the
 * password file. On failure err names file:line. */
int kafka_conf_build(const struct kafka_keys *k, const struct gust_cfg *cfg, const char *const *defaults,
                     const char *const *owned, rd_kafka_conf_t **out, char *shown, size_t shownsz,
                     struct gust_err *err);
/* Sets name=value on c; on failure err says why (for the type's own settings). */
int kafka_conf_set(rd_kafka_conf_t *c, const char *name, const char *value, struct gust_err *err);

/* Connection state, fed by librdkafka's error callback and by proof of life (a message,
 * an assignment, a delivery report). */
struct kafka_link {
    struct gust_instance *inst;
    const char *shown; /* the broker list, for logs */
    pthread_mutex_t mu;
    int was_up;
    char last_error[256];
    atomic_int connected;
    atomic_int troubled; /* an error is shown in /units (set_error) */
    atomic_uint_fast64_t errors;
};

void kafka_link_init(struct kafka_link *l, struct gust_instance *inst, const char *shown);
void kafka_link_destroy(struct kafka_link *l);
/* Proof of life: logs "connected" the first time and "reconnected" after a failure. */
void kafka_link_up(struct kafka_link *l);
/* A failure: counted; logged when the reason differs from the last one logged. down
 * marks the link down (all brokers unreachable, authentication refused). */
void kafka_link_error(struct kafka_link *l, int down, const char *why);
/* rd_kafka_conf_set_error_cb's callback; opaque must be the struct kafka_link (each
 * type's context starts with it, see kafka_in.c and kafka_out.c). */
void kafka_link_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque);
/* rd_kafka_conf_set_log_cb's callback: librdkafka's log lines at the debug level. */
void kafka_link_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

/* kafka_in's offsets. A message is tracked from before its publish until its outcome is
 * known; done callbacks (host threads) only set its state, everything else happens on
 * the consumer thread. */
enum { KAFKA_PENDING = 0, KAFKA_STORED = 1, KAFKA_FAILED = 2 };

struct kafka_tracked {
    int64_t offset;
    atomic_int state;
    struct kafka_tracked *next;
};

struct kafka_part {
    char *topic;
    int32_t partition;
    struct kafka_tracked *head, *tail;
    int64_t commit_next; /* the offset to commit (the next to read), -1: nothing stored yet */
    int64_t committed;   /* what was last committed, -1: nothing */
    struct kafka_part *next;
};

struct kafka_track {
    struct kafka_part *parts;
};

/* The partition, made when missing; NULL when out of memory. */
struct kafka_part *kafka_track_part(struct kafka_track *t, const char *topic, int32_t partition);
/* Appends offset to p; NULL when out of memory. */
struct kafka_tracked *kafka_track_add(struct kafka_part *p, int64_t offset);
/* Pops p's stored head entries, advancing commit_next. Returns 1 when the head is then a
 * failed entry (the partition must be read again from its offset), else 0. */
int kafka_track_advance(struct kafka_part *p);
/* The partitions whose commit_next moved past committed, as a list to commit (NULL when
 * none); marks them committed. */
rd_kafka_topic_partition_list_t *kafka_track_to_commit(struct kafka_track *t);
/* Frees p's entries (all must have an outcome). */
void kafka_track_clear(struct kafka_part *p);
/* Removes and frees the partition. */
void kafka_track_remove(struct kafka_track *t, struct kafka_part *p);
void kafka_track_free(struct kafka_track *t);

/* The non-JSON policy of kafka_in (as mqtt_in's). */
enum { KAFKA_NJ_REJECT, KAFKA_NJ_WRAP, KAFKA_NJ_PASS };

/* The event for m into out (cleared first). 0, 1 when m's value is not one JSON object
 * and the policy rejects it, or GUST_ENOMEM. */
int kafka_payload_json(const rd_kafka_message_t *m, int non_json, struct gust_buf *out);

/* Up to KAFKA_HEADERS_MAX NATS headers for m: Kafka-Topic, Kafka-Partition,
 * Kafka-Offset, Kafka-Key (a key of printable UTF-8), then m's own Kafka headers hdrs
 * (rd_kafka_message_headers; may be NULL) that NATS can carry (a name of visible ASCII
 * without ':', a value of UTF-8 without CR, LF or NUL). The strings live in store
 * (cleared first). Returns how many; *skipped counts Kafka headers left out. */
#define KAFKA_HEADERS_MAX 32
size_t kafka_payload_headers(const rd_kafka_message_t *m, const rd_kafka_headers_t *hdrs, struct gust_buf *store,
                             struct gust_header *out, size_t *skipped);

/* Same rule for one name and value: 1 when NATS can carry them. */
int kafka_header_ok(const char *name, const void *value, size_t len);

extern const struct gust_schema_key kafka_in_schema[];
int kafka_in_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err);
int kafka_in_start(void *ctx, struct gust_err *err);
void kafka_in_stop(void *ctx);
size_t kafka_in_counters(void *ctx, struct gust_plugin_counter *c, size_t max);
void kafka_in_destroy(void *ctx);

extern const struct gust_schema_key kafka_out_schema[];
int kafka_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                     struct gust_err *err);
int kafka_out_start(void *ctx, struct gust_err *err);
int kafka_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results);
void kafka_out_stop(void *ctx);
size_t kafka_out_counters(void *ctx, struct gust_plugin_counter *c, size_t max);
void kafka_out_destroy(void *ctx);

#endif
