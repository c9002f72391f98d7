/* An http_out instance's keys: the schema that binds them, and the checks of the values
 * only this plugin understands (the host has already checked their types). The request
 * head every message shares is built here once. */
#define _GNU_SOURCE /* asprintf */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_out.h"

#define KEY(f, T, def, flags, help) GUST_KEY(struct http_out_keys, f, T, def, flags, help)
#define KEY_RANGE(f, T, def, flags, lo, hi, help) GUST_KEY_RANGE(struct http_out_keys, f, T, def, flags, lo, hi, help)
const struct gust_schema_key http_out_schema[] = {
    GUST_KEY_URL(struct http_out_keys, url, NULL, GUST_K_REQUIRED, "http|https",
        "where to send each message; its path and query may hold templates "
        "(\"http://api/orders/{payload.country}\", values percent-encoded; quote a value with '{')"),
    KEY(method, STR, "POST", 0, "POST, PUT or PATCH, or a template rendering to one of them"),
    KEY(header, LIST, NULL, GUST_K_SECRET | GUST_K_TEMPLATE,
        "extra request header, repeatable: `header NAME VALUE` (the value may be a template: "
        "header X-Order \"{payload.id}\") or `header \"Name: value\"`; a rendered value holding a line "
        "break rejects the message"),
    KEY(content_type, STR, "application/json", 0, "Content-Type of the requests"),
    KEY(timeout, DURATION, "5s", 0, "limit for one request, connecting included"),
    KEY(max_inflight, INT, "256", 0,
        "requests of one batch written and not yet answered, over all connections"),
    KEY(connections, INT, "4", 0,
        "most connections open to the server, kept alive between batches; a batch uses no more "
        "than it has messages"),
    KEY(pipeline, INT, "64", 0,
        "most requests outstanding on one connection, written together and answered in order "
        "(1: no pipelining, one request at a time per connection)"),
    KEY(tls_ca, PATH, NULL, 0,
        "CA certificate file (PEM) to verify an https server with, instead of the system store"),
    KEY(retry_max_delay, DURATION, "5s", 0,
        "longest outage pause: while the far end is down (connection errors, timeouts, 5xx, 408, 429) "
        "the whole sink sends one probe at a time, 100 ms after the last failure and doubling up to "
        "this; also the longest a Retry-After holds the sink"),
    KEY_RANGE(batch_max, INT, "1", 0, 1, 100000,
              "messages per request: above 1, each request's body is a batch of up to this many (see "
              "batch_format), acked together after a 2xx; a 4xx sends each again alone"),
    KEY_RANGE(batch_bytes, SIZE, "0", GUST_K_ZERO_OFF, 1, 1 << 30,
              "most bytes of a batch's body (0: no bound); batching is on when set; a larger message goes alone"),
    KEY_RANGE(batch_linger, DURATION, "0", GUST_K_ZERO_OFF, 1, 60000,
              "once a first message is there, how long the sink waits for batch_max of them (0: it sends "
              "what is there)"),
    GUST_KEY_ENUM(struct http_out_keys, batch_format, "json_array", 0, "json_array|ndjson",
                  "a batch's body: a JSON array of the messages, or ndjson (one message a line: each must be "
                  "one line)"),
    KEY(batch_wrap, STR, NULL, 0,
        "a json_array batch's body around its array, written as the array \"[...]\": "
        "'{\"records\": [...]}' (default: the array alone)"),
    KEY(rate, RATE, NULL, 0,
        "most requests (a batch is one) per second, minute or hour, over all connections of this sink, in "
        "this process (a cluster of P processes sends up to P times it)"),
    KEY_RANGE(rate_burst, INT, "0", GUST_K_ZERO_OFF, 1, 1000000000,
              "requests sent at once after a quiet spell (0: one second of the rate)"),
    KEY(rate_key, STR, NULL, 0,
        "a template (\"{payload.tenant}\"): one rate per rendered key, the 10000 keys used last kept"),
    KEY(reply_to, STR, NULL, 0,
        "subject the answer of each 2xx is published to, as an event, before the message is acked: the "
        "body when it is one JSON value, else {\"body_base64\": ...}; headers Gust-Status, Content-Type, "
        "Gust-Request-Id (the message's Nats-Msg-Id); not with batching"),
    KEY(ordered, BOOL, "off", 0,
        "deliver in stream order, also across an outage and a restart: one request (or batch) in flight; "
        "one that fails is tried again in place while the ones behind it wait (head-of-line blocking: one "
        "round trip per request); a rejected message (4xx) is dead-lettered at once and the rest goes on"),
    KEY(ordered_by, STR, NULL, 0,
        "a template (\"{payload.account}\"): stream order per rendered key, in parallel across keys; a "
        "key's next message waits while one of its key is in flight or failing; not with ordered on"),
    KEY(forward_headers, LIST, NULL, 0,
        "message headers sent on as request headers (case-insensitive names, never Nats-*; a value "
        "with a line break is not sent); traceparent and tracestate always are"),
    GUST_KEY_ENUM(struct http_out_keys, sign, "none", 0, "none|standard|hmac",
                  "sign each request with an HMAC-SHA256 under the secret: standard (Standard Webhooks: "
                  "webhook-id, webhook-timestamp, webhook-signature v1,<base64 of id.timestamp.body>) or hmac "
                  "(sign_header: sign_prefix and the body's HMAC in sign_encoding)"),
    KEY(secret_file, PATH, NULL, GUST_K_SECRET,
        "file holding sign's secret, read when the unit starts (its trailing newline is not part of it); "
        "standard: whsec_<base64>"),
    KEY(secret, STR, NULL, GUST_K_SECRET,
        "sign's secret as a value: \"{secret:PATH#KEY}\" from the secret store, or ${VAR}"),
    KEY(sign_header, STR, NULL, 0, "sign hmac: the header carrying the signature (X-Hub-Signature-256)"),
    GUST_KEY_ENUM(struct http_out_keys, sign_encoding, "hex", 0, "hex|base64", "sign hmac: how the HMAC is written"),
    KEY(sign_prefix, STR, NULL, 0, "sign hmac: text before the encoded HMAC (\"sha256=\")"),
    GUST_KEY_END,
};

