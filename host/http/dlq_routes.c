/* The dead-letter routes: GET /dlq, POST /dlq/replay, POST /dlq/purge.
 *
 * Dead letters are messages of the DLQ stream (nats { dlq_stream; dlq_subjects; }) on
 * <prefix><unit>, each an envelope made by host/unit/dlq.c. The loop parses the request
 * (query string, or a JSON body for the POSTs) and hands it to the admin worker (see
 * admin.c): every call below blocks, so none runs on the event loop.
 *
 * The JetStream API is used through plain requests: STREAM.MSG.GET with next_by_subj
 * walks the stream by subject without a consumer (and skips deleted messages), and
 * STREAM.PURGE with a filter answers how many messages it removed. */
#include <inttypes.h>
#include <nats/nats.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "../bus/bus.h"
#include "../common/json_out.h"
#include "../common/log.h"
#include "../conf/subject.h"
#include "internal.h"
#include "json_check.h"

#define API_TIMEOUT_MS 5000
#define LIST_DEFAULT 50
#define LIST_MAX 1000
#define REPLAY_DEFAULT 10000

/* One dead letter as read from the stream. */
struct letter {
    uint64_t seq;
    char subject[256];
    char time[64];
    unsigned char *data; /* owned */
    size_t len;
};

static void letter_free(struct letter *l)
{
    free(l->data);
    l->data = NULL;
}

/* Standard base64 into a new buffer; NULL when malformed. */
static unsigned char *base64_decode(const char *s, size_t len, size_t *out_len)
{
    if (len % 4 != 0) {
        return NULL;
    }
    unsigned char *out = malloc(len / 4 * 3 + 1);
    if (out == NULL) {
        return NULL;
    }
    int n = len > 0 ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)len) : 0;
    if (n < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    size_t pad = len >= 1 && s[len - 1] == '=' ? (len >= 2 && s[len - 2] == '=' ? 2 : 1) : 0;
    *out_len = (size_t)n - pad;
    return out;
}

static const char *str_at(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val s = yajl_tree_get(v, path, yajl_t_string);
    return s != NULL ? YAJL_GET_STRING(s) : NULL;
}

/* A JetStream API call on the DLQ stream: "$JS.API.STREAM.<op>.<stream>". On success
 * *out is the parsed answer (free with yajl_tree_free); otherwise returns the HTTP
 * status to give, with why, and *api_code the JetStream error code when it answered one. */
static int js_api(struct gust_http *http, const char *op, const char *body, yajl_val *out, int *api_code,
                  char *why, size_t why_size)
{
    *out = NULL;
    *api_code = 0;
    natsConnection *nc = gust_bus_conn(http->bus);
    if (nc == NULL || !gust_bus_connected(http->bus)) {
        snprintf(why, why_size, "bus not connected");
        return 503;
    }
    char subject[300];
    snprintf(subject, sizeof(subject), "$JS.API.STREAM.%s.%s", op, http->dlq_stream);
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_RequestString(&reply, nc, subject, body, API_TIMEOUT_MS);
    if (s != NATS_OK) {
        snprintf(why, why_size, "jetstream: %s", natsStatus_GetText(s));
        return 503;
    }
    size_t len = (size_t)natsMsg_GetDataLength(reply);
    char *text = malloc(len + 1); /* yajl's tree parser wants a NUL-terminated buffer */
    if (text == NULL) {
        natsMsg_Destroy(reply);
        snprintf(why, why_size, "out of memory");
        return 500;
    }
    memcpy(text, natsMsg_GetData(reply), len);
    text[len] = '\0';
    natsMsg_Destroy(reply);
    char perr[128];
    yajl_val v = yajl_tree_parse(text, perr, sizeof(perr));
    free(text);
    if (v == NULL || !YAJL_IS_OBJECT(v)) {
        yajl_tree_free(v);
        snprintf(why, why_size, "jetstream answered something that is not a JSON object");
        return 502;
    }
    const char *code_path[] = {"error", "code", NULL};
    const char *desc_path[] = {"error", "description", NULL};
    yajl_val code = yajl_tree_get(v, code_path, yajl_t_number);
    if (code != NULL) {
        yajl_val desc = yajl_tree_get(v, desc_path, yajl_t_string);
        *api_code = (int)YAJL_GET_INTEGER(code);
        snprintf(why, why_size, "jetstream: %s", desc != NULL ? YAJL_GET_STRING(desc) : "error");
        yajl_tree_free(v);
        return *api_code == 404 ? 404 : 502;
    }
    *out = v;
    return 0;
}

/* The first dead letter with a sequence >= seq on filter (exact seq when filter is
 * NULL). Returns 0 and fills l, 404 when there is none, or an HTTP status with why. */
static int get_letter(struct gust_http *http, uint64_t seq, const char *filter, struct letter *l, char *why,
                      size_t why_size)
{
    struct gust_buf req = {0};
    gust_buf_printf(&req, "{\"seq\":%" PRIu64, seq);
    if (filter != NULL) {
        gust_buf_append(&req, ",\"next_by_subj\":", 16);
        gust_json_append_string(&req, filter, strlen(filter));
    }
    gust_buf_append(&req, "}", 2); /* with the NUL */
    yajl_val v = NULL;
    int api_code = 0;
    int status = js_api(http, "MSG.GET", req.data != NULL ? req.data : "{}", &v, &api_code, why, why_size);
    gust_buf_free(&req);
    if (status != 0) {
        return status;
    }
    const char *seq_path[] = {"message", "seq", NULL};
    const char *msg_path[] = {"message", NULL};
    yajl_val m = yajl_tree_get(v, msg_path, yajl_t_object);
    yajl_val s = yajl_tree_get(v, seq_path, yajl_t_number);
    const char *subject = m != NULL ? str_at(m, "subject") : NULL;
    const char *data = m != NULL ? str_at(m, "data") : NULL;
    const char *time = m != NULL ? str_at(m, "time") : NULL;
    memset(l, 0, sizeof(*l));
    if (s == NULL || subject == NULL) {
        yajl_tree_free(v);
        snprintf(why, why_size, "jetstream answered a message without seq or subject");
        return 502;
    }
    l->seq = (uint64_t)YAJL_GET_INTEGER(s);
    snprintf(l->subject, sizeof(l->subject), "%s", subject);
    snprintf(l->time, sizeof(l->time), "%s", time != NULL ? time : "");
    l->data = base64_decode(data != NULL ? data : "", data != NULL ? strlen(data) : 0, &l->len);
    yajl_tree_free(v);
    if (l->data == NULL) {
        snprintf(why, why_size, "jetstream answered a message with bad base64 data");
        return 502;
    }
    return 0;
}

