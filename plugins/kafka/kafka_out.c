/* kafka_out: the bus -> a Kafka topic, each message acked only on its delivery report.
 *
 *   sink kout { use kafka_out; source ev.kafka; brokers 127.0.0.1:9092; topic out; key "{payload.id}"; }
 *
 * An idempotent producer (enable.idempotence, acks=all): librdkafka's own retries never
 * write a message twice. A batch is produced at once, then rd_kafka_poll serves the
 * delivery reports until every message has one (message.timeout.ms is `timeout`, so
 * that ends). Broker down, a timeout, a leader moving: RETRY, the bus keeps the message
 * and redelivers it, never dead-lettered. A message the broker (or librdkafka on its
 * behalf) refuses for good, too large or a topic that does not exist: REJECTED with the
 * error, dead-lettered after max_deliver. A delivery report lost with gust (kill -9
 * after the broker stored it) means the message is written again (at least once).
 *
 * `topic` and `key` are templates ({subject}, {payload.a.b}: libgust-sdk's). The
 * message's NATS headers (its Nats-Msg-Id among them) become Kafka headers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"

struct kafka_out_keys {
    struct kafka_keys common;
    const char *topic, *key;
    int64_t timeout;
};

const struct gust_schema_key kafka_out_schema[] = {
    KAFKA_COMMON_KEYS(struct kafka_out_keys),
    GUST_KEY(struct kafka_out_keys, topic, STR, NULL, GUST_K_REQUIRED,
             "the topic to write (a template: \"t_{payload.site}\")"),
    GUST_KEY(struct kafka_out_keys, key, STR, NULL, 0,
             "the message key (a template: \"{payload.id}\"); none: librdkafka spreads the messages"),
    GUST_KEY_RANGE(struct kafka_out_keys, timeout, DURATION, "3s", 0, 500, 60000,
                   "how long a message may wait for the broker before it is retried (message.timeout.ms); "
                   "keep it under nats { ack_wait }"),
    GUST_KEY_END,
};

static const char *const owned[] = {"bootstrap.servers", "enable.idempotence", "acks", "message.timeout.ms",
                                    "delivery.timeout.ms", NULL};

struct kafka_out {
    struct kafka_link link; /* first: librdkafka's opaque */
    struct gust_instance *inst;
    struct kafka_out_keys k;
    rd_kafka_conf_t *conf; /* the master copy: each producer gets a duplicate */
    rd_kafka_t *rk;
    struct gust_tpl *topic, *key;
    char shown[512];

    /* The batch in deliver (on the unit's thread). Delivery reports of an earlier batch
     * (only after a hard timeout) carry an older generation and are ignored. */
    struct gust_result *results;
    uint64_t gen;
    size_t waiting;
    atomic_uint_fast64_t written, refused, retried, recreated;
};

#define SLOT_BITS 24

int kafka_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    const struct gust_host_api *h = kafka_host;
    struct kafka_out *o = calloc(1, sizeof(*o));
    char why[256];
    char ms[32];
    int rc;

    if (!o) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    o->inst = inst;
    kafka_link_init(&o->link, inst, o->shown);
    if ((rc = gust_sdk_bind(h, cfg, kafka_out_schema, &o->k, err)) != 0) {
        kafka_out_destroy(o);
        return rc;
    }
    if (gust_tpl_compile(o->k.topic, &o->topic, why, sizeof(why)) != 0) {
        kafka_out_destroy(o);
        return gust_err_set(err, GUST_ECONFIG, "%s: topic: %s", h->cfg_where(cfg, "topic"), why);
    }
    if (o->k.key && gust_tpl_compile(o->k.key, &o->key, why, sizeof(why)) != 0) {
        kafka_out_destroy(o);
        return gust_err_set(err, GUST_ECONFIG, "%s: key: %s", h->cfg_where(cfg, "key"), why);
    }
    const char *defaults[] = {"linger.ms", "5", NULL};
    if ((rc = kafka_conf_build(&o->k.common, cfg, defaults, owned, &o->conf, o->shown, sizeof(o->shown), err)) !=
        0) {
        kafka_out_destroy(o);
        return rc;
    }
    snprintf(ms, sizeof(ms), "%" PRId64, o->k.timeout);
    if ((rc = kafka_conf_set(o->conf, "enable.idempotence", "true", err)) != 0 ||
        (rc = kafka_conf_set(o->conf, "acks", "all", err)) != 0 ||
        (rc = kafka_conf_set(o->conf, "message.timeout.ms", ms, err)) != 0) {
        kafka_out_destroy(o);
        return rc;
    }
    *ctx = o;
    return 0;
}