/* Returns NULL when h is a usable "Name: value" line, else what is wrong with it. */
static const char *check_header(const char *h)
{
    const char *why = gust_http_header_problem(h);
    if (why != NULL) {
        return why;
    }
    /* The body's framing and type are the plugin's: content_type sets the type. */
    if (gust_http_header_is(h, "Content-Type") || gust_http_header_is(h, "Content-Length") ||
        gust_http_header_is(h, "Transfer-Encoding")) {
        return "sets a header the plugin owns (use content_type for the type)";
    }
    return NULL;
}

/* Appends s to the head being built; nonzero when out of memory. */
static int put_str(struct http_out_conf *conf, const char *s)
{
    return gust_buf_append(&conf->head, s, strlen(s));
}

/* "POST /path HTTP/1.1\r\nHost: ...\r\nContent-Type: ...\r\n<headers>Content-Length: " */
static int build_head(struct http_out_conf *conf, const char *method)
{
    const struct gust_list *hl = &conf->headers;
    int own_host = 0;
    const struct http_out_url *u = &conf->u;

    for (size_t i = 0; i < hl->n; i++) {
        own_host |= gust_http_header_is(hl->items[i], "Host");
    }
    if (put_str(conf, method) != 0 || put_str(conf, " ") != 0 ||
        (u->target_len == 0 || u->target[0] == '?' ? put_str(conf, "/") : 0) != 0 ||
        gust_buf_append(&conf->head, u->target, u->target_len) != 0 || put_str(conf, " HTTP/1.1\r\n") != 0 ||
        /* A Host header of the user's own (a virtual host behind an address) replaces ours. */
        (!own_host &&
         (put_str(conf, "Host: ") != 0 || gust_buf_append(&conf->head, u->authority, u->authority_len) != 0 ||
          put_str(conf, "\r\n") != 0)) ||
        put_str(conf, "Content-Type: ") != 0 || put_str(conf, conf->k.content_type) != 0 ||
        put_str(conf, "\r\n") != 0) {
        return -1;
    }
    for (size_t i = 0; i < hl->n; i++) {
        if (put_str(conf, hl->items[i]) != 0 || put_str(conf, "\r\n") != 0) {
            return -1;
        }
    }
    return put_str(conf, "Content-Length: ");
}

int http_out_method_ok(const char *m, size_t len)
{
    return (len == 4 && memcmp(m, "POST", 4) == 0) || (len == 3 && memcmp(m, "PUT", 3) == 0) ||
           (len == 5 && memcmp(m, "PATCH", 5) == 0);
}

/* The header key's items, as written: `header NAME VALUE` (two items) or `header
 * "Name: value"` (one, holding a colon; a name cannot), each repeatable. Into
 * conf->hdr_name/hdr_value (pairs) and conf->headers ("Name: value" lines of the fixed
 * ones, for the head every request shares). */
