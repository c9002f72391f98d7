/* POST /ingest/<suffix>: validate, publish to ev.<suffix>, answer 202 after the PubAck.
 *
 * The publish completes on a bus thread; the outcome travels back to the event loop
 * through an h2o multithread queue. The client may go away meanwhile, so the request
 * and the wait are linked through an anchor in the request's pool: whichever side
 * finishes first unlinks the other. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bus/bus.h"
#include "../conf/subject.h"
#include "json_check.h"
#include "internal.h"

#define SUBJECT_PREFIX "ev."
#define MAX_SUBJECT 256

struct ingest_wait {
    h2o_multithread_message_t msg; /* first: messages are cast back to the wait */
    struct gust_http *http;
    struct ingest_wait **anchor; /* in the request's pool; NULL once the request is gone */
    h2o_req_t *req;
    int64_t start_us;
    int status;
    uint64_t seq;
    char error[160];
    char subject[MAX_SUBJECT];
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The request's pool is being freed: the client is gone or the response was sent. */
static void on_req_dispose(void *p)
{
    struct ingest_wait **anchor = p;
    if (*anchor != NULL) {
        (*anchor)->req = NULL;
        (*anchor)->anchor = NULL;
    }
}

/* Bus thread. */
static void on_published(void *ud, int status, uint64_t seq, const char *error)
{
    struct ingest_wait *w = ud;
    w->status = status;
    w->seq = seq;
    if (status != 0) {
        snprintf(w->error, sizeof(w->error), "%s", error != NULL ? error : "publish failed");
    }
    h2o_multithread_send_message(&w->http->acks, &w->msg);
}

static void respond(struct ingest_wait *w)
{
    h2o_req_t *req = w->req;
    if (w->status == 0) {
        gust_metrics_observe_publish(now_us() - w->start_us);
        char body[MAX_SUBJECT + 64];
        int n = snprintf(body, sizeof(body), "{\"subject\":\"%s\",\"seq\":%" PRIu64 "}\n", w->subject, w->seq);
        gust_http_send(req, GUST_ROUTE_INGEST, 202, "application/json", body, (size_t)n);
    } else {
        char msg[220];
        snprintf(msg, sizeof(msg), "not stored: %s", w->error);
        gust_http_send_error(req, GUST_ROUTE_INGEST, 503, msg);
    }
}

/* Event loop: publishes completed. */
void gust_ingest_on_acks(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    (void)receiver;
    while (!h2o_linklist_is_empty(messages)) {
        struct ingest_wait *w = (struct ingest_wait *)messages->next; /* link is first */
        h2o_linklist_unlink(&w->msg.link);
        w->http->ingest_inflight--;
        if (w->req != NULL) {
            *w->anchor = NULL;
            respond(w);
        }
        free(w);
    }
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* "ev." + the suffix with %XX decoded, so that an encoded space or control character
 * is judged as what it stands for. Returns 0 when empty, too long or badly encoded. */
static int subject_from_suffix(h2o_iovec_t suffix, char out[MAX_SUBJECT])
{
    size_t n = sizeof(SUBJECT_PREFIX) - 1;
    memcpy(out, SUBJECT_PREFIX, n);
    for (size_t i = 0; i < suffix.len; i++) {
        char c = suffix.base[i];
        if (c == '%') {
            int hi = i + 2 < suffix.len ? hex_value(suffix.base[i + 1]) : -1;
            int lo = hi >= 0 ? hex_value(suffix.base[i + 2]) : -1;
            if (lo < 0) {
                return 0;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (n + 1 >= MAX_SUBJECT) {
            return 0;
        }
        out[n++] = c;
    }
    out[n] = '\0';
    return n > sizeof(SUBJECT_PREFIX) - 1 && memchr(out, '\0', n) == NULL;
}

void gust_ingest_handle(struct gust_http *http, h2o_req_t *req, h2o_iovec_t suffix)
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
        gust_http_send_error(req, GUST_ROUTE_INGEST, 405, "method not allowed: use POST");
        return;
    }
    char subject[MAX_SUBJECT];
    if (!subject_from_suffix(suffix, subject) ||
        !gust_subject_valid(subject + sizeof(SUBJECT_PREFIX) - 1, strlen(subject) - (sizeof(SUBJECT_PREFIX) - 1), 0)) {
        gust_http_send_error(req, GUST_ROUTE_INGEST, 400,
                             "invalid subject suffix: expected tokens of visible characters "
                             "separated by '.', no wildcards");
        return;
    }
    if (req->entity.base == NULL || req->entity.len == 0) {
        gust_http_send_error(req, GUST_ROUTE_INGEST, 400, "empty body");
        return;
    }
    if (req->entity.len > http->max_body) {
        char msg[96];
        snprintf(msg, sizeof(msg), "body over %zu bytes", http->max_body);
        gust_http_send_error(req, GUST_ROUTE_INGEST, 413, msg);
        return;
    }
    char why[200];
    if (!gust_json_object_valid(req->entity.base, req->entity.len, why, sizeof(why))) {
        gust_http_send_error(req, GUST_ROUTE_INGEST, 400, why);
        return;
    }
    struct ingest_wait *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        gust_http_send_error(req, GUST_ROUTE_INGEST, 503, "out of memory");
        return;
    }
    w->http = http;
    w->req = req;
    w->start_us = now_us();
    memcpy(w->subject, subject, sizeof(subject));
    if (gust_bus_publish_now(http->bus, w->subject, req->entity.base, req->entity.len, on_published, w) != 0) {
        free(w);
        gust_http_send_error(req, GUST_ROUTE_INGEST, 503, "bus unavailable");
        return;
    }
    /* From here on_published owns w, and may already have queued it. */
    http->ingest_inflight++;
    w->anchor = h2o_mem_alloc_shared(&req->pool, sizeof(*w->anchor), on_req_dispose);
    *w->anchor = w;
}
