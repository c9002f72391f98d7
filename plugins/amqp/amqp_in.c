/* amqp_in: an AMQP queue consumed, each delivery published to the bus before it is
 * acknowledged (basic.ack only after JetStream's PubAck).
 *
 *   source ain { use amqp_in; url amqp://guest:guest@127.0.0.1:5672/%2f; queue gust_in; subject ev.amqp; }
 *
 * One thread per instance owns the connection (rabbitmq-c connections are not
 * thread-safe). It consumes with basic.qos prefetch `prefetch`, so at most that many
 * deliveries are unacked at once, and keeps them in a ring in delivery order. Each is
 * published with Nats-Msg-Id "<queue>:<message_id>" when the message has a message_id
 * (a redelivery after a kill -9 between the PubAck and the ack is stored once), else
 * without one (at least once). The PubAck's callback, on a host thread, only records the
 * outcome in the delivery's slot; the consumer thread settles the ring's front between
 * reads: a run of stored deliveries is acked with one basic.ack multiple=true, a
 * rejected non-JSON message is basic.reject'ed without requeue (the queue's
 * dead-letter exchange gets it, if it has one), a failed publish is basic.nack'ed with
 * requeue and the source pauses 1 s. A lost connection: the broker requeues every
 * unacked delivery; the thread waits for the outcomes still due, then reconnects with
 * backoff. Competing consumers: in a cluster every process may consume the queue
 * (`competing on`), the broker hands each message to one of them. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amqp_plugin.h"
#include "gust/source.h"

struct amqp_in_keys {
    struct amqp_keys common;
    const char *queue, *subject, *non_json;
    int64_t prefetch;
    int declare;
};

#define KEY(f, T, def, flags, help) GUST_KEY(struct amqp_in_keys, f, T, def, flags, help)
const struct gust_schema_key amqp_in_schema[] = {
    AMQP_COMMON_KEYS(struct amqp_in_keys),
    AMQP_KEY_RANGE(struct amqp_in_keys, heartbeat, DURATION, "30s", GUST_K_ZERO_OFF, 1000, 600000,
                   "AMQP heartbeat asked of the broker (0: none): a silent broker is noticed within twice it"),
    KEY(queue, STR, NULL, GUST_K_REQUIRED, "the queue to consume"),
    KEY(subject, SUBJECT, NULL, GUST_K_REQUIRED, "publish every message to this subject"),
    GUST_KEY_RANGE(struct amqp_in_keys, prefetch, INT, "256", 0, 1, 65535,
                   "basic.qos prefetch: deliveries unacked at once (published, PubAck awaited)"),
    KEY(declare, BOOL, "on", 0,
        "on: declare the queue durable, not exclusive, not auto-delete, no arguments (an existing "
        "queue that differs is an error); off: only check that it exists"),
    GUST_KEY_ENUM(struct amqp_in_keys, non_json, "reject", 0, "reject|wrap|pass",
                  "payload that is not one JSON object: reject (counted, logged, basic.reject without "
                  "requeue), wrap ({\"payload_base64\",\"queue\"}) or pass (unchanged)"),
    GUST_KEY_END,
};

enum { ST_WAIT = 1000, ST_REJECT = 1001 };

struct slot {
    uint64_t tag;
    atomic_int status; /* ST_WAIT, ST_REJECT, or the publish outcome: 0 or 1 (a
                          duplicate): stored; negative: failed */
};

struct amqp_in {
    struct gust_instance *inst;
    struct amqp_in_keys k;
    struct amqp_conf conf;
    struct amqp_link link;
    struct gust_publisher *pub;
    int non_json;

    pthread_t thread;
    int running;
    atomic_int stopping;

    /* The thread's own. */
    int consuming;
    struct slot *ring;
    size_t cap, head, count;
    int64_t pause_until, next_depth;
    struct gust_buf json;
    struct amqp_hdrs hdrs;
    char msg_id[600];
    atomic_uint_fast64_t received, acked, rejected, failed, unacked, backlog;
};

