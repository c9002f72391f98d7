/* POST /ingest/<suffix>: validate, publish to <prefix><suffix> (ev.<suffix> with
 * `subjects ev.>;`), answer 202 after the PubAck.
 *
 * The publish goes out on ingest's own NATS connection, which the event loop drives
 * (host/bus/ingest_link.c), and its outcome comes back on the loop. The client may go
 * away meanwhile, so the request and the wait are linked through an anchor in the
 * request's pool: whichever side finishes first unlinks the other.
 *
 * An Idempotency-Key (or Nats-Msg-Id) header becomes the message's Nats-Msg-Id, so a
 * client that retries after an unknown outcome stores the event once within the
 * stream's duplicate window; the repeat is answered 202 with "duplicate": true. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingest_subject.h"
#include "ingest_trace.h"
#include "json_check.h"
#include "internal.h"
#include "../bus/ingest_link.h"

#define MAX_SUBJECT GUST_INGEST_SUBJECT_MAX
#define MAX_MSG_ID GUST_INGEST_MSG_ID_MAX

struct ingest_wait {
    struct gust_http *http;
    struct ingest_wait **anchor; /* in the request's pool; NULL once the request is gone */
    h2o_req_t *req;
    enum gust_route route;
    int64_t start_us;
    struct gust_ingest_trace trace;
    char subject[MAX_SUBJECT];
};

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
    if (status == 0 || status == GUST_PUBLISH_DUPLICATE) {
        gust_metrics_observe_publish((int64_t)(gust_clock_mono_ns() / 1000u) - w->start_us);
        char body[MAX_SUBJECT + 80];
        int n = snprintf(body, sizeof(body), "{\"subject\":\"%s\",\"seq\":%" PRIu64 "%s}\n", w->subject, seq,
                         status == GUST_PUBLISH_DUPLICATE ? ",\"duplicate\":true" : "");
        gust_http_send(req, w->route, 202, "application/json", body, (size_t)n);
    } else {
        gust_ingest_answer_failed(req, w->route, status, error);
    }
}

void gust_ingest_answer_failed(h2o_req_t *req, enum gust_route route, int status, const char *error)
{
    char msg[400];
    if (status == GUST_EIO) {
        snprintf(msg, sizeof(msg), "not stored: %s", error != NULL ? error : "publish failed");
    } else {
        /* Sent, but its PubAck never came (or made no sense): JetStream may well
         * have stored it. */
        snprintf(msg, sizeof(msg),
                 "outcome unknown: %s; the event may have been stored (retry with the same Idempotency-Key "
                 "header to store it once)",
                 error != NULL ? error : "no PubAck");
    }
    gust_http_send_error(req, route, 503, msg);
}

void gust_ingest_answer_unsent(h2o_req_t *req, enum gust_route route, int rc)
{
    if (rc == GUST_EINVAL) {
        gust_http_send_error(req, route, 413, "body over the bus's max_payload");
    } else if (rc == GUST_EIO) {
        gust_http_send_error(req, route, 503, "not stored: no stream takes this subject");
    } else {
        gust_http_send_error(req, route, 503, "not stored: bus unavailable");
    }
}

/* On the loop: the publish completed (or failed). */
static void on_published(void *ud, int status, uint64_t seq, const char *error)
{
    struct ingest_wait *w = ud;
    w->http->ingest_inflight--;
    int ok = status == 0 || status == GUST_PUBLISH_DUPLICATE;
    gust_ingest_trace_end(&w->trace, w->route == GUST_ROUTE_WEBHOOK ? "webhook" : "ingest", w->subject, ok ? seq : 0,
                          ok ? 202 : 503, ok ? NULL : error != NULL ? error : "not stored");
    if (status == 0) { /* stored: an arrow of the console (GET /topology) */
        gust_tally_add(w->route == GUST_ROUTE_WEBHOOK ? &w->http->webhooked : &w->http->ingested, w->subject, 1);
    }
    if (w->req != NULL) {
        *w->anchor = NULL;
        respond(w, status, seq, error);
    }
    free(w);
}

