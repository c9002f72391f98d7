/* mqtt_out: a sink that publishes each message to an MQTT topic.
 *
 *   sink lights { use mqtt_out; source ev.cmd.>; broker 127.0.0.1:1883;
 *                 topic_from_subject on; topic_strip ev.cmd; qos 1; }
 *   (or a fixed `topic`, or a template: topic "dev/{payload.device}/{subject}";)
 *
 * What each message becomes:
 *   QoS 1: DELIVERED once the broker's PUBACK is back; QoS 0: once it is written out
 *   no connection, connection lost, or no PUBACK within `timeout`: RETRY, for that
 *     message and every later one of the batch, so a redelivery keeps their order
 *   a topic or payload the protocol cannot carry, or a template field the payload lacks:
 *     REJECTED (max_deliver, then DLQ)
 *
 * deliver() encodes the batch's PUBLISH packets into one buffer (at most max_inflight
 * QoS 1 ones awaiting their PUBACK at a time), writes it, and reads the PUBACKs on the
 * unit's thread; mqtt_out.h says why this is not libmosquitto any more, and
 * mqtt_out_keeper.c who looks after the connection between batches. The session is
 * clean: what the broker has not PUBACKed when the connection goes is retried by the
 * host, in order. libmosquitto is still linked for its topic and UTF-8 checks, the
 * broker's own, so that a topic the broker would drop the connection for is REJECTED. */
#include <errno.h>
#include <mosquitto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqtt_out.h"

#define NO_SLOT UINT32_MAX
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

const struct gust_schema_key mqtt_out_schema[] = {
    MQTT_COMMON_KEYS,
    {"topic", GUST_T_STR, NULL, 0,
     "publish every message to this topic; \"{subject}\" and \"{payload.FIELD}\" in it (quote the value) "
     "are replaced per message, e.g. \"dev/{payload.device}/cmd\""},
    {"topic_from_subject", GUST_T_BOOL, "off", 0,
     "or derive the topic from the subject: topic_strip removed, tokens as levels, %XX decoded"},
    {"topic_strip", GUST_T_SUBJECT, NULL, 0, "subject prefix removed before mapping (whole tokens)"},
    {"topic_prefix", GUST_T_STR, NULL, 0, "text put before the mapped topic, e.g. gust/"},
    {"max_inflight", GUST_T_INT, "1024", 0, "QoS 1 messages awaiting their PUBACK at once"},
    {NULL, 0, NULL, 0, NULL},
};

static int load(struct mqtt_out *o, const struct gust_cfg *cfg, struct gust_err *err)
{
    const struct gust_host_api *h = mqtt_host;
    int from_subject = (int)h->cfg_int(cfg, "topic_from_subject");
    int64_t v;

    o->topic = h->cfg_str(cfg, "topic");
    o->topic_strip = h->cfg_str(cfg, "topic_strip");
    o->topic_prefix = h->cfg_str(cfg, "topic_prefix");
    if (!o->topic == !from_subject) {
        return gust_err_set(err, GUST_ECONFIG, "%s: set exactly one of topic and topic_from_subject on",
                        h->cfg_where(cfg, o->topic ? "topic_from_subject" : "broker"));
    }
    if (o->topic && strchr(o->topic, '{')) {
        char why[200];
        if (mqtt_tpl_compile(o->topic, &o->tpl, why, sizeof(why)) != 0) {
            return gust_err_set(err, GUST_ECONFIG, "%s: topic \"%s\": %s", h->cfg_where(cfg, "topic"), o->topic, why);
        }
        o->topic = NULL;
    } else if (o->topic && mosquitto_pub_topic_check(o->topic) != MOSQ_ERR_SUCCESS) {
        return gust_err_set(err, GUST_ECONFIG, "%s: topic: \"%s\" is not a topic one can publish to (no + or #)",
                        h->cfg_where(cfg, "topic"), o->topic);
    }
    v = h->cfg_int(cfg, "max_inflight");
    if (v < 1 || v > 65535) {
        return gust_err_set(err, GUST_ECONFIG, "%s: max_inflight: %lld is not within 1..65535",
                        h->cfg_where(cfg, "max_inflight"), (long long)v);
    }
    o->max_inflight = (int)v;
    return 0;
}