int amqp_in_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    const struct gust_host_api *h = amqp_host;
    struct amqp_in *in = calloc(1, sizeof(*in));
    int rc;

    if (!in) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    in->inst = inst;
    if ((rc = gust_sdk_bind(h, cfg, amqp_in_schema, &in->k, err)) != 0 ||
        (rc = amqp_conf_load(&in->conf, &in->k.common, cfg, err)) != 0) {
        amqp_in_destroy(in);
        return rc;
    }
    if (!in->k.queue[0] || strlen(in->k.queue) > 255) {
        amqp_in_destroy(in);
        return gust_err_set(err, GUST_ECONFIG, "%s: queue: must be 1 to 255 bytes (an AMQP short string)",
                            h->cfg_where(cfg, "queue"));
    }
    in->non_json = strcmp(in->k.non_json, "wrap") == 0   ? AMQP_NJ_WRAP
                   : strcmp(in->k.non_json, "pass") == 0 ? AMQP_NJ_PASS
                                                         : AMQP_NJ_REJECT;
    in->cap = (size_t)in->k.prefetch;
    if (!(in->ring = calloc(in->cap, sizeof(*in->ring)))) {
        amqp_in_destroy(in);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    amqp_link_init(&in->link, inst, &in->conf);
    *ctx = in;
    return 0;
}

/* A host thread: only records the outcome; the consumer thread acks. */
static void on_stored(void *ud, int status, uint64_t seq, const char *error)
{
    struct slot *s = ud;
    (void)seq;
    (void)error;
    atomic_store(&s->status, status);
}

/* The connection went: the broker requeues what was unacked. The slots are reused only
 * once every outcome due on them is back. */
static void lost(struct amqp_in *in, const char *why)
{
    amqp_link_drop(&in->link, why);
    in->consuming = 0;
    while (gust_publisher_wait(in->pub, 1000) > 0) {
    }
    in->head = in->count = 0;
    atomic_store(&in->unacked, 0);
}

/* Acks, rejects and nacks the settled front of the ring. 0, or -1 when the connection
 * failed (lost() done). */
static int settle(struct amqp_in *in)
{
    amqp_connection_state_t c = in->link.conn;
    uint64_t ack_to = 0, nacked = 0, acks = 0;
    int rc = 0;

    while (rc == 0 && in->count > 0) {
        struct slot *s = &in->ring[in->head];
        int st = atomic_load(&s->status);
        if (st == ST_WAIT) {
            break;
        }
        if (st == 0 || st == 1) {
            ack_to = s->tag;
            acks++;
        } else {
            if (ack_to) {
                rc = amqp_basic_ack(c, 1, ack_to, 1);
                ack_to = 0;
            }
            if (rc == 0 && st == ST_REJECT) {
                rc = amqp_basic_reject(c, 1, s->tag, 0);
            } else if (rc == 0) {
                rc = amqp_basic_nack(c, 1, s->tag, 0, 1);
                nacked++;
            }
        }
        in->head = (in->head + 1) % in->cap;
        in->count--;
    }
    if (rc == 0 && ack_to) {
        rc = amqp_basic_ack(c, 1, ack_to, 1);
    }
    if (rc != 0) {
        char why[200];
        snprintf(why, sizeof(why), "basic.ack: %s", amqp_error_string2(rc));
        lost(in, why);
        return -1;
    }
    atomic_fetch_add(&in->acked, acks);
    atomic_store(&in->unacked, in->count);
    if (nacked) {
        /* The bus refused or did not answer: the broker has them back; give it a rest. */
        atomic_fetch_add(&in->failed, nacked);
        in->pause_until = gust_clock_mono_ms() + 1000;
    }
    return 0;
}

