/* reply_to: the answer of each 2xx, published to a subject as an event before its
 * message is acked (enrichment: a flow reads it next).
 *
 * The event is the answer's body when it is one JSON value, else {"body_base64": "..."}
 * (an empty body too): a flow always gets JSON, and a binary or text answer is not lost.
 * Headers: Gust-Status (the HTTP status), Content-Type (the answer's, when it had one) and
 * Gust-Request-Id (the message's own Nats-Msg-Id, when it had one). Its Nats-Msg-Id is
 * gust-reply.<unit>.<the message's stream sequence>: the same message delivered again (a
 * RETRY after its answer was published, a crash before the ack) publishes the same id,
 * which the stream stores once within its duplicate window.
 *
 * deliver() returns only when every answer's PubAck (or failure) is in: a message whose
 * answer was not stored is a RETRY (the far end gets it again: at least once, as every
 * delivery). An answer over HTTP_OUT_REPLY_MAX (as published) rejects its message. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/source.h"
#include "http_out.h"

/* How long a publish waits while the bus says wait (GUST_EAGAIN) before its message is
 * a RETRY. */
#define PUBLISH_GIVE_UP_MS 10000

struct slot {
    atomic_int state; /* 0: pending, 1: stored, 2: failed */
    char error[120];
};

struct http_out_reply {
    const struct http_out_conf *conf;
    const char *unit;
    struct gust_publisher *pub;
    struct slot *slots;
    size_t nslots;
    struct gust_buf event;
};

static void published(void *ud, int status, uint64_t seq, const char *error)
{
    struct slot *s = ud;
    (void)seq;
    if (status != 0) {
        snprintf(s->error, sizeof(s->error), "%s", error ? error : "refused");
    }
    atomic_store(&s->state, status == 0 ? 1 : 2);
}

int http_out_reply_create(struct http_out_reply **out, const struct gust_host_api *api,
                          struct gust_instance *inst, const struct http_out_conf *conf, struct gust_err *err)
{
    struct http_out_reply *r = calloc(1, sizeof(*r));
    struct gust_publisher_conf pc = {.api = api, .inst = inst, .max_inflight = 0};

    *out = NULL;
    if (r == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
    }
    r->conf = conf;
    r->unit = api->instance_name(inst);
    int rc = gust_publisher_create(&r->pub, &pc, err);
    if (rc != 0) {
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* The event of answer a into r->event; -1 when out of memory. */
static int make_event(struct http_out_reply *r, const struct http_out_answer *a)
{
    char why[128];

    r->event.len = 0;
    if (gust_json_check(a->body, a->len, NULL, NULL, why, sizeof(why)) > 0) {
        return gust_buf_append(&r->event, a->body, a->len);
    }
    return gust_buf_append(&r->event, "{\"body_base64\": ", 16) != 0 ||
                   gust_json_append_base64(&r->event, (const unsigned char *)a->body, a->len) != 0 ||
                   gust_buf_append(&r->event, "}", 1) != 0
               ? -1
               : 0;
}

/* Publishes message i's answer; fills its slot, or its result when it cannot be sent. */
static void publish_one(struct http_out_reply *r, struct http_out_client *cl, const struct gust_msg *m,
                        size_t i, struct gust_result *res)
{
    struct http_out_answer a;
    struct slot *s = &r->slots[i];

    if (http_out_client_answer(cl, i, &a) != 0 || make_event(r, &a) != 0) {
        res->status = GUST_RETRY;
        snprintf(res->error, sizeof(res->error), "reply_to %.100s: out of memory", r->conf->reply_to);
        return;
    }
    if (r->event.len > HTTP_OUT_REPLY_MAX) {
        res->status = GUST_REJECTED;
        snprintf(res->error, sizeof(res->error),
                 "reply_to %.100s: the answer is %zu bytes as published, over %d", r->conf->reply_to,
                 r->event.len, HTTP_OUT_REPLY_MAX);
        return;
    }
    char status[8], id[300];
    struct gust_header h[3];
    size_t nh = 0;
    const char *req_id = http_out_msg_header(m, "Nats-Msg-Id");

    snprintf(status, sizeof(status), "%d", a.status);
    snprintf(id, sizeof(id), "gust-reply.%s.%llu", r->unit, (unsigned long long)m->stream_seq);
    h[nh++] = (struct gust_header){"Gust-Status", status};
    if (a.ctype[0] != '\0') {
        h[nh++] = (struct gust_header){"Content-Type", a.ctype};
    }
    if (req_id != NULL) {
        h[nh++] = (struct gust_header){"Gust-Request-Id", req_id};
    }
    struct gust_pub_msg pm = {r->conf->reply_to, r->event.data, r->event.len, id, h, nh};
    atomic_store(&s->state, 0);
    s->error[0] = '\0';
    int rc = gust_publisher_send_msg(r->pub, &pm, gust_clock_mono_ms() + PUBLISH_GIVE_UP_MS, published, s);
    if (rc != 0) {
        snprintf(s->error, sizeof(s->error), "%s", rc == GUST_EAGAIN ? "the bus is busy or away" : "refused");
        atomic_store(&s->state, 2);
    }
}

void http_out_reply_publish(struct http_out_reply *r, struct http_out_client *cl, const struct gust_msg *msgs,
                            size_t n, struct gust_result *results)
{
    if (n > r->nslots) {
        struct slot *s = realloc(r->slots, n * sizeof(*s));
        if (s == NULL) {
            for (size_t i = 0; i < n; i++) {
                if (results[i].status == GUST_DELIVERED) {
                    results[i].status = GUST_RETRY;
                    snprintf(results[i].error, sizeof(results[i].error), "reply_to: out of memory");
                }
            }
            return;
        }
        r->slots = s;
        r->nslots = n;
    }
    for (size_t i = 0; i < n; i++) {
        atomic_store(&r->slots[i].state, 1); /* nothing to publish */
        if (results[i].status == GUST_DELIVERED) {
            publish_one(r, cl, &msgs[i], i, &results[i]);
        }
    }
    /* Every outcome comes within nats { publish_timeout } (the host's promise): the
     * slots are this call's until then. */
    while (gust_publisher_wait(r->pub, 1000) > 0) {
    }
    for (size_t i = 0; i < n; i++) {
        if (results[i].status == GUST_DELIVERED && atomic_load(&r->slots[i].state) != 1) {
            results[i].status = GUST_RETRY;
            snprintf(results[i].error, sizeof(results[i].error), "reply_to %.60s: answer not stored: %.100s",
                     r->conf->reply_to, r->slots[i].error);
        }
    }
}

void http_out_reply_destroy(struct http_out_reply *r)
{
    if (r == NULL) {
        return;
    }
    gust_publisher_destroy(r->pub);
    gust_buf_free(&r->event);
    free(r->slots);
    free(r);
}
