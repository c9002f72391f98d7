/* Reading and checking an http_out instance's keys. The host has already checked their
 * types; what is left are the values only this plugin understands. The request head every
 * message shares is built here once. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_out.h"
#include "http_header.h"

/* Is h's name (up to its colon) name? */
static int named(const char *h, const char *name)
{
    size_t n = strlen(name);
    return strncasecmp(h, name, n) == 0 && h[n] == ':';
}

/* Returns NULL when h is a usable "Name: value" line, else what is wrong with it. */
static const char *check_header(const char *h)
{
    const char *why = gust_http_header_problem(h);
    if (why != NULL) {
        return why;
    }
    /* The body's framing and type are the plugin's: content_type sets the type. */
    if (named(h, "Content-Type") || named(h, "Content-Length") || named(h, "Transfer-Encoding")) {
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
static int build_head(struct http_out_conf *conf, const struct gust_host_api *api,
                      const struct gust_cfg *cfg, int put_method, const char *ctype)
{
    size_t nh = api->cfg_count(cfg, "header");
    int own_host = 0;
    const struct http_out_url *u = &conf->u;

    for (size_t i = 0; i < nh; i++) {
        own_host |= named(api->cfg_item(cfg, "header", i), "Host");
    }
    if (put_str(conf, put_method ? "PUT " : "POST ") != 0 ||
        (u->target_len == 0 || u->target[0] == '?' ? put_str(conf, "/") : 0) != 0 ||
        gust_buf_append(&conf->head, u->target, u->target_len) != 0 || put_str(conf, " HTTP/1.1\r\n") != 0 ||
        /* A Host header of the user's own (a virtual host behind an address) replaces ours. */
        (!own_host && (put_str(conf, "Host: ") != 0 ||
                       gust_buf_append(&conf->head, u->authority, u->authority_len) != 0 ||
                       put_str(conf, "\r\n") != 0)) ||
        put_str(conf, "Content-Type: ") != 0 || put_str(conf, ctype) != 0 || put_str(conf, "\r\n") != 0) {
        return -1;
    }
    for (size_t i = 0; i < nh; i++) {
        if (put_str(conf, api->cfg_item(cfg, "header", i)) != 0 || put_str(conf, "\r\n") != 0) {
            return -1;
        }
    }
    return put_str(conf, "Content-Length: ");
}

int http_out_conf_load(struct http_out_conf *conf, const struct gust_host_api *api,
                       const struct gust_cfg *cfg, struct gust_err *err)
{
    int rc;

    memset(conf, 0, sizeof(*conf));
    conf->url = api->cfg_str(cfg, "url");
    if (!conf->url || http_out_url_parse(&conf->u, conf->url) != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: url: \"%s\" is not an http:// or https:// URL",
                          api->cfg_where(cfg, "url"), conf->url ? conf->url : "");
        goto fail;
    }
    conf->tls_ca = api->cfg_str(cfg, "tls_ca");

    const char *method = api->cfg_str(cfg, "method");
    if (strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: method: \"%s\" is neither POST nor PUT",
                          api->cfg_where(cfg, "method"), method);
        goto fail;
    }

    static const struct {
        const char *key;
        long max;
    } limits[] = {{"timeout", 3600000},
                  {"max_inflight", 65536},
                  {"connections", 1024},
                  {"pipeline", 65536}};
    long vals[4];
    for (size_t i = 0; i < 4; i++) {
        int64_t v = api->cfg_int(cfg, limits[i].key);
        if (v < 1 || v > limits[i].max) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: %s: %lld is not within 1..%ld",
                              api->cfg_where(cfg, limits[i].key), limits[i].key, (long long)v,
                              limits[i].max);
            goto fail;
        }
        vals[i] = (long)v;
    }
    conf->timeout_ms = vals[0];
    conf->max_inflight = (size_t)vals[1];
    conf->connections = (size_t)vals[2];
    conf->pipeline = (size_t)vals[3];

    const char *ctype = api->cfg_str(cfg, "content_type");
    if (strpbrk(ctype, "\r\n")) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: content_type: holds a line break",
                          api->cfg_where(cfg, "content_type"));
        goto fail;
    }
    for (size_t i = 0, n = api->cfg_count(cfg, "header"); i < n; i++) {
        const char *why = check_header(api->cfg_item(cfg, "header", i));
        if (why) {
            /* The value may be a secret: name the header by its position only. */
            rc = gust_err_set(err, GUST_ECONFIG, "%s: header #%zu %s",
                              api->cfg_where(cfg, "header"), i + 1, why);
            goto fail;
        }
    }
    if (build_head(conf, api, cfg, strcmp(method, "PUT") == 0, ctype) != 0) {
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
