/* The dead-letter routes: GET /dlq, POST /dlq/replay, POST /dlq/purge.
 *
 * Dead letters are messages of the DLQ stream (nats { dlq_stream; dlq_subjects; }) on
 * <prefix><unit>, each an envelope made by host/unit/dlq.c. The loop parses the request
 * (query string, or a JSON body for the POSTs) and hands it to the admin worker (see
 * admin.c): every call below blocks (host/bus/stream_ops.h), so none runs on the
 * event loop. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "../bus/bus.h"
#include "../bus/stream_ops.h"
#include "../common/json_out.h"
#include "../common/log.h"
#include "../conf/subject.h"
#include "internal.h"
#include "json_check.h"

#define LIST_DEFAULT 50
#define LIST_MAX 1000
#define REPLAY_DEFAULT 10000

static const char *str_at(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val s = yajl_tree_get(v, path, yajl_t_string);
    return s != NULL ? YAJL_GET_STRING(s) : NULL;
}

/* A bus error as the HTTP status to answer. */
static int status_of(int rc)
{
    return rc == GUST_ENOTFOUND ? 404 : rc == GUST_EAGAIN ? 503 : rc == GUST_ENOMEM ? 500 : 502;
}

/* The first dead letter with a sequence >= seq on filter (exact seq when filter is
 * NULL). Returns 0, 404 when there is none, or an HTTP status with why. */
static int get_letter(struct gust_http *http, uint64_t seq, const char *filter, struct gust_stored *l, char *why,
                      size_t why_size)
{
    int rc = gust_stream_get(http->bus, http->dlq_stream, seq, filter, l, why, why_size);
    return rc == 0 ? 0 : status_of(rc);
}

static int stream_last_seq(struct gust_http *http, uint64_t *last, uint64_t *msgs, char *why, size_t why_size)
{
    int rc = gust_stream_state(http->bus, http->dlq_stream, last, msgs, why, why_size);
    return rc == 0 ? 0 : rc == GUST_ENOTFOUND ? 503 : status_of(rc);
}

/* The subject filter of the request: one unit's, or every dead letter. */
static void filter_of(const struct gust_admin_job *job, char *out, size_t size)
{
    if (job->q.unit[0] != '\0') {
        snprintf(out, size, "%s%s", job->http->dlq_prefix, job->q.unit);
    } else {
        snprintf(out, size, "%s", job->http->dlq_filter);
    }
}

static void append_letter(struct gust_buf *out, const struct gust_http *http, const struct gust_stored *l)
{
    size_t plen = strlen(http->dlq_prefix);
    const char *unit = strncmp(l->subject, http->dlq_prefix, plen) == 0 ? l->subject + plen : l->subject;
    gust_buf_printf(out, "{\"seq\":%" PRIu64 ",\"subject\":", l->seq);
    gust_json_append_string(out, l->subject, strlen(l->subject));
    gust_buf_append(out, ",\"unit\":", 8);
    gust_json_append_string(out, unit, strlen(unit));
    gust_buf_append(out, ",\"stored_at\":", 13);
    gust_json_append_string(out, l->time, strlen(l->time));
    char why[8];
    if (gust_json_object_valid((const char *)l->data, l->len, 0, why, sizeof(why))) {
        gust_buf_append(out, ",\"envelope\":", 12);
        gust_buf_append(out, l->data, l->len);
    } else if (gust_utf8_valid((const char *)l->data, l->len)) {
        /* Not one of ours (published by hand, say): shown as it is. */
        gust_buf_append(out, ",\"raw\":", 7);
        gust_json_append_string(out, (const char *)l->data, l->len);
    } else {
        gust_buf_append(out, ",\"raw_base64\":", 14);
        gust_json_append_base64(out, l->data, l->len);
    }
    gust_buf_append(out, "}", 1);
}

/* Worker: GET /dlq. */
static void run_list(struct gust_admin_job *job)
{
    char why[512], filter[400];
    uint64_t last = 0, total = 0;
    int status = stream_last_seq(job->http, &last, &total, why, sizeof(why));
    if (status != 0) {
        gust_admin_fail(job, status, why);
        return;
    }
    filter_of(job, filter, sizeof(filter));
    struct gust_buf *out = &job->body;
    gust_buf_printf(out, "{\"stream\":");
    gust_json_append_string(out, job->http->dlq_stream, strlen(job->http->dlq_stream));
    gust_buf_printf(out, ",\"total\":%" PRIu64 ",\"dead_letters\":[", total);
    uint64_t seq = job->q.after_seq + 1, last_listed = 0;
    size_t n = 0;
    while (n < job->q.limit && seq <= last) {
        struct gust_stored l;
        status = get_letter(job->http, seq, filter, &l, why, sizeof(why));
        if (status == 404) {
            break;
        }
        if (status != 0) {
            gust_admin_fail(job, status, why);
            return;
        }
        gust_buf_append(out, n > 0 ? "," : "", n > 0 ? 1 : 0);
        append_letter(out, job->http, &l);
        last_listed = l.seq;
        seq = l.seq + 1;
        gust_stored_free(&l);
        n++;
    }
    /* A full page may have a next one: the client passes next_after_seq as after_seq. */
    if (n == job->q.limit && last_listed < last) {
        gust_buf_printf(out, "],\"count\":%zu,\"next_after_seq\":%" PRIu64 "}\n", n, last_listed);
    } else {
        gust_buf_printf(out, "],\"count\":%zu,\"next_after_seq\":null}\n", n);
    }
    job->status = 200;
}

