/* mqtt_out: a sink that publishes each message to an MQTT topic, on libmosquitto.
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
 * deliver() hands the batch to libmosquitto from the unit's thread (mosquitto_publish is
 * thread-safe; libmosquitto keeps at most max_inflight QoS 1 messages awaiting their
 * PUBACK and queues the rest) and waits on a condition variable that on_publish signals
 * (for QoS 0 libmosquitto calls it once the packet is written). mqtt_out.h says what
 * becomes of a connection's unacknowledged messages, mqtt_out_net.c who connects.
 * libmosquitto refuses a keepalive under 5 s, and so does load(), naming file:line. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mqtt_out.h"

#define MIN_KEEPALIVE_S 5 /* mosquitto_connect refuses less (MOSQ_ERR_INVAL) */

#define KEY(f, T, def, flags, help) GUST_KEY(struct mqtt_out_keys, f, T, def, flags, help)
const struct gust_schema_key mqtt_out_schema[] = {
    MQTT_COMMON_KEYS(struct mqtt_out_keys),
    KEY(topic, STR, NULL, 0,
        "publish every message to this topic; \"{subject}\" and \"{payload.FIELD}\" in it (quote the value) "
        "are replaced per message, e.g. \"dev/{payload.device}/cmd\""),
    KEY(topic_from_subject, BOOL, "off", 0,
        "or derive the topic from the subject: topic_strip removed, tokens as levels, %XX decoded"),
    KEY(topic_strip, SUBJECT, NULL, 0, "subject prefix removed before mapping (whole tokens)"),
    KEY(topic_prefix, STR, NULL, 0, "text put before the mapped topic, e.g. gust/"),
    KEY(max_inflight, INT, "1024", 0, "QoS 1 messages awaiting their PUBACK at once"),
    GUST_KEY_END,
};

static int load(struct mqtt_out *o, const struct gust_cfg *cfg, struct gust_err *err)
{
    const struct gust_host_api *h = mqtt_host;
    const struct mqtt_out_keys *k = &o->k;

    o->topic = k->topic;
    o->topic_strip = k->topic_strip;
    o->topic_prefix = k->topic_prefix;
    if (!o->topic == !k->topic_from_subject) {
        return gust_err_set(err, GUST_ECONFIG, "%s: set exactly one of topic and topic_from_subject on",
                            h->cfg_where(cfg, o->topic ? "topic_from_subject" : "broker"));
    }
    if (o->topic && strchr(o->topic, '{')) {
        char why[200];
        if (strcspn(o->topic, "+#") < strlen(o->topic)) {
            snprintf(why, sizeof(why), "'+' and '#' are wildcards, not allowed in a publish topic");
        } else if (gust_tpl_compile(o->topic, &o->tpl, why, sizeof(why)) == 0) {
            why[0] = '\0';
        }
        if (why[0]) {
            return gust_err_set(err, GUST_ECONFIG, "%s: topic \"%s\": %s", h->cfg_where(cfg, "topic"),
                                o->topic, why);
        }
        o->topic = NULL;
    } else if (o->topic && mosquitto_pub_topic_check(o->topic) != MOSQ_ERR_SUCCESS) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s: topic: \"%s\" is not a topic one can publish to (no + or #)",
                            h->cfg_where(cfg, "topic"), o->topic);
    }
    if (k->max_inflight < 1 || k->max_inflight > 65535) {
        return gust_err_set(err, GUST_ECONFIG, "%s: max_inflight: %lld is not within 1..65535",
                            h->cfg_where(cfg, "max_inflight"), (long long)k->max_inflight);
    }
    o->max_inflight = (int)k->max_inflight;
    if (o->conf.keepalive_s < MIN_KEEPALIVE_S) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s: keepalive: mqtt_out needs at least %ds (libmosquitto refuses a shorter one)",
                            h->cfg_where(cfg, "keepalive"), MIN_KEEPALIVE_S);
    }
    return 0;
}