/* qos, the queue (declared or checked), the consumer. 0, or -1 (link dropped). */
static int setup(struct amqp_in *in)
{
    amqp_connection_state_t c = in->link.conn;
    amqp_bytes_t q = amqp_cstring_bytes(in->k.queue);
    char why[1024], text[400];

    if (!amqp_basic_qos(c, 1, 0, (uint16_t)in->k.prefetch, 0)) {
        amqp_reply_text(amqp_get_rpc_reply(c), "basic.qos", why, sizeof(why));
        amqp_link_drop(&in->link, why);
        return -1;
    }
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(c, 1, q, !in->k.declare, 1, 0, 0, amqp_empty_table);
    if (!ok) {
        amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
        amqp_reply_text(r, "queue.declare", text, sizeof(text));
        if (strstr(text, "PRECONDITION_FAILED")) {
            snprintf(why, sizeof(why),
                     "queue %s exists with other settings than declare on asks (durable, not exclusive, not "
                     "auto-delete, no arguments): %s; use declare off to take it as it is",
                     in->k.queue, text);
        } else if (strstr(text, "NOT_FOUND")) {
            snprintf(why, sizeof(why), "queue %s does not exist (declare off only checks it): %s", in->k.queue, text);
        } else if (strstr(text, "RESOURCE_LOCKED")) {
            snprintf(why, sizeof(why), "queue %s is exclusive to another connection: %s", in->k.queue, text);
        } else {
            snprintf(why, sizeof(why), "%s", text);
        }
        amqp_link_drop(&in->link, why);
        return -1;
    }
    atomic_store(&in->backlog, ok->message_count);
    uint32_t waiting = ok->message_count;
    if (!amqp_basic_consume(c, 1, q, amqp_empty_bytes, 0, 0, 0, amqp_empty_table)) {
        amqp_reply_text(amqp_get_rpc_reply(c), "basic.consume", why, sizeof(why));
        amqp_link_drop(&in->link, why);
        return -1;
    }
    amqp_host->log(in->inst, GUST_LOG_INFO, "consuming queue %s (%" PRIu32 " messages waiting, prefetch %" PRId64 ")",
                   in->k.queue, waiting, in->k.prefetch);
    amqp_link_ready(&in->link);
    in->consuming = 1;
    in->next_depth = gust_clock_mono_ms() + 5000;
    return 0;
}

static void note_rejected(struct amqp_in *in, uint64_t tag)
{
    uint64_t n = atomic_fetch_add(&in->rejected, 1) + 1;
    if (n == 1 || n % 1000 == 0) {
        amqp_host->log(in->inst, GUST_LOG_WARN,
                       "message %" PRIu64 " of queue %s is not one JSON object: rejected (non_json reject; %" PRIu64
                       " so far)",
                       tag, in->k.queue, n);
    }
}

static int is_object(const void *data, size_t len)
{
    char why[200];
    return gust_json_check(data, len, NULL, NULL, why, sizeof(why)) == GUST_JSON_OBJECT;
}

static int wrap(struct amqp_in *in, const void *data, size_t len)
{
    struct gust_buf *b = &in->json;
    b->len = 0;
    int rc = gust_buf_append(b, "{\"payload_base64\":", 18);
    rc = rc ? rc : gust_json_append_base64(b, data, len);
    rc = rc ? rc : gust_buf_append(b, ",\"queue\":", 9);
    rc = rc ? rc : gust_json_append_string(b, in->k.queue, strlen(in->k.queue));
    rc = rc ? rc : gust_buf_append(b, "}", 1);
    return rc;
}

/* Nats-Msg-Id "<queue>:<message_id>", or NULL when the message has none usable. */
static const char *msg_id(struct amqp_in *in, const amqp_basic_properties_t *p)
{
    if (!(p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) || p->message_id.len == 0 || p->message_id.len > 255) {
        return NULL;
    }
    const unsigned char *b = p->message_id.bytes;
    for (size_t i = 0; i < p->message_id.len; i++) {
        if (b[i] < 32 || b[i] == 127) {
            return NULL; /* not a header value */
        }
    }
    snprintf(in->msg_id, sizeof(in->msg_id), "%s:%.*s", in->k.queue, (int)p->message_id.len, (const char *)b);
    return in->msg_id;
}

