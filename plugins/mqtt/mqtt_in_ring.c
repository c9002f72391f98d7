/* mqtt_in's in-flight ring: from a PUBLISH read off the wire to its PUBACK.
 *
 *   accept:   the message becomes an entry at the tail and is sent to the bus through
 *             the SDK's publisher
 *   on_stored (bus thread): queues the entry's index with the outcome
 *   progress: stored -> E_DONE; failed -> E_RETRY with backoff (the broker still holds
 *             the message, so retrying is safe); then the head is released while it is
 *             E_DONE, queueing PUBACKs in arrival order.
 * A QoS 1 entry from an earlier connection is never PUBACKed (its packet id means
 * nothing on the new connection): the broker redelivers it, at least once. A QoS 2 one
 * (from a broker that ignores the QoS granted) is answered with PUBREC instead. With
 * MQTT 5.0 the ack of a rejected message says why: 0x99 (payload format invalid: not a
 * JSON object) or 0x97 (quota exceeded: over max_payload). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqtt_in.h"

/* An entry's buffer up to this size is kept for its next message: a steady stream then
 * costs no malloc/free per message. */
#define KEEP_BUF 65536
/* Headers an event takes from a 5.0 PUBLISH's user properties (see mqtt_props.c). */
#define MAX_HEADERS 16

__thread struct mqtt_in *in_network_thread;

void in_on_stored(void *ud, int status, uint64_t seq, const char *error)
{
    struct in_entry *e = ud;
    struct mqtt_in *in = e->in;
    uint64_t one = 1;

    (void)seq;
    (void)error; /* the publisher logs the first failure of a streak */
    pthread_mutex_lock(&in->lock);
    e->status = status;
    in->cq[in->cq_len++] = (size_t)(e - in->ring);
    /* Wake the network thread once per batch of completions. The instance outlives this
     * call: the publisher counts the outcome only after it, and destroy waits for that. */
    if (in_network_thread == in) {
        in->self_woken = 1;
    } else if (in->cq_len == 1 && write(in->wake_fd, &one, sizeof(one)) < 0) {
        /* an eventfd write only fails on overflow, and then it is readable anyway */
    }
    pthread_mutex_unlock(&in->lock);
}

/* The bus did not take or store e: it is sent again from the ring after a backoff, 50 ms
 * doubling to 2 s (a QoS 1 message stays the broker's too until its PUBACK). */
static void schedule_retry(struct mqtt_in *in, struct in_entry *e)
{
    e->delay_ms = e->delay_ms ? (e->delay_ms * 2 > 2000 ? 2000 : e->delay_ms * 2) : 50;
    e->retry_at = gust_clock_mono_ms() + e->delay_ms;
    e->state = E_RETRY;
    in->nretry++;
}

static void publish(struct mqtt_in *in, struct in_entry *e)
{
    e->state = E_INFLIGHT;
    const struct gust_pub_msg m = {
        .subject = e->subject, .data = e->data, .len = e->len, .headers = e->hdrs, .nheaders = e->nhdrs};
    /* One try, no wait: this is the network thread's loop, and a ring entry keeps the
     * message meanwhile. Refused (the bus down or busy), it gets no on_stored. */
    if (gust_publisher_send_msg(in->pub, &m, 0, in_on_stored, e) != 0) {
        schedule_retry(in, e);
    }
}

static void reject(struct mqtt_in *in, const struct mqtt_publish *p, const char *why)
{
    in->rejected++;
    /* Every rejection is counted; the log names the first ten, then every thousandth. */
    if (in->rejected <= 10 || in->rejected % 1000 == 0) {
        mqtt_host->log(in->inst, GUST_LOG_WARN, "rejected a message on topic %.*s: %s (%" PRIu64 " rejected so far)",
                       (int)p->topic_len, p->topic, why, in->rejected);
    }
}

