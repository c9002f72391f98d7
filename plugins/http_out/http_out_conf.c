/* An http_out instance's keys: the schema that binds them, and the checks of the values
 * only this plugin understands (the host has already checked their types). The request
 * head every message shares is built here once. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_out.h"

#define KEY(f, T, def, flags, help) GUST_KEY(struct http_out_keys, f, T, def, flags, help)
const struct gust_schema_key http_out_schema[] = {
    KEY(url, STR, NULL, GUST_K_REQUIRED, "where to send each message (http:// or https://)"),
    KEY(method, STR, "POST", 0, "POST or PUT"),
    KEY(header, LIST, NULL, GUST_K_SECRET,
        "extra request header \"Name: value\", repeatable; values are literal (use ${ENV})"),
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
        "longest pause a 429 or 503 with Retry-After imposes on the whole sink (no request is sent "
        "until it ends); as nats retry_max_delay, the longest redelivery delay"),
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
static int build_head(struct http_out_conf *conf, int put_method)
{
    const struct gust_list *hl = &conf->k.header;
    int own_host = 0;
    const struct http_out_url *u = &conf->u;

    for (size_t i = 0; i < hl->n; i++) {
        own_host |= gust_http_header_is(hl->items[i], "Host");
    }
    if (put_str(conf, put_method ? "PUT " : "POST ") != 0 ||
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

    if (strcmp(k->method, "POST") != 0 && strcmp(k->method, "PUT") != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: method: \"%s\" is neither POST nor PUT",
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
    for (size_t i = 0; i < k->header.n; i++) {
        const char *why = check_header(k->header.items[i]);
        if (why) {
            /* The value may be a secret: name the header by its position only. */
            rc = gust_err_set(err, GUST_ECONFIG, "%s: header #%zu %s", api->cfg_where(cfg, "header"), i + 1,
                              why);
            goto fail;
        }
    }
    if (build_head(conf, strcmp(k->method, "PUT") == 0) != 0) {
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
}
