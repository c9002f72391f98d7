/* POST /call/<suffix>, and webhooks with `respond flow`: request/reply through a flow.
 *
 * The event is published as ingest publishes it (stored before anything else), with
 * one more header, GUST_REPLY_TO_HEADER: the ingest link's call inbox plus this call's
 * id (bus reply.h). The flow that handles the event calls reply(value [, status]); the
 * process that ran it (this one or another of a cluster) publishes the value to that
 * inbox, and the link hands it back here on the loop. The call is answered with it,
 * or with 504 once call_timeout has passed since the request came: the event stays
 * stored and is processed all the same.
 *
 * A call waits in a table by id until it is answered, timed out or its client goes
 * away; a reply for an id not in the table (a redelivery, a reply after the timeout)
 * is dropped. The publish has its own life: its outcome may come before or after the
 * reply, so a wait is freed only once both its publish is done and it has left the
 * table. The request is reached through an anchor in its pool, as in ingest.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/ingest_link.h"
#include "../bus/reply.h"
#include "../common/log.h"
#include "ingest_trace.h"
#include "internal.h"

#define BUCKETS 1024 /* ids are sequential: a chain holds one call per 1024 waiting */

struct call_wait {
    struct gust_calls *calls;
    struct call_wait **anchor; /* in the request's pool; NULL once the request is gone */
    h2o_req_t *req;            /* NULL once answered or gone */
    enum gust_route route;
    uint64_t id;
    int published; /* the publish's outcome came (or it was never sent) */
    struct gust_ingest_trace trace;
    char subject[GUST_INGEST_SUBJECT_MAX];
    int waiting;   /* in the table */
    h2o_timeout_entry_t timer;
    struct call_wait *next; /* in its bucket */
};

struct gust_calls {
    struct gust_http *http;
    h2o_timeout_t timeout;
    uint64_t next_id;
    size_t waiting;
    struct call_wait *buckets[BUCKETS];
};

static struct call_wait **bucket_of(struct gust_calls *calls, uint64_t id)
{
    return &calls->buckets[id % BUCKETS];
}

/* Leaves the table (and the request), and goes once its publish is done too. */
static void finish(struct call_wait *w)
{
    struct gust_calls *calls = w->calls;
    if (w->waiting) {
        for (struct call_wait **p = bucket_of(calls, w->id); *p != NULL; p = &(*p)->next) {
            if (*p == w) {
                *p = w->next;
                break;
            }
        }
        w->waiting = 0;
        calls->waiting--;
    }
    if (h2o_timeout_is_linked(&w->timer)) {
        h2o_timeout_unlink(&w->timer);
    }
    if (w->anchor != NULL) {
        *w->anchor = NULL;
        w->anchor = NULL;
    }
    w->req = NULL;
    if (w->published) {
        free(w);
    }
}

static void on_req_dispose(void *p)
{
    struct call_wait **anchor = p;
    struct call_wait *w = *anchor;
    if (w != NULL) {
        w->anchor = NULL; /* its memory is going */
        finish(w);
    }
}

static void on_timeout(h2o_timeout_entry_t *entry)
{
    struct call_wait *w = H2O_STRUCT_FROM_MEMBER(struct call_wait, timer, entry);
    uint64_t ms = w->calls->timeout.timeout;
    char msg[160];
    if (ms % 1000 == 0) {
        snprintf(msg, sizeof(msg), "no reply within %" PRIu64 "s", ms / 1000);
    } else {
        snprintf(msg, sizeof(msg), "no reply within %" PRIu64 "ms", ms);
    }
    if (!w->published) {
        /* Not even its PubAck came: say so, it may not be stored. */
        size_t n = strlen(msg);
        snprintf(msg + n, sizeof(msg) - n, "; the event's store is not confirmed yet");
    }
    h2o_req_t *req = w->req;
    enum gust_route route = w->route;
    finish(w); /* first: w may be gone after it, the request stays until answered */
    if (req != NULL) {
        gust_http_send_error(req, route, 504, msg);
    }
}

/* On the loop: the publish completed (or failed). */
static void on_published(void *ud, int status, uint64_t seq, const char *error)
{
    struct call_wait *w = ud;
    w->calls->http->ingest_inflight--;
    w->published = 1;
    int ok = status == 0 || status == GUST_PUBLISH_DUPLICATE;
    gust_ingest_trace_end(&w->trace, w->route == GUST_ROUTE_WEBHOOK ? "webhook" : "call", w->subject, ok ? seq : 0,
                          0, ok ? NULL : error != NULL ? error : "not stored");
    if (!w->waiting) {
        free(w); /* answered (or gone) before its PubAck came */
        return;
    }
    if (status == 0) {
        return; /* stored: the reply (or the timeout) answers it */
    }
    h2o_req_t *req = w->req;
    enum gust_route route = w->route;
    finish(w);
    if (req == NULL) {
        return;
    }
    if (status == GUST_PUBLISH_DUPLICATE) {
        /* Stored before under the same id: the flow replied to the first request. */
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "duplicate: this Idempotency-Key was stored before (seq %" PRIu64 "); its reply went to the "
                 "first request",
                 seq);
        gust_http_send_error(req, route, 409, msg);
    } else {
        gust_ingest_answer_failed(req, route, status, error);
    }
}

