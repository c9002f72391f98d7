/* POST /ingest/<suffix>: validate, publish to <prefix><suffix> (ev.<suffix> with
 * `subjects ev.>;`), answer 202 after the PubAck.
 *
 * The publish goes out on ingest's own NATS connection, which the event loop drives
 * (nats_loop.c), and its outcome comes back on the loop. The client may go away
 * meanwhile, so the request and the wait are linked through an anchor in the request's
 * pool: whichever side finishes first unlinks the other. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingest_subject.h"
#include "json_check.h"
#include "internal.h"
#include "nats_loop.h"

#define MAX_SUBJECT GUST_INGEST_SUBJECT_MAX

struct ingest_wait {
    struct gust_http *http;
    struct ingest_wait **anchor; /* in the request's pool; NULL once the request is gone */
    h2o_req_t *req;
    int64_t start_us;
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

static void respond(struct ingest_wait *w, int status, uint64_t seq, const char *error)
{
    h2o_req_t *req = w->req;
    if (status == 0) {
        gust_metrics_observe_publish(now_us() - w->start_us);
        char body[MAX_SUBJECT + 64];
        int n = snprintf(body, sizeof(body), "{\"subject\":\"%s\",\"seq\":%" PRIu64 "}\n", w->subject, seq);
        gust_http_send(req, GUST_ROUTE_INGEST, 202, "application/json", body, (size_t)n);
    } else {
        char msg[220];
        snprintf(msg, sizeof(msg), "not stored: %s", error != NULL ? error : "publish failed");
        gust_http_send_error(req, GUST_ROUTE_INGEST, 503, msg);
    }
}

/* On the loop: the publish completed (or failed). */
static void on_published(void *ud, int status, uint64_t seq, const char *error)
{
    struct ingest_wait *w = ud;
    w->http->ingest_inflight--;
    if (w->req != NULL) {
        *w->anchor = NULL;
        respond(w, status, seq, error);
    }
    free(w);
}

void gust_ingest_handle(struct gust_http *http, h2o_req_t *req, h2o_iovec_t suffix)
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
        gust_http_send_error(req, GUST_ROUTE_INGEST, 405, "method not allowed: use POST");
        return;
    }
    char subject[MAX_SUBJECT];
    if (!gust_ingest_subject(http->subject_prefix, suffix.base, suffix.len, subject)) {
        gust_http_send_error(req, GUST_ROUTE_INGEST, 400,
                             "invalid subject suffix: expected tokens of visible characters "
                             "separated by '.', no wildcards");
        return;
    }
    if (req->entity.base == NULL || req->entity.len == 0) {
        gust_http_send_error(req, GUST_ROUTE_INGEST, 400, "empty body");
        return;
    }
    size_t max_body = gust_http_policy(http)->s.max_body;
    if (req->entity.len > max_body) {
        char msg[96];
        snprintf(msg, sizeof(msg), "body over %zu bytes", max_body);
        gust_http_send_error(req, GUST_ROUTE_INGEST, 413, msg);
        return;
    }
    char why[200];
    if (!gust_json_object_valid(req->entity.base, req->entity.len, gust_http_policy(http)->s.max_depth, why,
                                sizeof(why))) {
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
    int rc = nats_loop_publish(http->ingest_bus, w->subject, req->entity.base, req->entity.len, on_published, w);
    if (rc != 0) {
        free(w);
        if (rc == GUST_EINVAL) {
            gust_http_send_error(req, GUST_ROUTE_INGEST, 413, "body over the bus's max_payload");
        } else {
            gust_http_send_error(req, GUST_ROUTE_INGEST, 503, "bus unavailable");
        }
        return;
    }
    /* From here on_published owns w; it runs on a later turn of the loop. */
    http->ingest_inflight++;
    w->anchor = h2o_mem_alloc_shared(&req->pool, sizeof(*w->anchor), on_req_dispose);
    *w->anchor = w;
}