int mqtt_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    struct mqtt_out *o = calloc(1, sizeof(*o));
    int rc;

    if (!o) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    o->inst = inst;
    o->cfg = cfg;
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->cond, NULL);
    if ((rc = mqtt_conf_load(&o->conf, cfg, mqtt_host->instance_name(inst), o->client_id, sizeof(o->client_id),
                             err)) != 0 ||
        (rc = load(o, cfg, err)) != 0) {
        mqtt_out_destroy(o);
        return rc;
    }
    if (!(o->slot_of_mid = malloc(65536 * sizeof(*o->slot_of_mid)))) {
        mqtt_out_destroy(o);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < 65536; i++) {
        o->slot_of_mid[i] = NO_SLOT;
    }
    *ctx = o;
    return 0;
}

int mqtt_out_start(void *ctx, struct gust_err *err)
{
    struct mqtt_out *o = ctx;
    int rc;

    if ((rc = mqtt_conf_read_password(&o->conf, o->cfg, err)) != 0 ||
        (o->conf.tls && (rc = gust_tls_create(&o->tls, o->conf.tls_ca, o->conf.tls_cert,
                                             o->conf.tls_key, err)) != 0)) {
        return rc;
    }
    mqtt_host->log(o->inst, GUST_LOG_INFO, "connecting to %s:%d%s as %s, QoS %d", o->conf.host, o->conf.port,
                   o->conf.tls ? " (TLS)" : "", o->conf.client_id, o->conf.qos);
    /* A broker that is not up yet is not an error: the keeper keeps trying. */
    mqtt_backoff_init(&o->backoff, BACKOFF_MIN_MS, BACKOFF_MAX_MS);
    o->conn.max_packet = 4; /* PUBACK, PINGRESP, CONNACK: anything bigger is a protocol error */
    if (pthread_create(&o->keeper, NULL, out_keeper_run, o) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start the connection thread");
    }
    o->keeper_started = 1;
    return 0;
}

static void set(struct gust_result *r, int status, const char *why)
{
    r->status = status;
    snprintf(r->error, sizeof(r->error), "%s", why);
}

/* Topic of one message, into buf; NULL (and why) when it cannot be made. */
static const char *topic_of(struct mqtt_out *o, const struct gust_msg *m, char *buf, size_t sz, char *why,
                            size_t whysz)
{
    size_t pl = o->topic_prefix ? strlen(o->topic_prefix) : 0;

    if (o->topic) {
        return o->topic;
    }
    if (o->tpl) {
        return mqtt_tpl_render(o->tpl, o->topic_strip, m, buf, sz, why, whysz) == 0 ? buf : NULL;
    }
    snprintf(why, whysz, "topic too long");
    if (pl >= sz) {
        return NULL;
    }
    memcpy(buf, o->topic_prefix ? o->topic_prefix : "", pl);
    return mqtt_subject_to_topic(o->topic_strip, m->subject, buf + pl, sz - pl) < 0 ? NULL : buf;
}

static int grow(struct mqtt_out *o, size_t n)
{
    uint8_t *st;
    uint16_t *mid;
    uint64_t *end;

    if (n <= o->batch_cap) {
        return 0;
    }
    if (!(st = realloc(o->state, n * sizeof(*st)))) {
        return -1;
    }
    o->state = st;
    if (!(mid = realloc(o->mid, n * sizeof(*mid)))) {
        return -1;
    }
    o->mid = mid;
    if (!(end = realloc(o->end, n * sizeof(*end)))) {
        return -1;
    }
    o->end = end;
    o->batch_cap = n;
    return 0;
}