int mqtt_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    struct mqtt_out *o = calloc(1, sizeof(*o));
    pthread_condattr_t ca;
    int rc;

    if (!o) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    o->inst = inst;
    o->cfg = cfg;
    o->wake_fd = -1;
    pthread_mutex_init(&o->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* gust_clock_mono_ms's clock */
    pthread_cond_init(&o->cond, &ca);
    pthread_condattr_destroy(&ca);
    if ((rc = gust_sdk_bind(mqtt_host, cfg, mqtt_out_schema, &o->k, err)) != 0 ||
        (rc = mqtt_conf_load(&o->conf, &o->k.common, cfg, mqtt_host->instance_name(inst), o->client_id,
                             sizeof(o->client_id), err)) != 0 ||
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
    struct gust_tls *check = NULL;
    int rc;

    /* libmosquitto reads the TLS files only when it connects: read them once now, so that
     * a bad one fails the start with OpenSSL's reason, as it does for mqtt_in. */
    if ((rc = mqtt_conf_read_password(&o->conf, o->cfg, err)) != 0 ||
        (o->conf.tls &&
         (rc = gust_tls_create(&check, o->conf.tls_ca, o->conf.tls_cert, o->conf.tls_key, err)) != 0)) {
        return rc;
    }
    gust_tls_destroy(check);
    mqtt_host->log(o->inst, GUST_LOG_INFO, "connecting to %s:%d%s as %s, QoS %d", o->conf.host, o->conf.port,
                   o->conf.tls ? " (TLS)" : "", o->conf.client_id, o->conf.qos);
    return out_net_start(o, err);
}

static void set(struct gust_result *r, int status, const char *why)
{
    r->status = status;
    snprintf(r->error, sizeof(r->error), "%s", why);
}

/* {subject} in a topic template: the subject as a topic, topic_strip removed. */
static int subject_as_topic(void *strip, const char *subject, char *out, size_t outsz)
{
    return mqtt_subject_to_topic(strip, subject, out, outsz);
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
        char tw[200];
        if (gust_tpl_render(o->tpl, m, subject_as_topic, (void *)o->topic_strip, buf, sz, tw, sizeof(tw)) != 0) {
            snprintf(why, whysz, "topic %.150s", tw);
            return NULL;
        }
        return buf;
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
    int32_t *mid;

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
    o->batch_cap = n;
    return 0;
}

/* Hands msgs[0..n) to libmosquitto while the connection of generation gen lasts, until
 * one cannot be (then why says so); returns how many were (handed over or rejected). */
static size_t publish_all(struct mqtt_out *o, const struct gust_msg *msgs, size_t n,
                          struct gust_result *results, uint64_t gen, char *stop_why, size_t stop_whysz)
{
    size_t i;

    for (i = 0; i < n; i++) {
        char topic[1024], why[200];
        const char *t = topic_of(o, &msgs[i], topic, sizeof(topic), why, sizeof(why));
        size_t tl = t ? strlen(t) : 0;
        int mid = 0, rc = tl > 65535 ? MOSQ_ERR_INVAL : MOSQ_ERR_PAYLOAD_SIZE;

        o->mid[i] = -1;
        /* Checked here, not by libmosquitto, which takes the length as an int. */
        if (t && mqtt_wire_publish_fits(tl, msgs[i].len, o->conf.qos)) {
            /* Under the lock: on_publish must not see the mid before it is recorded, and a
             * client started afresh (the connection gone) must not get the message. */
            pthread_mutex_lock(&o->lock);
            rc = o->conn_gen != gen ? MOSQ_ERR_NO_CONN
                                    : mosquitto_publish(o->mosq, &mid, t, (int)msgs[i].len, msgs[i].data,
                                                        o->conf.qos, false);
            if (rc == MOSQ_ERR_SUCCESS) {
                o->slot_of_mid[(uint16_t)mid] = (uint32_t)i;
                o->mid[i] = mid;
                o->want++;
            }
            pthread_mutex_unlock(&o->lock);
        }
        if (t && (rc == MOSQ_ERR_INVAL || rc == MOSQ_ERR_PAYLOAD_SIZE || rc == MOSQ_ERR_MALFORMED_UTF8 ||
                  rc == MOSQ_ERR_OVERSIZE_PACKET)) {
            snprintf(why, sizeof(why), "cannot publish to topic %.120s: %s", t, mosquitto_strerror(rc));
            t = NULL;
        }
        if (!t) {
            set(&results[i], GUST_REJECTED, why);
            o->state[i] = 2;
        } else if (rc != MOSQ_ERR_SUCCESS) {
            /* The connection went, or out of memory: this one and the rest are retried. */
            if (rc == MOSQ_ERR_NO_CONN) {
                snprintf(stop_why, stop_whysz, "connection to %.60s:%d lost", o->conf.host, o->conf.port);
            } else {
                snprintf(stop_why, stop_whysz, "cannot publish: %s", mosquitto_strerror(rc));
            }
            break;
        }
    }
    return i;
}

/* After the wait, with the lock held: how many lead the batch settled. When that is
 * short of what was handed over, why says what became of the rest, and a connection
 * that is still up is given up on (see mqtt_out.h). */
static size_t settle(struct mqtt_out *o, size_t sent, uint64_t gen, char *why, size_t whysz)
{
    size_t done;
    int qos = o->conf.qos;

    for (done = 0; done < sent && o->state[done]; done++) {
    }
    if (done < sent && o->conn_gen != gen) {
        snprintf(why, whysz, "connection to %.60s:%d lost before the %s", o->conf.host, o->conf.port,
                 qos ? "PUBACK" : "write");
    } else if (done < sent) {
        snprintf(why, whysz, qos ? "no PUBACK from %.60s:%d in time" : "could not write to %.60s:%d in time",
                 o->conf.host, o->conf.port);
        snprintf(o->drop_why, sizeof(o->drop_why),
                 qos ? "no PUBACK within the timeout (%" PRId64 " ms)"
                     : "could not write within the timeout (%" PRId64 " ms)",
                 o->conf.timeout_ms);
        o->connected = 0; /* no batch uses it until the network thread has dropped it */
        o->conn_gen++;
        out_net_wake(o);
    }
    /* A late PUBACK of what is given up must not mark a message of a later batch. */
    for (size_t i = 0; i < sent; i++) {
        if (o->mid[i] >= 0 && o->state[i] == 0) {
            o->slot_of_mid[o->mid[i]] = NO_SLOT;
        }
    }
    return done;
}

int mqtt_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    struct mqtt_out *o = ctx;
    char why[200];
    size_t sent, done;

    if (grow(o, n) != 0) {
        return GUST_ENOMEM;
    }
    memset(o->state, 0, n);

    int64_t deadline = gust_clock_mono_ms() + o->conf.timeout_ms;
    pthread_mutex_lock(&o->lock);
    while (!o->connected && !o->stopping && out_wait_until(o, deadline) != ETIMEDOUT) {
    }
    int connected = o->connected;
    uint64_t gen = o->conn_gen;
    o->nacked = o->want = 0;
    snprintf(why, sizeof(why), "not connected to %.60s:%d: %.110s", o->conf.host, o->conf.port,
             o->last_error[0] ? o->last_error : "connecting");
    pthread_mutex_unlock(&o->lock);

    sent = connected ? publish_all(o, msgs, n, results, gen, why, sizeof(why)) : 0;
    if (sent > 0) {
        out_net_wake(o); /* once per batch: the network thread writes it all (mqtt_out_net.c) */
    }

    /* The PUBACKs (QoS 1) or the writes (QoS 0) of what was handed over, while the
     * connection they went out on lasts. */
    deadline = gust_clock_mono_ms() + o->conf.timeout_ms;
    pthread_mutex_lock(&o->lock);
    while (o->nacked < o->want && o->conn_gen == gen && out_wait_until(o, deadline) != ETIMEDOUT) {
    }
    done = settle(o, sent, gen, why, sizeof(why));
    pthread_mutex_unlock(&o->lock);

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
    out_net_stop(ctx);
}

void mqtt_out_destroy(void *ctx)
{
    struct mqtt_out *o = ctx;

    if (!o) {
        return;
    }
    mqtt_out_stop(o);
    mosquitto_destroy(o->mosq);
    if (o->wake_fd >= 0) {
        close(o->wake_fd);
    }
    gust_tpl_free(o->tpl);
    free(o->slot_of_mid);
    free(o->state);
    free(o->mid);
    mqtt_conf_free(&o->conf);
    pthread_cond_destroy(&o->cond);
    pthread_mutex_destroy(&o->lock);
    free(o);
}