static int load_headers(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                        struct gust_err *err)
{
    const struct gust_list *l = &conf->k.header;
    size_t nlines = 0;

    if (l->n == 0) {
        return 0;
    }
    if (!(conf->hdr_name = calloc(l->n, sizeof(char *))) || !(conf->hdr_value = calloc(l->n, sizeof(char *))) ||
        !(conf->hdr_line = calloc(l->n, sizeof(char *)))) {
        return gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
    }
    for (size_t i = 0; i < l->n; i++) {
        const char *item = l->items[i], *colon = strchr(item, ':');
        size_t h = conf->nhdr;
        char *line;
        if (colon) {
            const char *v = colon + 1;
            while (*v == ' ' || *v == '\t') {
                v++;
            }
            conf->hdr_name[h] = strndup(item, (size_t)(colon - item));
            conf->hdr_value[h] = strdup(v);
        } else if (i + 1 < l->n) {
            conf->hdr_name[h] = strdup(item);
            conf->hdr_value[h] = strdup(l->items[++i]);
        } else {
            /* The item may be a secret written without its name: not shown. */
            return gust_err_set(err, GUST_ECONFIG, "%s: header #%zu has a name and no value (header NAME VALUE, "
                                "or header \"Name: value\")", api->cfg_where(cfg, "header"), h + 1);
        }
        conf->nhdr++;
        if (!conf->hdr_name[h] || !conf->hdr_value[h] ||
            asprintf(&line, "%s: %s", conf->hdr_name[h], conf->hdr_value[h]) < 0) {
            return gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
        }
        /* A template's braces are checked by its compiler; the rest as a line would be. */
        const char *why = check_header(line);
        if (why) {
            free(line);
            /* The value may be a secret: name the header by its position only. */
            return gust_err_set(err, GUST_ECONFIG, "%s: header #%zu %s", api->cfg_where(cfg, "header"), h + 1, why);
        }
        if (strchr(conf->hdr_value[h], '{')) {
            free(line); /* rendered per message */
        } else {
            conf->hdr_line[nlines++] = line; /* fixed: in the shared head */
            conf->headers = (struct gust_list){(const char *const *)conf->hdr_line, nlines};
        }
    }
    return 0;
}

static int load_batch_rate(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                           struct gust_err *err)
{
    const struct http_out_keys *k = &conf->k;

    conf->batch_max = (size_t)k->batch_max;
    conf->batch_bytes = (size_t)k->batch_bytes;
    conf->batching = k->batch_max > 1 || k->batch_bytes > 0;
    conf->batch_max = conf->batching && k->batch_max == 1 && k->batch_bytes > 0 ? 100000 : conf->batch_max;
    conf->batch_linger_ms = k->batch_linger;
    conf->ndjson = strcmp(k->batch_format, "ndjson") == 0;
    conf->wrap_pre = "[";
    conf->wrap_post = "]";
    if (k->batch_wrap != NULL) {
        const char *at = strstr(k->batch_wrap, "[...]");
        if (at == NULL || strstr(at + 5, "[...]") != NULL || conf->ndjson || !conf->batching) {
            return gust_err_set(err, GUST_ECONFIG, "%s: batch_wrap: %s", api->cfg_where(cfg, "batch_wrap"),
                                at == NULL || strstr(at + 5, "[...]") ? "holds \"[...]\" once, where the batch's array goes"
                                : conf->ndjson ? "wraps a json_array batch, not ndjson"
                                               : "wraps a batch: set batch_max (or batch_bytes)");
        }
        conf->wrap_pre = k->batch_wrap;
        conf->wrap_pre_len = (size_t)(at - k->batch_wrap) + 1; /* up to its '[' */
        conf->wrap_post = at + 4;                              /* from its ']' */
    } else {
        conf->wrap_pre_len = 1;
    }
    conf->wrap_post_len = strlen(conf->wrap_post);
    conf->batch_overhead = conf->ndjson ? 1 : conf->wrap_pre_len + conf->wrap_post_len;
    conf->rate = k->rate;
    if ((k->rate_burst > 0 || k->rate_key != NULL) && k->rate <= 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: %s needs a rate", api->cfg_where(cfg, k->rate_key ? "rate_key" : "rate_burst"),
                            k->rate_key ? "rate_key" : "rate_burst");
    }
    conf->rate_burst = k->rate_burst > 0 ? (double)k->rate_burst : (conf->rate >= 1 ? conf->rate : 1);
    return 0;
}