/* Queues message i's PUBLISH: 0, 1 when it is settled as REJECTED instead, -1 when out
 * of memory (it and the rest are retried). */
static int queue_one(struct mqtt_out *o, const struct gust_msg *m, size_t i, struct gust_result *r)
{
    char topic[1024], why[200];
    const char *t = topic_of(o, m, topic, sizeof(topic), why, sizeof(why));
    size_t tl = t ? strlen(t) : 0;
    int rc = MOSQ_ERR_SUCCESS;

    if (t && (rc = mosquitto_pub_topic_check2(t, tl)) == MOSQ_ERR_SUCCESS &&
        (rc = mosquitto_validate_utf8(t, (int)tl)) == MOSQ_ERR_SUCCESS &&
        !mqtt_wire_publish_fits(tl, m->len, o->conf.qos)) {
        rc = MOSQ_ERR_PAYLOAD_SIZE;
    }
    if (t && rc != MOSQ_ERR_SUCCESS) {
        snprintf(why, sizeof(why), "cannot publish to topic %.120s: %s", t, mosquitto_strerror(rc));
        t = NULL;
    }
    if (!t) {
        set(r, GUST_REJECTED, why);
        o->state[i] = 2;
        return 1;
    }
    if (o->conf.qos) {
        o->next_id = (uint16_t)(o->next_id % 65535 + 1); /* 1..65535 */
        o->mid[i] = o->next_id;
    }
    if (mqtt_wire_publish(&o->conn.out, t, tl, m->data, m->len, o->conf.qos, o->next_id) != 0) {
        return -1;
    }
    if (o->conf.qos) {
        o->slot_of_mid[o->next_id] = (uint32_t)i;
    }
    o->end[i] = mqtt_link_queued(&o->conn);
    return 0;
}

/* The PUBACKs read so far; returns how many matched this batch, or -1 on bad input
 * (o->conn.why). The broker sends mqtt_out nothing else. */
static long take_acks(struct mqtt_out *o, size_t n)
{
    struct mqtt_packet p;
    long acked = 0;
    int got, oversized;

    while ((got = mqtt_link_next(&o->conn, 1, &p, &oversized)) > 0) {
        long id = oversized ? -1 : p.type == MQTT_PUBACK ? mqtt_wire_ack_id(&p) : -1;
        if (id < 0) {
            o->conn.why = "expected a PUBACK";
            return -1;
        }
        uint32_t i = o->slot_of_mid[id];
        /* Anything else is a late PUBACK of a batch given up on: already retried. */
        if (i != NO_SLOT && i < n && o->state[i] == 0) {
            o->slot_of_mid[id] = NO_SLOT;
            o->state[i] = 1;
            acked++;
        }
    }
    return got < 0 ? -1 : acked;
}

/* With the connection up and the lock held: sends msgs and waits for what they need
 * (PUBACKs, or being written out); fills why when it stops short. */