/* Republishes one dead letter to its original subject, waits for the PubAck, then
 * deletes it. Returns 0, or fills why. */
static int replay_one(struct gust_http *http, const struct gust_stored *l, char *why, size_t why_size)
{
    char *text = malloc(l->len + 1);
    if (text == NULL) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    memcpy(text, l->data, l->len);
    text[l->len] = '\0';
    char perr[128];
    yajl_val env = yajl_tree_parse(text, perr, sizeof(perr));
    free(text);
    const char *subject = env != NULL ? str_at(env, "original_subject") : NULL;
    const char *payload = env != NULL ? str_at(env, "payload") : NULL;
    const char *payload_b64 = env != NULL ? str_at(env, "payload_base64") : NULL;
    if (subject == NULL || (payload == NULL && payload_b64 == NULL)) {
        yajl_tree_free(env);
        snprintf(why, why_size, "not a dead-letter envelope (no original_subject and payload)");
        return -1;
    }
    unsigned char *data = NULL;
    size_t len = 0;
    if (payload != NULL) {
        /* The envelope's string is the original text, decoded from JSON by yajl. */
        len = strlen(payload);
        data = (unsigned char *)strdup(payload);
    } else {
        data = gust_base64_decode(payload_b64, strlen(payload_b64), &len);
    }
    if (data == NULL) {
        yajl_tree_free(env);
        snprintf(why, why_size, "payload_base64 is not base64");
        return -1;
    }
    struct gust_pub pub = {.subject = subject, .data = data, .len = len};
    char berr[256];
    int rc = gust_bus_publish_wait(http->bus, &pub, NULL, berr, sizeof(berr));
    free(data);
    if (rc != 0) {
        snprintf(why, why_size, "republish to %s: %s", subject, berr);
        yajl_tree_free(env);
        return -1;
    }
    yajl_tree_free(env);
    if (gust_stream_delete(http->bus, http->dlq_stream, l->seq, berr, sizeof(berr)) != 0) {
        /* Stored again but still listed: a second replay would duplicate it. */
        snprintf(why, why_size, "republished, but not deleted: %s", berr);
        return -1;
    }
    return 0;
}

/* Worker: POST /dlq/replay. */
static void run_replay(struct gust_admin_job *job)
{
    char why[512], filter[400];
    uint64_t last = 0, total = 0;
    int status = stream_last_seq(job->http, &last, &total, why, sizeof(why));
    if (status != 0) {
        gust_admin_fail(job, status, why);
        return;
    }
    filter_of(job, filter, sizeof(filter));
    struct gust_buf errors = {0};
    size_t replayed = 0, failed = 0, seen = 0;
    /* Up to the stream's end as it is now: a replayed message that fails again comes
     * back with a higher sequence and must not be replayed in a loop. */
    uint64_t seq = job->q.seq != 0 ? job->q.seq : 1;
    if (job->q.seq != 0) {
        last = job->q.seq; /* one given letter, whatever the stream's end */
    }
    int more = 0;
    while (seq <= last) {
        if (seen == job->q.limit) {
            more = 1;
            break;
        }
        struct gust_stored l;
        status = get_letter(job->http, seq, job->q.seq != 0 ? NULL : filter, &l, why, sizeof(why));
        if (status == 404) {
            if (job->q.seq != 0) {
                gust_buf_free(&errors);
                char msg[80];
                snprintf(msg, sizeof(msg), "no dead letter with seq %" PRIu64, job->q.seq);
                gust_admin_fail(job, 404, msg);
                return;
            }
            break;
        }
        if (status != 0) {
            gust_buf_free(&errors);
            gust_admin_fail(job, status, why);
            return;
        }
        seen++;
        if (replay_one(job->http, &l, why, sizeof(why)) == 0) {
            replayed++;
        } else {
            failed++;
            gust_warn("dlq: replay of seq %" PRIu64 " failed: %s", l.seq, why);
            if (failed <= 20) {
                gust_buf_printf(&errors, "%s{\"seq\":%" PRIu64 ",\"error\":", failed > 1 ? "," : "", l.seq);
                gust_json_append_string(&errors, why, strlen(why));
                gust_buf_append(&errors, "}", 1);
            }
        }
        seq = l.seq + 1;
        gust_stored_free(&l);
        if (job->q.seq != 0) {
            break;
        }
    }
    gust_info("dlq: replayed %zu dead letter(s), %zu failed", replayed, failed);
    job->status = 200;
    gust_buf_printf(&job->body, "{\"replayed\":%zu,\"failed\":%zu,\"more\":%s,\"errors\":[", replayed, failed,
                    more ? "true" : "false");
    if (errors.len > 0) {
        gust_buf_append(&job->body, errors.data, errors.len);
    }
    gust_buf_append(&job->body, "]}\n", 3);
    gust_buf_free(&errors);
}