/* reply_to publishes one answer per message: a batch has one answer for many. */
static int load_reply_to(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                         struct gust_err *err)
{
    const char *s = conf->k.reply_to;

    if (s == NULL) {
        return 0;
    }
    if (conf->batching) {
        return gust_err_set(err, GUST_ECONFIG, "%s: reply_to: publishes one answer per message, and a batch gets "
                            "one for all of them: not with batch_max or batch_bytes", api->cfg_where(cfg, "reply_to"));
    }
    /* A subject to publish to: tokens of visible characters, no wildcards. */
    int bad = *s == '\0' || *s == '.' || s[strlen(s) - 1] == '.' || strstr(s, "..") != NULL;
    for (const char *c = s; !bad && *c; c++) {
        bad = (unsigned char)*c <= ' ' || *c == 0x7f || *c == '*' || *c == '>';
    }
    if (bad) {
        return gust_err_set(err, GUST_ECONFIG, "%s: reply_to: \"%s\" is not a subject to publish to (tokens "
                            "separated by dots, no wildcards or spaces)", api->cfg_where(cfg, "reply_to"), s);
    }
    conf->reply_to = s;
    return 0;
}

int http_out_conf_load(struct http_out_conf *conf, const struct gust_host_api *api,
                       const struct gust_cfg *cfg, struct gust_err *err)
{
    const struct http_out_keys *k = &conf->k;
    int rc;

    memset(conf, 0, sizeof(*conf));
    if ((rc = gust_sdk_bind(api, cfg, http_out_schema, &conf->k, err)) != 0) {
        return rc;
    }
    conf->url = k->url;
    if (!conf->url || http_out_url_parse(&conf->u, conf->url) != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: url: \"%s\" is not an http:// or https:// URL",
                          api->cfg_where(cfg, "url"), conf->url ? conf->url : "");
        goto fail;
    }
    conf->tls_ca = k->tls_ca;

    if (!strchr(k->method, '{') && !http_out_method_ok(k->method, strlen(k->method))) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: method: \"%s\" is none of POST, PUT, PATCH",
                          api->cfg_where(cfg, "method"), k->method);
        goto fail;
    }

    const struct {
        const char *key;
        int64_t value;
        int64_t max;
    } limits[] = {{"timeout", k->timeout, 3600000},
                  {"max_inflight", k->max_inflight, 65536},
                  {"connections", k->connections, 1024},
                  {"pipeline", k->pipeline, 65536}};
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        if (limits[i].value < 1 || limits[i].value > limits[i].max) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: %s: %lld is not within 1..%lld",
                              api->cfg_where(cfg, limits[i].key), limits[i].key, (long long)limits[i].value,
                              (long long)limits[i].max);
            goto fail;
        }
    }
    conf->timeout_ms = k->timeout;
    conf->retry_max_delay_ms = k->retry_max_delay;
    conf->max_inflight = (size_t)k->max_inflight;
    conf->connections = (size_t)k->connections;
    conf->pipeline = (size_t)k->pipeline;

    if (strpbrk(k->content_type, "\r\n")) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: content_type: holds a line break",
                          api->cfg_where(cfg, "content_type"));
        goto fail;
    }
    if ((rc = load_headers(conf, api, cfg, err)) != 0) {
        goto fail;
    }
    if ((rc = load_batch_rate(conf, api, cfg, err)) != 0) {
        goto fail;
    }
    if (k->ordered && k->ordered_by != NULL) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: ordered_by: orders per key, ordered on orders everything: give "
                          "one of them", api->cfg_where(cfg, "ordered_by"));
        goto fail;
    }
    conf->order = k->ordered ? GUST_ORDER_STREAM : k->ordered_by != NULL ? GUST_ORDER_KEY : GUST_ORDER_NONE;
    if ((rc = http_out_tpl_load(conf, api, cfg, err)) != 0) {
        goto fail;
    }
    if ((rc = load_reply_to(conf, api, cfg, err)) != 0 || (rc = http_out_fwd_load(conf, api, cfg, err)) != 0 ||
        (rc = http_out_sign_load(conf, api, cfg, err)) != 0) {
        goto fail;
    }
    if (build_head(conf, strchr(k->method, '{') ? "POST" : k->method) != 0) {
        rc = gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
        goto fail;
    }
    return 0;

fail:
    http_out_conf_free(conf);
    return rc;
}

void http_out_conf_free(struct http_out_conf *conf)
{
    gust_buf_free(&conf->head);
    http_out_tpl_free(conf->tpl);
    conf->tpl = NULL;
    for (size_t i = 0; i < conf->nhdr; i++) {
        free(conf->hdr_name[i]);
        free(conf->hdr_value[i]);
    }
    for (size_t i = 0; i < conf->headers.n; i++) {
        free(conf->hdr_line[i]);
    }
    conf->headers.n = 0;
    free(conf->hdr_name);
    free(conf->hdr_value);
    free(conf->hdr_line);
    conf->hdr_name = conf->hdr_value = conf->hdr_line = NULL;
    conf->nhdr = 0;
    free(conf->fwd);
    conf->fwd = NULL;
    conf->nfwd = 0;
}