static void send_batch(struct mqtt_out *o, const struct gust_msg *msgs, size_t n, struct gust_result *results,
                       char *why, size_t whysz)
{
    struct gust_err err = {{0}};
    int64_t deadline = gust_now_ms() + o->conf.timeout_ms;
    size_t next = 0, inflight = 0;
    int qos = o->conf.qos, nomem = 0;

    for (;;) {
        while (next < n && !nomem && (qos == 0 || inflight < (size_t)o->max_inflight)) {
            int rc = queue_one(o, &msgs[next], next, &results[next]);
            nomem = rc < 0;
            inflight += rc == 0 && qos;
            next += rc >= 0;
        }
        if ((next == n || nomem) && (qos ? inflight == 0 : o->conn.out.len == 0)) {
            snprintf(why, whysz, "out of memory");
            break; /* all done (why then unused), or all but what did not fit in memory */
        }
        int64_t now = gust_now_ms(), unused;
        if (now >= deadline) {
            snprintf(why, whysz, qos ? "no PUBACK from %.60s:%d in time" : "could not write to %.60s:%d in time",
                     o->conf.host, o->conf.port);
            if (o->conn.out.len) {
                out_drop(o, "writes stalled"); /* what is half written cannot be taken back */
            }
            break;
        }
        /* A batch that keeps the connection busy keeps the keeper out: its keepalive is
         * checked here, so a broker that stops answering is noticed within it. */
        if (mqtt_link_keepalive(&o->conn, o->conf.keepalive_s, now, 1, &unused) != 0) {
            snprintf(why, whysz, "connection to %.60s:%d lost before the %s", o->conf.host, o->conf.port,
                     qos ? "PUBACK" : "write");
            out_drop(o, o->conn.why);
            break;
        }
        long acked = 0;
        if (mqtt_link_pump(&o->conn, qos && inflight, deadline, &err) != 0 || (acked = take_acks(o, n)) < 0) {
            char lost[160];
            snprintf(why, whysz, "connection to %.60s:%d lost before the %s", o->conf.host, o->conf.port,
                     qos ? "PUBACK" : "write");
            snprintf(lost, sizeof(lost), "protocol error: %s", o->conn.why);
            out_drop(o, acked < 0 ? lost : err.msg);
            break;
        }
        inflight -= (size_t)acked;
    }
    for (size_t i = 0; i < next; i++) {
        if (qos == 0 && o->state[i] == 0 && o->end[i] <= o->conn.written) {
            o->state[i] = 1;
        }
        if (qos && o->state[i] == 0) {
            o->slot_of_mid[o->mid[i]] = NO_SLOT; /* given up: a late PUBACK must not mark another */
        }
    }
}

int mqtt_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    struct mqtt_out *o = ctx;
    struct timespec dl;
    char why[200];
    size_t done;

    if (grow(o, n) != 0) {
        return GUST_ENOMEM;
    }
    memset(o->state, 0, n);

    out_deadline_in(&dl, o->conf.timeout_ms);
    pthread_mutex_lock(&o->lock);
    while (!o->conn.sock && pthread_cond_timedwait(&o->cond, &o->lock, &dl) != ETIMEDOUT) {
    }
    if (o->conn.sock) {
        send_batch(o, msgs, n, results, why, sizeof(why));
    } else {
        snprintf(why, sizeof(why), "not connected to %.60s:%d: %.110s", o->conf.host, o->conf.port,
                 o->last_error[0] ? o->last_error : "connecting");
    }
    pthread_mutex_unlock(&o->lock);

    for (done = 0; done < n && o->state[done]; done++) {
    }
    for (size_t i = 0; i < n; i++) {
        if (i >= done) {
            set(&results[i], GUST_RETRY, why);
        } else if (o->state[i] == 1) {
            results[i].status = GUST_DELIVERED;
            results[i].error[0] = '\0';
        }
    }
    return 0;
}

void mqtt_out_stop(void *ctx)
{
    struct mqtt_out *o = ctx;
    struct gust_err err = {{0}};

    if (!o->keeper_started) {
        return;
    }
    pthread_mutex_lock(&o->lock);
    o->stopping = 1;
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->keeper, NULL);
    o->keeper_started = 0;
    if (o->conn.sock && mqtt_wire_disconnect(&o->conn.out) == 0) {
        mqtt_link_pump(&o->conn, 0, gust_now_ms() + 1000, &err);
    }
    mqtt_link_close(&o->conn);
}

void mqtt_out_destroy(void *ctx)
{
    struct mqtt_out *o = ctx;

    if (!o) {
        return;
    }
    mqtt_out_stop(o);
    mqtt_link_free(&o->conn);
    gust_tls_destroy(o->tls);
    mqtt_tpl_free(o->tpl);
    free(o->slot_of_mid);
    free(o->state);
    free(o->mid);
    free(o->end);
    mqtt_conf_free(&o->conf);
    pthread_cond_destroy(&o->cond);
    pthread_mutex_destroy(&o->lock);
    free(o);
}