int gust_ingest_msg_id(h2o_req_t *req, const char *const *names, size_t nnames,
                       char out[GUST_INGEST_MSG_ID_MAX + 1])
{
    out[0] = '\0';
    for (size_t k = 0; k < nnames; k++) {
        ssize_t i = h2o_find_header_by_str(&req->headers, names[k], strlen(names[k]), -1);
        if (i < 0) {
            continue;
        }
        h2o_iovec_t v = req->headers.entries[i].value;
        if (v.len >= 2 && v.base[0] == '"' && v.base[v.len - 1] == '"') {
            v.base++;
            v.len -= 2;
        }
        if (v.len == 0 || v.len > MAX_MSG_ID ||
            h2o_find_header_by_str(&req->headers, names[k], strlen(names[k]), i) >= 0) {
            return -1;
        }
        for (size_t j = 0; j < v.len; j++) {
            if (v.base[j] < 0x21 || v.base[j] > 0x7e) {
                return -1;
            }
        }
        if (out[0] != '\0' && (strlen(out) != v.len || memcmp(out, v.base, v.len) != 0)) {
            return -1; /* both headers, saying different things */
        }
        memcpy(out, v.base, v.len);
        out[v.len] = '\0';
    }
    return 0;
}

void gust_ingest_publish(struct gust_http *http, h2o_req_t *req, enum gust_route route, const struct gust_pub_msg *m)
{
    struct ingest_wait *w = calloc(1, sizeof(*w));
    if (w == NULL || strlen(m->subject) >= sizeof(w->subject)) {
        free(w);
        gust_http_send_error(req, route, 503, "not stored: out of memory");
        return;
    }
    w->http = http;
    w->req = req;
    w->route = route;
    w->start_us = (int64_t)(gust_clock_mono_ns() / 1000u);
    snprintf(w->subject, sizeof(w->subject), "%s", m->subject);
    struct gust_pub_msg pm = *m;
    gust_ingest_trace_begin(req, &pm, &w->trace);
    /* Linked before the publish: its outcome may come before it returns. */
    http->ingest_inflight++;
    w->anchor = h2o_mem_alloc_shared(&req->pool, sizeof(*w->anchor), on_req_dispose);
    *w->anchor = w;
    int rc = gust_ingest_link_publish(http->ingest_bus, &pm, on_published, w);
    if (rc != 0) {
        /* Not sent, and on_published will not run. */
        http->ingest_inflight--;
        *w->anchor = NULL;
        free(w);
        gust_ingest_answer_unsent(req, route, rc);
    }
}

/* 0 with the subject and the message id ("" when none) filled in, or -1 once the
 * request is answered (4xx, counted under route). */
static int check(struct gust_http *http, h2o_req_t *req, enum gust_route route, h2o_iovec_t suffix,
                      char subject[GUST_INGEST_SUBJECT_MAX], char msg_id[GUST_INGEST_MSG_ID_MAX + 1])
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
        gust_http_send_error(req, route, 405, "method not allowed: use POST");
        return -1;
    }
    if (!gust_ingest_subject(http->subject_prefix, suffix.base, suffix.len, subject)) {
        gust_http_send_error(req, route, 400,
                             "invalid subject suffix: expected tokens of visible characters "
                             "separated by '.', no wildcards");
        return -1;
    }
    if (req->entity.base == NULL || req->entity.len == 0) {
        gust_http_send_error(req, route, 400, "empty body");
        return -1;
    }
    size_t max_body = gust_http_policy(http)->s.max_body;
    if (req->entity.len > max_body) {
        char msg[96];
        snprintf(msg, sizeof(msg), "body over %zu bytes", max_body);
        gust_http_send_error(req, route, 413, msg);
        return -1;
    }
    char why[200];
    if (!gust_json_object_valid(req->entity.base, req->entity.len, gust_http_policy(http)->s.max_depth, why,
                                sizeof(why))) {
        gust_http_send_error(req, route, 400, why);
        return -1;
    }
    static const char *const id_headers[] = {"idempotency-key", "nats-msg-id"};
    if (gust_ingest_msg_id(req, id_headers, 2, msg_id) != 0) {
        gust_http_send_error(req, route, 400,
                             "Idempotency-Key (or Nats-Msg-Id): one value of 1 to 200 visible ASCII characters");
        return -1;
    }
    return 0;
}

void gust_ingest_route(struct gust_http *http, h2o_req_t *req, enum gust_route route, h2o_iovec_t suffix,
                       gust_ingest_publish_fn publish)
{
    char subject[MAX_SUBJECT];
    char msg_id[MAX_MSG_ID + 1];
    if (check(http, req, route, suffix, subject, msg_id) != 0) {
        return;
    }
    struct gust_pub_msg m = {
        .subject = subject,
        .data = req->entity.base,
        .len = req->entity.len,
        .msg_id = msg_id[0] != '\0' ? msg_id : NULL,
    };
    publish(http, req, route, &m);
}