static void handle(struct amqp_in *in, const amqp_envelope_t *env)
{
    struct slot *s = &in->ring[(in->head + in->count) % in->cap];
    const amqp_bytes_t *body = &env->message.body;
    const void *data = body->bytes ? body->bytes : "";
    size_t len = body->len;

    s->tag = env->delivery_tag;
    in->count++;
    atomic_store(&in->unacked, in->count);
    atomic_fetch_add(&in->received, 1);
    if (in->non_json != AMQP_NJ_PASS && !is_object(data, len)) {
        if (in->non_json == AMQP_NJ_REJECT) {
            note_rejected(in, env->delivery_tag);
            atomic_store(&s->status, ST_REJECT);
            return;
        }
        if (wrap(in, data, len) != 0) {
            atomic_store(&s->status, GUST_ENOMEM);
            return;
        }
        data = in->json.data;
        len = in->json.len;
    }
    amqp_props_to_headers(env, &in->hdrs);
    const struct gust_pub_msg m = {.subject = in->k.subject,
                                   .data = data,
                                   .len = len,
                                   .msg_id = msg_id(in, &env->message.properties),
                                   .headers = in->hdrs.h,
                                   .nheaders = in->hdrs.n};
    atomic_store(&s->status, ST_WAIT);
    int rc = gust_publisher_send_msg(in->pub, &m, INT64_MAX, on_stored, s);
    if (rc != 0) {
        atomic_store(&s->status, rc < 0 ? rc : GUST_EIO);
    }
}

/* A frame that is not a delivery: a close, or the consumer cancelled (queue deleted). */
static void other_frame(struct amqp_in *in)
{
    amqp_frame_t f;
    struct timeval tv = {1, 0};
    char why[400];
    int rc = amqp_simple_wait_frame_noblock(in->link.conn, &f, &tv);
    if (rc != AMQP_STATUS_OK) {
        snprintf(why, sizeof(why), "reading: %s", amqp_error_string2(rc));
        lost(in, why);
        return;
    }
    if (f.frame_type != AMQP_FRAME_METHOD) {
        return;
    }
    if (amqp_close_text(in->link.conn, &f.payload.method, why, sizeof(why))) {
        lost(in, why);
    } else if (f.payload.method.id == AMQP_BASIC_CANCEL_METHOD) {
        snprintf(why, sizeof(why), "the broker cancelled the consumer of queue %s (deleted?)", in->k.queue);
        lost(in, why);
    }
}

/* The queue's depth for /units, every 5 s (a passive declare on the channel). */
static void refresh_backlog(struct amqp_in *in)
{
    char why[400];
    in->next_depth = gust_clock_mono_ms() + 5000;
    amqp_queue_declare_ok_t *ok =
        amqp_queue_declare(in->link.conn, 1, amqp_cstring_bytes(in->k.queue), 1, 0, 0, 0, amqp_empty_table);
    if (!ok) {
        amqp_reply_text(amqp_get_rpc_reply(in->link.conn), "queue.declare (passive)", why, sizeof(why));
        lost(in, why);
        return;
    }
    atomic_store(&in->backlog, ok->message_count);
}

static void receive(struct amqp_in *in)
{
    amqp_connection_state_t c = in->link.conn;
    amqp_envelope_t env;
    /* Short waits while PubAcks are due, so their acks leave soon after. */
    struct timeval tv = {0, in->count > 0 ? 5000 : 200000};
    char why[300];

    if (gust_clock_mono_ms() >= in->next_depth) {
        /* Deliveries that arrive meanwhile wait in rabbitmq-c's frame queue. */
        refresh_backlog(in);
        if (!in->link.conn) {
            return;
        }
    }
    amqp_maybe_release_buffers(c);
    amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        handle(in, &env);
        amqp_destroy_envelope(&env);
        return;
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT) {
        return;
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
        other_frame(in);
        return;
    }
    amqp_reply_text(r, "consume", why, sizeof(why));
    lost(in, why);
}