static int stream_last_seq(struct gust_http *http, uint64_t *last, uint64_t *msgs, char *why, size_t why_size)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = API_TIMEOUT_MS;
    if (!gust_bus_connected(http->bus)) {
        snprintf(why, why_size, "bus not connected");
        return 503;
    }
    natsStatus s = js_GetStreamInfo(&si, gust_bus_js(http->bus), http->dlq_stream, &o, &jerr);
    if (s != NATS_OK) {
        snprintf(why, why_size, "stream %s: %s (jetstream error %d)", http->dlq_stream, natsStatus_GetText(s),
                 (int)jerr);
        return 503;
    }
    *last = si->State.LastSeq;
    *msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return 0;
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

static void append_letter(struct gust_buf *out, const struct gust_http *http, const struct letter *l)
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
        struct letter l;
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
        letter_free(&l);
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
static int replay_one(struct gust_http *http, const struct letter *l, char *why, size_t why_size)
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
        data = base64_decode(payload_b64, strlen(payload_b64), &len);
    }
    if (data == NULL) {
        yajl_tree_free(env);
        snprintf(why, why_size, "payload_base64 is not base64");
        return -1;
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = API_TIMEOUT_MS;
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_Publish(&pa, gust_bus_js(http->bus), subject, data, (int)len, &po, &jerr);
    free(data);
    if (s != NATS_OK) {
        snprintf(why, why_size, "republish to %s: %s (jetstream error %d)", subject, natsStatus_GetText(s), (int)jerr);
        yajl_tree_free(env);
        return -1;
    }
    jsPubAck_Destroy(pa);
    yajl_tree_free(env);
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = API_TIMEOUT_MS;
    s = js_DeleteMsg(gust_bus_js(http->bus), http->dlq_stream, l->seq, &o, &jerr);
    if (s != NATS_OK) {
        /* Stored again but still listed: a second replay would duplicate it. */
        snprintf(why, why_size, "republished, but not deleted: %s (jetstream error %d)", natsStatus_GetText(s),
                 (int)jerr);
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
        struct letter l;
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
        letter_free(&l);
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
    struct gust_buf req = {0};
    gust_buf_append(&req, "{\"filter\":", 10);
    gust_json_append_string(&req, filter, strlen(filter));
    gust_buf_append(&req, "}", 2); /* with the NUL */
    yajl_val v = NULL;
    int api_code = 0;
    int status = js_api(job->http, "PURGE", req.data != NULL ? req.data : "{}", &v, &api_code, why, sizeof(why));
    gust_buf_free(&req);
    if (status != 0) {
        gust_admin_fail(job, status, why);
        return;
    }
    const char *path[] = {"purged", NULL};
    yajl_val n = yajl_tree_get(v, path, yajl_t_number);
    long long purged = n != NULL ? YAJL_GET_INTEGER(n) : 0;
    yajl_tree_free(v);
    gust_info("dlq: purged %lld dead letter(s) on %s", purged, filter);
    job->status = 200;
    gust_buf_printf(&job->body, "{\"purged\":%lld,\"filter\":", purged);
    gust_json_append_string(&job->body, filter, strlen(filter));
    gust_buf_append(&job->body, "}\n", 2);
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
    struct gust_dlq_query q = {.limit = list ? LIST_DEFAULT : REPLAY_DEFAULT};
    size_t qlen = req->query_at != SIZE_MAX ? req->path.len - req->query_at - 1 : 0;
    const char *bad = gust_dlq_query_parse(qlen > 0 ? req->path.base + req->query_at + 1 : "", qlen,
                                           req->entity.base, req->entity.base != NULL ? req->entity.len : 0, &q);
    if (bad != NULL) {
        gust_http_send_error(req, GUST_ROUTE_DLQ, 400, bad);
        return;
    }
    if (list) {
        if (q.limit > LIST_MAX) {
            q.limit = LIST_MAX;
        }
        gust_admin_submit(http, req, GUST_ROUTE_DLQ, run_list, &q);
    } else if (replay) {
        int selectors = (q.seq != 0) + (q.unit[0] != '\0') + (q.all != 0);
        if (selectors != 1) {
            gust_http_send_error(req, GUST_ROUTE_DLQ, 400,
                                 "replay: give exactly one of seq, unit or all (query string or JSON body)");
            return;
        }
        gust_admin_submit(http, req, GUST_ROUTE_DLQ, run_replay, &q);
    } else {
        /* Deleting every dead letter is never the default: it must be asked for. */
        if (q.seq != 0 || (q.unit[0] != '\0') + (q.all != 0) != 1) {
            gust_http_send_error(req, GUST_ROUTE_DLQ, 400, "purge: give exactly one of unit or all");
            return;
        }
        gust_admin_submit(http, req, GUST_ROUTE_DLQ, run_purge, &q);
    }
}