/* Errors that say "not now": the broker is away, busy or electing a leader. */
static int retriable(rd_kafka_resp_err_t e)
{
    switch (e) {
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__PURGE_QUEUE:
    case RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
    case RD_KAFKA_RESP_ERR__FATAL:
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
    case RD_KAFKA_RESP_ERR__STATE:
    case RD_KAFKA_RESP_ERR__RETRY:
    case RD_KAFKA_RESP_ERR__INCONSISTENT:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR__SSL:
    case RD_KAFKA_RESP_ERR__DESTROY:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
    case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER:
    case RD_KAFKA_RESP_ERR_UNKNOWN_PRODUCER_ID:
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
    case RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED:
    case RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
        return 1;
    default:
        return 0;
    }
}

static void set_result(struct kafka_out *o, struct gust_result *r, rd_kafka_resp_err_t e, const char *topic)
{
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        r->status = GUST_DELIVERED;
        atomic_fetch_add(&o->written, 1);
        return;
    }
    r->status = retriable(e) ? GUST_RETRY : GUST_REJECTED;
    snprintf(r->error, sizeof(r->error), "kafka %.60s: %.120s (%s)", topic, rd_kafka_err2str(e), rd_kafka_err2name(e));
    atomic_fetch_add(r->status == GUST_RETRY ? &o->retried : &o->refused, 1);
}

/* Served by rd_kafka_poll on the unit's thread. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct kafka_out *o = opaque;
    uintptr_t tag = (uintptr_t)m->_private;
    (void)rk;
    if ((tag >> SLOT_BITS) != (o->gen & ((UINTPTR_MAX >> SLOT_BITS))) || !o->results) {
        return; /* a report of a batch that gave up waiting */
    }
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        kafka_link_up(&o->link);
    }
    set_result(o, &o->results[tag & ((1u << SLOT_BITS) - 1)], m->err, rd_kafka_topic_name(m->rkt));
    o->waiting--;
}

static int make_producer(struct kafka_out *o, char *why, size_t whysz)
{
    rd_kafka_conf_t *c = rd_kafka_conf_dup(o->conf);
    if (!c) {
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    rd_kafka_conf_set_opaque(c, o);
    rd_kafka_conf_set_error_cb(c, kafka_link_error_cb);
    rd_kafka_conf_set_log_cb(c, kafka_link_log_cb);
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
    o->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, why, whysz);
    if (!o->rk) {
        rd_kafka_conf_destroy(c);
        return -1;
    }
    return 0;
}

int kafka_out_start(void *ctx, struct gust_err *err)
{
    struct kafka_out *o = ctx;
    char why[512];
    if (make_producer(o, why, sizeof(why)) != 0) {
        return gust_err_set(err, GUST_EINVAL, "librdkafka: %s", why);
    }
    kafka_host->log(o->inst, GUST_LOG_INFO, "writing to topic %s of kafka %s (idempotent, acks=all)", o->k.topic,
                    o->shown);
    return 0;
}

static void retry_rest(struct kafka_out *o, struct gust_result *results, size_t from, size_t n, const char *why)
{
    for (size_t i = from; i < n; i++) {
        results[i].status = GUST_RETRY;
        snprintf(results[i].error, sizeof(results[i].error), "kafka: %.190s", why);
    }
    atomic_fetch_add(&o->retried, n - from);
}

/* Produces message i; 0 when librdkafka took it (a report will come), else the result
 * is set. */
