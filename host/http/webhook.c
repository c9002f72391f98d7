/* POST <base><path> of a `webhook` block: the signature checked, the body made an event,
 * published through ingest's path (gust_ingest_publish: 202 after the PubAck).
 *
 * Order matters: the signature is checked on the bytes as they came, before the body
 * or its Content-Type is looked at, so nothing unauthenticated reaches a parser. Then
 * the body becomes JSON: JSON as it is (one object, as ingest takes it), a form as an
 * object of strings (form.h; a lone `payload` field holding a JSON object, as Slack and
 * GitHub send, as that object), anything else refused (415) unless `raw on` stores it
 * as {"body_base64": ...}. A delivery id becomes the Nats-Msg-Id, so a provider's retry
 * within the stream's duplicate window is stored once. With `respond flow` the
 * delivery is a call (call.c): the answer is the reply of the flow that handles it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <yajl/yajl_parse.h>

#include "../common/json_out.h"
#include "../common/log.h"
#include "form.h"
#include "internal.h"
#include "json_check.h"
#include "webhooks.h"

#define ROUTE GUST_ROUTE_WEBHOOK

struct header_ud {
    h2o_req_t *req;
};

static int header_of(void *ud, const char *name, const char **value, size_t *len)
{
    h2o_req_t *req = ((struct header_ud *)ud)->req;
    ssize_t i = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
    if (i < 0) {
        return 0;
    }
    if (h2o_find_header_by_str(&req->headers, name, strlen(name), i) >= 0) {
        return -1;
    }
    *value = req->headers.entries[i].value.base;
    *len = req->headers.entries[i].value.len;
    return 1;
}

static void refuse(struct gust_http *http, h2o_req_t *req, const struct gust_webhook *h, const char *why)
{
    struct gust_client client;
    gust_client_of(&gust_http_policy(http)->proxies, req, &client);
    gust_info("http: 401 for webhook '%s' from %s%s%s: %s", h->name, client.addr,
              client.via_proxy ? " via " : "", client.via_proxy ? client.peer : "", why);
    char msg[400];
    snprintf(msg, sizeof(msg), "signature refused: %s", why);
    gust_http_send_error(req, ROUTE, 401, msg);
}

/* The media type of the request, lowercase, without parameters ("" when none). */
static void media_type(h2o_req_t *req, char *out, size_t size)
{
    out[0] = '\0';
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (i < 0) {
        return;
    }
    h2o_iovec_t v = req->headers.entries[i].value;
    size_t n = 0;
    for (size_t j = 0; j < v.len && v.base[j] != ';' && n + 1 < size; j++) {
        if (v.base[j] != ' ' && v.base[j] != '\t') {
            out[n++] = (char)(v.base[j] >= 'A' && v.base[j] <= 'Z' ? v.base[j] + 32 : v.base[j]);
        }
    }
    out[n] = '\0';
}

static int is_json_type(const char *t)
{
    size_t n = strlen(t);
    return strcmp(t, "application/json") == 0 ||
           (strncmp(t, "application/", 12) == 0 && n > 17 && strcmp(t + n - 5, "+json") == 0);
}

/* The top-level "id" string of a JSON object (a Stripe event's), found with yajl's
 * event parser: no tree, so no recursion however deep the rest. */
struct id_scan {
    int depth;
    int want; /* the last key at depth 1 was "id" */
    char id[GUST_INGEST_MSG_ID_MAX + 1];
};

static int scan_open(void *ud)
{
    struct id_scan *s = ud;
    s->depth++;
    s->want = 0;
    return 1;
}

static int scan_close(void *ud)
{
    ((struct id_scan *)ud)->depth--;
    return 1;
}

static int scan_key(void *ud, const unsigned char *k, size_t len)
{
    struct id_scan *s = ud;
    s->want = s->depth == 1 && len == 2 && memcmp(k, "id", 2) == 0;
    return 1;
}