/* Worker: POST /dlq/purge. */
static void run_purge(struct gust_admin_job *job)
{
    char why[512], filter[400];
    filter_of(job, filter, sizeof(filter));
    uint64_t purged = 0;
    int rc = gust_stream_purge(job->http->bus, job->http->dlq_stream, filter, 0, &purged, why, sizeof(why));
    if (rc != 0) {
        gust_admin_fail(job, status_of(rc), why);
        return;
    }
    gust_info("dlq: purged %" PRIu64 " dead letter(s) on %s", purged, filter);
    job->status = 200;
    gust_buf_printf(&job->body, "{\"purged\":%" PRIu64 ",\"filter\":", purged);
    gust_json_append_string(&job->body, filter, strlen(filter));
    gust_buf_append(&job->body, "}\n", 2);
}

const char *gust_dlq_prepare(enum gust_dlq_op op, const char *query, size_t qlen, const char *body, size_t blen,
                             struct gust_dlq_query *q, void (**run)(struct gust_admin_job *))
{
    *q = (struct gust_dlq_query){.limit = op == GUST_DLQ_LIST ? LIST_DEFAULT : REPLAY_DEFAULT};
    const char *bad = gust_dlq_query_parse(query, qlen, body, blen, q);
    if (bad != NULL) {
        return bad;
    }
    if (op == GUST_DLQ_LIST) {
        if (q->limit > LIST_MAX) {
            q->limit = LIST_MAX;
        }
        *run = run_list;
    } else if (op == GUST_DLQ_REPLAY) {
        int selectors = (q->seq != 0) + (q->unit[0] != '\0') + (q->all != 0);
        if (selectors != 1) {
            return "replay: give exactly one of seq, unit or all (query string or JSON body)";
        }
        *run = run_replay;
    } else {
        /* Deleting every dead letter is never the default: it must be asked for. */
        if (q->seq != 0 || (q->unit[0] != '\0') + (q->all != 0) != 1) {
            return "purge: give exactly one of unit or all";
        }
        *run = run_purge;
    }
    return NULL;
}

void gust_dlq_handle(struct gust_http *http, h2o_req_t *req, h2o_iovec_t rest)
{
    int get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"));
    int post = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"));
    int list = rest.len == 0 || h2o_memis(rest.base, rest.len, H2O_STRLIT("/"));
    int replay = h2o_memis(rest.base, rest.len, H2O_STRLIT("/replay"));
    int purge = h2o_memis(rest.base, rest.len, H2O_STRLIT("/purge"));
    if (!list && !replay && !purge) {
        gust_http_send_error(req, GUST_ROUTE_DLQ, 404, "no such route");
        return;
    }
    if ((list && !get) || (!list && !post)) {
        const char *allow = list ? "GET" : "POST";
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allow, strlen(allow));
        gust_http_send_error(req, GUST_ROUTE_DLQ, 405, "method not allowed");
        return;
    }
    enum gust_dlq_op op = list ? GUST_DLQ_LIST : replay ? GUST_DLQ_REPLAY : GUST_DLQ_PURGE;
    struct gust_dlq_query q;
    size_t qlen = req->query_at != SIZE_MAX ? req->path.len - req->query_at - 1 : 0;
    void (*run)(struct gust_admin_job *);
    const char *bad = gust_dlq_prepare(op, qlen > 0 ? req->path.base + req->query_at + 1 : "", qlen, req->entity.base,
                                       req->entity.base != NULL ? req->entity.len : 0, &q, &run);
    if (bad != NULL) {
        gust_http_send_error(req, GUST_ROUTE_DLQ, 400, bad);
        return;
    }
    gust_admin_submit(http, req, GUST_ROUTE_DLQ, run, &q);
}