int in_ring_accept(struct mqtt_in *in, const struct mqtt_publish *p, size_t payload_len)
{
    struct in_entry *e = &in->ring[(in->head + in->count) % in->cap];
    char *wrapped = NULL;
    const void *data = p->payload;
    size_t len = p->payload_len, slen;
    char *buf = e->buf; /* kept across the reset */
    size_t buf_cap = e->buf_cap;

    in->count++;
    memset(e, 0, sizeof(*e));
    e->buf = buf;
    e->buf_cap = buf_cap;
    e->in = in;
    e->epoch = in->epoch;
    e->id = p->id;
    e->qos = (uint8_t)p->qos;
    e->state = E_DONE;
    e->ack = 1; /* a rejected message is PUBACKed: redelivering it would not change it */
    in->received++;

    if (payload_len > in->max_payload || data == NULL) {
        char why[96];
        snprintf(why, sizeof(why), "payload of %zu bytes over max_payload (%zu)", payload_len, in->max_payload);
        reject(in, p, why);
        e->rc = MQTT_RC_QUOTA_EXCEEDED;
        return 0;
    }
    if (in->non_json != NJ_PASS && !mqtt_is_json_object(data, len)) {
        if (in->non_json == NJ_REJECT) {
            reject(in, p, "payload is not a JSON object (non_json reject)");
            e->rc = MQTT_RC_PAYLOAD_FORMAT_INVALID;
            return 0;
        }
        if (!(wrapped = mqtt_wrap_payload(p->topic, p->topic_len, data, len, &len))) {
            goto nomem;
        }
        data = wrapped;
        in->wrapped++;
    }
    struct mqtt_kept kept[MAX_HEADERS];
    size_t nkept = p->props ? mqtt_props_headers(p->props, p->props_len, in->k.headers.items, in->k.headers.n,
                                                 kept, MAX_HEADERS)
                            : 0;
    /* The buffer: the header array (malloc's alignment), the subject, the payload, then
     * the headers' names and values, each NUL-terminated. */
    size_t harr = nkept * sizeof(struct gust_header), htext = 0;
    for (size_t i = 0; i < nkept; i++) {
        htext += kept[i].nlen + 1 + kept[i].vlen + 1;
    }
    slen = in->subject ? strlen(in->subject) : strlen(in->prefix) + 2 + 7 * (p->topic_len + 1);
    size_t need = harr + slen + 1 + len + htext;
    if (e->buf_cap < need) {
        free(e->buf);
        e->buf_cap = 0;
        if (!(e->buf = malloc(need))) {
            goto nomem;
        }
        e->buf_cap = need;
    }
    char *subject = e->buf + harr;
    if (in->subject) {
        memcpy(subject, in->subject, slen + 1);
    } else {
        int n = mqtt_topic_to_subject(in->prefix, p->topic, p->topic_len, subject, slen + 1);
        slen = (size_t)(n < 0 ? 0 : n);
    }
    memcpy(subject + slen + 1, data, len);
    free(wrapped);
    struct gust_header *h = (struct gust_header *)(void *)e->buf;
    char *t = subject + slen + 1 + len;
    for (size_t i = 0; i < nkept; i++) {
        h[i].name = t;
        memcpy(t, kept[i].name, kept[i].nlen);
        t += kept[i].nlen;
        *t++ = '\0';
        h[i].value = t;
        memcpy(t, kept[i].value, kept[i].vlen);
        t += kept[i].vlen;
        *t++ = '\0';
    }
    e->hdrs = nkept ? h : NULL;
    e->nhdrs = nkept;
    e->subject = subject;
    e->data = subject + slen + 1;
    e->len = len;
    e->ack = 0;
    publish(in, e);
    return 0;

nomem:
    free(wrapped);
    /* Not PUBACKed: the caller drops the connection and the broker redelivers it. */
    e->ack = 0;
    return -1;
}

static void complete(struct mqtt_in *in, struct in_entry *e)
{
    if (e->status == 0) {
        e->state = E_DONE;
        e->ack = 1;
    } else if ((e->qos > 0 && e->epoch != in->epoch) || atomic_load(&in->stopping)) {
        e->state = E_DONE; /* QoS 1 and 2: the broker redelivers; QoS 0: gone, and counted */
        in->lost += e->qos == 0;
    } else {
        schedule_retry(in, e);
    }
}

void in_ring_progress(struct mqtt_in *in)
{
    size_t n;

    pthread_mutex_lock(&in->lock);
    n = in->cq_len;
    memcpy(in->cq_local, in->cq, n * sizeof(*in->cq));
    in->cq_len = 0;
    pthread_mutex_unlock(&in->lock);
    for (size_t i = 0; i < n; i++) {
        complete(in, &in->ring[in->cq_local[i]]);
    }

    if (in->nretry && !atomic_load(&in->stopping)) {
        int64_t now = gust_clock_mono_ms();
        for (size_t k = 0; k < in->count; k++) {
            struct in_entry *e = &in->ring[(in->head + k) % in->cap];
            if (e->state != E_RETRY || e->retry_at > now) {
                continue;
            }
            in->nretry--;
            if (e->qos > 0 && e->epoch != in->epoch) {
                e->state = E_DONE; /* the broker redelivers it on this connection */
            } else {
                publish(in, e);
            }
        }
    }

    while (in->count && in->ring[in->head].state == E_DONE) {
        struct in_entry *e = &in->ring[in->head];
        if (e->qos > 0 && e->ack && e->epoch == in->epoch && in->link.sock &&
            mqtt_wire_ack(&in->link.out, in->version, e->qos == 1 ? MQTT_PUBACK : MQTT_PUBREC, e->id, e->rc) != 0) {
            break; /* out of memory: try again on the next round */
        }
        if (e->buf_cap > KEEP_BUF) {
            free(e->buf);
            e->buf = NULL;
            e->buf_cap = 0;
        }
        e->state = E_FREE;
        in->head = (in->head + 1) % in->cap;
        in->count--;
    }
}