static int scan_string(void *ud, const unsigned char *v, size_t len)
{
    struct id_scan *s = ud;
    if (s->want && s->id[0] == '\0' && len > 0 && len <= GUST_INGEST_MSG_ID_MAX) {
        int visible = 1;
        for (size_t i = 0; i < len; i++) {
            visible &= v[i] >= 0x21 && v[i] <= 0x7e;
        }
        if (visible) {
            memcpy(s->id, v, len);
            s->id[len] = '\0';
        }
    }
    s->want = 0;
    return 1;
}

static int scan_other(void *ud)
{
    ((struct id_scan *)ud)->want = 0;
    return 1;
}

static int scan_bool(void *ud, int b)
{
    (void)b;
    return scan_other(ud);
}

static int scan_number(void *ud, const char *n, size_t len)
{
    (void)n;
    (void)len;
    return scan_other(ud);
}

static const yajl_callbacks id_callbacks = {
    .yajl_null = scan_other,
    .yajl_boolean = scan_bool,
    .yajl_number = scan_number,
    .yajl_string = scan_string,
    .yajl_start_map = scan_open,
    .yajl_map_key = scan_key,
    .yajl_end_map = scan_close,
    .yajl_start_array = scan_open,
    .yajl_end_array = scan_close,
};

static void event_id(const char *json, size_t len, char out[GUST_INGEST_MSG_ID_MAX + 1])
{
    struct id_scan s = {0};
    yajl_handle y = yajl_alloc(&id_callbacks, NULL, &s);
    if (y != NULL) {
        yajl_parse(y, (const unsigned char *)json, len);
        yajl_complete_parse(y);
        yajl_free(y);
    }
    memcpy(out, s.id, sizeof(s.id));
}

/* The event of the body into data and len (the body itself, or ev's bytes); 0, or the
 * request was answered (400, 415). */
static int make_event(struct gust_http *http, h2o_req_t *req, const struct gust_webhook *h,
                      struct gust_buf *ev, const char **data, size_t *len)
{
    const char *body = req->entity.base;
    size_t blen = req->entity.len;
    size_t max_depth = gust_http_policy(http)->s.max_depth;
    char type[128], why[200];
    media_type(req, type, sizeof(type));
    if (type[0] == '\0' || is_json_type(type)) {
        if (!gust_json_object_valid(body, blen, max_depth, why, sizeof(why))) {
            gust_http_send_error(req, ROUTE, 400, why);
            return -1;
        }
        *data = body;
        *len = blen;
        return 0;
    }
    if (strcmp(type, "application/x-www-form-urlencoded") == 0) {
        size_t plen = 0;
        char *payload = gust_form_payload(body, blen, &plen);
        if (payload != NULL && gust_json_object_valid(payload, plen, max_depth, why, sizeof(why))) {
            int bad = gust_buf_append(ev, payload, plen);
            free(payload);
            if (bad != 0) {
                gust_http_send_error(req, ROUTE, 503, "not stored: out of memory");
                return -1;
            }
        } else {
            free(payload);
            if (gust_form_to_json(body, blen, ev, why, sizeof(why)) != 0) {
                gust_http_send_error(req, ROUTE, 400, why);
                return -1;
            }
        }
        *data = ev->data;
        *len = ev->len;
        return 0;
    }
    if (!h->raw) {
        char msg[300];
        snprintf(msg, sizeof(msg),
                 "Content-Type %s is neither JSON nor application/x-www-form-urlencoded (raw on stores any "
                 "body as "
                 "base64)",
                 type);
        gust_http_send_error(req, ROUTE, 415, msg);
        return -1;
    }
    if (gust_buf_append(ev, "{\"body_base64\":", 15) != 0 ||
        gust_json_append_base64(ev, (const unsigned char *)body, blen) != 0 ||
        gust_buf_append(ev, "}", 1) != 0) {
        gust_http_send_error(req, ROUTE, 503, "not stored: out of memory");
        return -1;
    }
    *data = ev->data;
    *len = ev->len;
    return 0;
}