static int produce(struct kafka_out *o, const struct gust_msg *m, size_t i, struct gust_result *r)
{
    char topic[256], key[1024], why[200];
    if (gust_tpl_render(o->topic, m, NULL, NULL, topic, sizeof(topic), why, sizeof(why)) != 0) {
        r->status = GUST_REJECTED;
        snprintf(r->error, sizeof(r->error), "kafka_out topic: %.180s", why);
        atomic_fetch_add(&o->refused, 1);
        return -1;
    }
    if (o->key && gust_tpl_render(o->key, m, NULL, NULL, key, sizeof(key), why, sizeof(why)) != 0) {
        r->status = GUST_REJECTED;
        snprintf(r->error, sizeof(r->error), "kafka_out key: %.180s", why);
        atomic_fetch_add(&o->refused, 1);
        return -1;
    }
    rd_kafka_headers_t *h = rd_kafka_headers_new(m->nheaders ? m->nheaders : 1);
    for (size_t j = 0; j < m->nheaders; j++) {
        rd_kafka_header_add(h, m->headers[j].name, -1, m->headers[j].value, -1);
    }
    uintptr_t tag = ((uintptr_t)o->gen << SLOT_BITS) | (uintptr_t)i;
    int64_t deadline = gust_clock_mono_ms() + o->k.timeout;
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            o->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_VALUE((void *)m->data, m->len), RD_KAFKA_V_KEY(o->key ? key : NULL, o->key ? strlen(key) : 0),
            RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_OPAQUE((void *)tag), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            return 0; /* the headers belong to librdkafka now */
        }
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL && gust_clock_mono_ms() < deadline) {
            rd_kafka_poll(o->rk, 10);
            continue;
        }
        rd_kafka_headers_destroy(h);
        set_result(o, r, e, topic);
        return -1;
    }
}

int kafka_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    struct kafka_out *o = ctx;
    char why[512];

    if (!o->rk) {
        if (make_producer(o, why, sizeof(why)) != 0) {
            retry_rest(o, results, 0, n, why);
            return 0;
        }
        atomic_fetch_add(&o->recreated, 1);
    }
    o->gen++;
    o->results = results;
    o->waiting = 0;
    for (size_t i = 0; i < n && i < (1u << SLOT_BITS); i++) {
        results[i].status = GUST_RETRY;
        if (produce(o, &msgs[i], i, &results[i]) == 0) {
            o->waiting++;
        }
    }
    /* Every report comes within message.timeout.ms; the extra 5 s only guards against a
     * report that never comes (its message is then retried). */
    int64_t give_up = gust_clock_mono_ms() + o->k.timeout + 5000;
    while (o->waiting > 0 && gust_clock_mono_ms() < give_up) {
        rd_kafka_poll(o->rk, 50);
    }
    if (o->waiting > 0) {
        kafka_link_error(&o->link, 0, "delivery reports overdue: the batch is retried");
    }
    o->results = NULL;
    o->gen++; /* late reports of this batch are ignored */
    if (rd_kafka_fatal_error(o->rk, why, sizeof(why)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        /* The idempotent producer cannot go on (its sequence is lost): a new one. */
        kafka_host->log(o->inst, GUST_LOG_WARN, "producer failed for good (%s): making a new one", why);
        rd_kafka_destroy(o->rk);
        o->rk = NULL;
    }
    return 0;
}

size_t kafka_out_counters(void *ctx, struct gust_plugin_counter *c, size_t max)
{
    struct kafka_out *o = ctx;
    const struct gust_plugin_counter all[] = {
        {"connected", (uint64_t)atomic_load(&o->link.connected)},
        {"written", (uint64_t)atomic_load(&o->written)},
        {"refused", (uint64_t)atomic_load(&o->refused)},
        {"retried", (uint64_t)atomic_load(&o->retried)},
        {"producers_recreated", (uint64_t)atomic_load(&o->recreated)},
        {"errors", (uint64_t)atomic_load(&o->link.errors)},
    };
    return gust_plugin_counters_put(c, max, all, sizeof(all) / sizeof(all[0]));
}

void kafka_out_stop(void *ctx)
{
    struct kafka_out *o = ctx;
    kafka_host->log(o->inst, GUST_LOG_INFO,
                    "stopped: %" PRIu64 " written, %" PRIu64 " refused by kafka, %" PRIu64 " retried",
                    (uint64_t)atomic_load(&o->written), (uint64_t)atomic_load(&o->refused),
                    (uint64_t)atomic_load(&o->retried));
}

void kafka_out_destroy(void *ctx)
{
    struct kafka_out *o = ctx;
    if (o->rk) {
        rd_kafka_destroy(o->rk);
    }
    if (o->conf) {
        rd_kafka_conf_destroy(o->conf);
    }
    gust_tpl_free(o->topic);
    gust_tpl_free(o->key);
    kafka_link_destroy(&o->link);
    free(o);
}