/* On the loop: a flow's reply came (ingest_link.h). */
static void on_reply(void *ud, uint64_t id, int status, const void *data, size_t len)
{
    struct gust_calls *calls = ud;
    struct call_wait *w = *bucket_of(calls, id);
    while (w != NULL && w->id != id) {
        w = w->next;
    }
    if (w == NULL) {
        gust_debug("http: a reply to call %" PRIu64 ", which is answered or gone", id);
        return;
    }
    h2o_req_t *req = w->req;
    enum gust_route route = w->route;
    finish(w);
    if (req != NULL) {
        gust_http_send(req, route, status, "application/json", data, len);
    }
}

void gust_call_publish(struct gust_http *http, h2o_req_t *req, enum gust_route route, const struct gust_pub_msg *m)
{
    struct gust_calls *calls = http->calls;
    struct call_wait *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        gust_http_send_error(req, route, 503, "not stored: out of memory");
        return;
    }
    w->calls = calls;
    w->req = req;
    w->route = route;
    w->id = ++calls->next_id;
    char to[GUST_REPLY_TO_MAX + 1];
    if (gust_ingest_link_reply_subject(http->ingest_bus, w->id, to, sizeof(to)) == 0) {
        free(w);
        gust_http_send_error(req, route, 503, "not stored: no reply subject");
        return;
    }
    /* The caller's headers and the reply's, in the request's pool. */
    struct gust_header *headers = h2o_mem_alloc_pool(&req->pool, (m->nheaders + 1) * sizeof(*headers));
    if (m->nheaders > 0) {
        memcpy(headers, m->headers, m->nheaders * sizeof(*headers));
    }
    headers[m->nheaders] = (struct gust_header){GUST_REPLY_TO_HEADER, to};
    struct gust_pub_msg pm = *m;
    pm.headers = headers;
    pm.nheaders = m->nheaders + 1;
    snprintf(w->subject, sizeof(w->subject), "%s", m->subject);
    gust_ingest_trace_begin(req, &pm, &w->trace);

    /* In the table and linked before the publish: its outcome may come before it
     * returns, and a reply right after. */
    struct call_wait **b = bucket_of(calls, w->id);
    w->next = *b;
    *b = w;
    w->waiting = 1;
    calls->waiting++;
    w->timer.cb = on_timeout;
    h2o_timeout_link(http->ctx.loop, &calls->timeout, &w->timer);
    w->anchor = h2o_mem_alloc_shared(&req->pool, sizeof(*w->anchor), on_req_dispose);
    *w->anchor = w;
    http->ingest_inflight++;
    int rc = gust_ingest_link_publish(http->ingest_bus, &pm, on_published, w);
    if (rc != 0) {
        /* Not sent, and on_published will not run. */
        http->ingest_inflight--;
        w->published = 1;
        finish(w);
        gust_ingest_answer_unsent(req, route, rc);
    }
}

int gust_calls_create(struct gust_http *http, int64_t timeout_ms)
{
    struct gust_calls *calls = calloc(1, sizeof(*calls));
    if (calls == NULL) {
        return GUST_ENOMEM;
    }
    calls->http = http;
    h2o_timeout_init(http->ctx.loop, &calls->timeout, (uint64_t)timeout_ms);
    http->calls = calls;
    gust_ingest_link_on_replies(http->ingest_bus, on_reply, calls);
    return 0;
}

void gust_calls_set_timeout(struct gust_http *http, int64_t timeout_ms)
{
    /* Every wait is linked to this one timeout: a change moves their deadlines too,
     * in the order they came. */
    if (http->calls != NULL && timeout_ms > 0) {
        http->calls->timeout.timeout = (uint64_t)timeout_ms;
    }
}

size_t gust_calls_waiting(const struct gust_http *http)
{
    return http->calls != NULL ? http->calls->waiting : 0;
}

void gust_calls_close(struct gust_http *http)
{
    struct gust_calls *calls = http->calls;
    if (calls == NULL) {
        return;
    }
    for (size_t i = 0; i < BUCKETS; i++) {
        while (calls->buckets[i] != NULL) {
            struct call_wait *w = calls->buckets[i];
            h2o_req_t *req = w->req;
            enum gust_route route = w->route;
            w->published = 1; /* the link is gone: no outcome will come */
            finish(w);
            if (req != NULL) {
                gust_http_send_error(req, route, 503, "shutting down: no reply came in time");
            }
        }
    }
    h2o_timeout_dispose(http->ctx.loop, &calls->timeout);
    http->calls = NULL;
    free(calls);
}