/* The headers h keeps, as the client named them, into the request's pool. */
static size_t kept_headers(h2o_req_t *req, const struct gust_webhook *h, struct gust_header **out)
{
    size_t n = 0;
    for (size_t k = 0; k < h->nheaders; k++) {
        for (ssize_t i = -1;
             (i = h2o_find_header_by_str(&req->headers, h->headers[k], strlen(h->headers[k]), i)) >= 0;) {
            n++;
        }
    }
    *out = n > 0 ? h2o_mem_alloc_pool(&req->pool, n * sizeof(**out)) : NULL;
    size_t at = 0;
    for (size_t k = 0; k < h->nheaders; k++) {
        for (ssize_t i = -1;
             (i = h2o_find_header_by_str(&req->headers, h->headers[k], strlen(h->headers[k]), i)) >= 0;) {
            const h2o_header_t *e = &req->headers.entries[i];
            (*out)[at].name = e->orig_name != NULL ? e->orig_name
                                                   : h2o_strdup(&req->pool, e->name->base, e->name->len).base;
            (*out)[at].value = h2o_strdup(&req->pool, e->value.base, e->value.len).base;
            at++;
        }
    }
    return n;
}

void gust_webhook_handle(struct gust_http *http, h2o_req_t *req, const struct gust_webhook *h)
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
        gust_http_send_error(req, ROUTE, 405, "method not allowed: use POST");
        return;
    }
    size_t max_body = h->max_body > 0 ? h->max_body : gust_http_policy(http)->s.max_body;
    if (req->entity.len > max_body) {
        char msg[96];
        snprintf(msg, sizeof(msg), "body over %zu bytes", max_body);
        gust_http_send_error(req, ROUTE, 413, msg);
        return;
    }
    char why[300];
    struct header_ud hu = {req};
    if (gust_wh_verify(&h->v, header_of, &hu, req->entity.base, req->entity.len, (int64_t)time(NULL), why,
                       sizeof(why)) != 0) {
        refuse(http, req, h, why);
        return;
    }
    if (req->entity.base == NULL || req->entity.len == 0) {
        gust_http_send_error(req, ROUTE, 400, "empty body");
        return;
    }
    struct gust_buf ev = {0};
    const char *data = NULL;
    size_t len = 0;
    if (make_event(http, req, h, &ev, &data, &len) != 0) {
        gust_buf_free(&ev);
        return;
    }
    char msg_id[GUST_INGEST_MSG_ID_MAX + 1] = "";
    static const char *const ingest_ids[] = {"idempotency-key", "nats-msg-id"};
    const char *const *names = h->id_header != NULL ? (const char *const *)&h->id_header : ingest_ids;
    if (h->id_from_body) {
        if (data == req->entity.base) {
            event_id(data, len, msg_id);
        }
    } else if (gust_ingest_msg_id(req, names, h->id_header != NULL ? 1 : 2, msg_id) != 0) {
        snprintf(why, sizeof(why), "%s: one value of 1 to 200 visible ASCII characters",
                 h->id_header != NULL ? h->id_header : "Idempotency-Key (or Nats-Msg-Id)");
        gust_http_send_error(req, ROUTE, 400, why);
        gust_buf_free(&ev);
        return;
    }
    struct gust_header *headers = NULL;
    size_t nheaders = kept_headers(req, h, &headers);
    struct gust_pub_msg m = {
        .subject = h->subject,
        .data = data,
        .len = len,
        .msg_id = msg_id[0] != '\0' ? msg_id : NULL,
        .headers = headers,
        .nheaders = nheaders,
    };
    if (h->respond_flow) {
        gust_call_publish(http, req, ROUTE, &m);
    } else {
        gust_ingest_publish(http, req, ROUTE, &m);
    }
    gust_buf_free(&ev);
}