static void *in_thread(void *arg)
{
    struct amqp_in *in = arg;
    char why[300];

    while (!atomic_load(&in->stopping)) {
        if (in->link.conn && in->consuming && settle(in) != 0) {
            continue;
        }
        if (gust_clock_mono_ms() < in->pause_until) {
            usleep(20000);
            continue;
        }
        if (!in->link.conn || !in->consuming) {
            if (amqp_link_ensure(&in->link, why, sizeof(why)) != 0) {
                int64_t w = amqp_link_wait_ms(&in->link);
                usleep((useconds_t)((w > 100 || w <= 0 ? 100 : w) * 1000));
                continue;
            }
            setup(in);
            continue;
        }
        if (in->count >= in->cap) {
            usleep(1000); /* every delivery the broker may send is in flight */
            continue;
        }
        receive(in);
    }
    /* Stopping: ack what the bus stored (the rest goes back to the queue on close). */
    while (gust_publisher_wait(in->pub, 1000) > 0) {
    }
    if (in->link.conn && in->consuming) {
        settle(in);
    }
    amqp_link_close(&in->link);
    return NULL;
}

int amqp_in_start(void *ctx, struct gust_err *err)
{
    struct amqp_in *in = ctx;
    struct gust_publisher_conf pc = {.api = amqp_host, .inst = in->inst, .max_inflight = in->cap};

    if (!GUST_API_HAS(amqp_host, publish_msg)) {
        return gust_err_set(err, GUST_EINVAL, "this host has no publish_msg (ABI 1.4): it needs a newer gust");
    }
    int rc = gust_publisher_create(&in->pub, &pc, err);
    if (rc != 0) {
        return rc;
    }
    amqp_host->log(in->inst, GUST_LOG_INFO, "reading queue %s of %s", in->k.queue, in->conf.shown);
    if (pthread_create(&in->thread, NULL, in_thread, in) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start a thread");
    }
    in->running = 1;
    return 0;
}

size_t amqp_in_counters(void *ctx, struct gust_plugin_counter *c, size_t max)
{
    struct amqp_in *in = ctx;
    const struct gust_plugin_counter all[] = {
        {"connected", (uint64_t)atomic_load(&in->link.connected)},
        {"received", (uint64_t)atomic_load(&in->received)},
        {"acked", (uint64_t)atomic_load(&in->acked)},
        {"unacked", (uint64_t)atomic_load(&in->unacked)},
        {"rejected", (uint64_t)atomic_load(&in->rejected)},
        {"publish_failed", (uint64_t)atomic_load(&in->failed)},
        {"backlog", (uint64_t)atomic_load(&in->backlog)},
        {"connects", (uint64_t)atomic_load(&in->link.connects)},
        {"connection_errors", (uint64_t)atomic_load(&in->link.errors)},
    };
    return gust_plugin_counters_put(c, max, all, sizeof(all) / sizeof(all[0]));
}

void amqp_in_stop(void *ctx)
{
    struct amqp_in *in = ctx;
    if (!in->running) {
        return;
    }
    atomic_store(&in->stopping, 1);
    gust_publisher_stop(in->pub);
    pthread_join(in->thread, NULL);
    in->running = 0;
    amqp_host->log(in->inst, GUST_LOG_INFO,
                   "stopped: %" PRIu64 " messages received, %" PRIu64 " acked, %" PRIu64
                   " rejected (not JSON), %" PRIu64 " publishes failed (requeued)",
                   (uint64_t)atomic_load(&in->received), (uint64_t)atomic_load(&in->acked),
                   (uint64_t)atomic_load(&in->rejected), (uint64_t)atomic_load(&in->failed));
}

void amqp_in_destroy(void *ctx)
{
    struct amqp_in *in = ctx;
    amqp_in_stop(in);
    gust_publisher_destroy(in->pub);
    amqp_conf_free(&in->conf);
    gust_buf_free(&in->json);
    amqp_hdrs_free(&in->hdrs);
    free(in->ring);
    free(in);
}
