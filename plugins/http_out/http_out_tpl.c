/* http_out's templates: the url's path and query, the method, header values,
 * rate_key and ordered_by may hold placeholders of the SDK's one template engine (gust/sdk.h:
 * {payload.a.b}, {subject}, {subject.N}, {env.X}, {payload.x:-default}), rendered per
 * message. Values go into the url percent-encoded, and into a header only without a line
 * break; a message whose template cannot be rendered (a missing field) is rejected with
 * the reason, so it ends in the dead-letter stream. The authority (host and port) is
 * fixed: the sink's connections all go to one server. */
#define _GNU_SOURCE /* strndup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_out.h"

/* Longest rendered part (a path, a header value, a key). */
#define PART_MAX 8192

struct http_out_tpl {
    struct gust_tpl *target; /* the url's path and query, NULL: fixed */
    char *target_spec;       /* owned: its text, which target borrows */
    struct gust_tpl *method; /* NULL: fixed */
    struct gust_tpl **hdr;   /* per header, NULL: fixed (in conf->head) */
    struct gust_tpl *key;    /* rate_key, NULL: none */
    struct gust_tpl *order;  /* ordered_by, NULL: none */
    int head;                /* a part of the head is templated */
    int own_host;            /* a Host header of the user's */
};

void http_out_tpl_free(struct http_out_tpl *t)
{
    if (!t) {
        return;
    }
    gust_tpl_free(t->target);
    free(t->target_spec);
    gust_tpl_free(t->method);
    for (size_t i = 0; t->hdr && t->hdr[i] != (struct gust_tpl *)-1; i++) {
        gust_tpl_free(t->hdr[i]);
    }
    free(t->hdr);
    gust_tpl_free(t->key);
    gust_tpl_free(t->order);
    free(t);
}

/* Compiles spec when it holds a placeholder (*out NULL otherwise). */
static int compile(const char *spec, struct gust_tpl **out, const struct gust_host_api *api,
                   const struct gust_cfg *cfg, const char *key, struct gust_err *err)
{
    char why[200];
    *out = NULL;
    if (!strchr(spec, '{') && !strchr(spec, '}')) {
        return 0;
    }
    if (gust_tpl_compile(spec, out, why, sizeof(why)) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: %s: %s", api->cfg_where(cfg, key), key, why);
    }
    return 0;
}

int http_out_tpl_load(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                      struct gust_err *err)
{
    struct http_out_tpl *t = calloc(1, sizeof(*t));
    int rc = 0;

    conf->tpl = NULL;
    if (!t || !(t->hdr = calloc(conf->nhdr + 1, sizeof(*t->hdr)))) {
        free(t);
        return gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
    }
    t->hdr[conf->nhdr] = (struct gust_tpl *)-1; /* the end, for free */
    if (!(t->target_spec = strndup(conf->u.target, conf->u.target_len))) {
        rc = gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
        goto fail;
    }
    if ((rc = compile(t->target_spec, &t->target, api, cfg, "url", err)) != 0 ||
        (rc = compile(conf->k.method, &t->method, api, cfg, "method", err)) != 0 ||
        (conf->k.rate_key && (rc = compile(conf->k.rate_key, &t->key, api, cfg, "rate_key", err)) != 0) ||
        (conf->k.ordered_by && (rc = compile(conf->k.ordered_by, &t->order, api, cfg, "ordered_by", err)) != 0)) {
        goto fail;
    }
    if (conf->k.ordered_by && !t->order) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: ordered_by: \"%s\" has no placeholder: it would be one key "
                          "(use ordered on for one order)", api->cfg_where(cfg, "ordered_by"), conf->k.ordered_by);
        goto fail;
    }
    if (conf->k.rate_key && !t->key) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: rate_key: \"%s\" has no placeholder: it would be one key "
                          "(leave rate_key out for one rate)", api->cfg_where(cfg, "rate_key"), conf->k.rate_key);
        goto fail;
    }
    t->head = t->target || t->method;
    for (size_t i = 0; i < conf->nhdr; i++) {
        if ((rc = compile(conf->hdr_value[i], &t->hdr[i], api, cfg, "header", err)) != 0) {
            goto fail;
        }
        t->head |= t->hdr[i] != NULL;
        t->own_host |= strcasecmp(conf->hdr_name[i], "Host") == 0;
    }
    if (!t->head && !t->key && !t->order) {
        http_out_tpl_free(t);
        return 0;
    }
    conf->tpl = t;
    return 0;
fail:
    http_out_tpl_free(t);
    return rc;
}

/* Renders t for m at the end of out (NUL not counted); -1 with why. */
static int render(struct gust_buf *out, const struct gust_tpl *t, const struct gust_msg *m, int flags,
                  const char *what, char *why, size_t whysz)
{
    char reason[200];
    if (gust_buf_reserve(out, PART_MAX) != 0) {
        snprintf(why, whysz, "http_out: out of memory");
        return -1;
    }
    if (gust_tpl_render_as(t, m, flags, NULL, NULL, out->data + out->len, PART_MAX, reason, sizeof(reason)) != 0) {
        snprintf(why, whysz, "%s: %s", what, reason);
        return -1;
    }
    out->len += strlen(out->data + out->len);
    return 0;
}

static int put(struct gust_buf *out, const char *s, size_t len, char *why, size_t whysz)
{
    if (gust_buf_append(out, s, len) != 0) {
        snprintf(why, whysz, "http_out: out of memory");
        return -1;
    }
    return 0;
}

#define PUTS(s) put(out, s, strlen(s), why, whysz)

int http_out_tpl_render(const struct http_out_conf *conf, const struct gust_msg *m, struct gust_buf *out,
                        size_t *head_len, size_t *key_len, size_t *ord_len, char *why, size_t whysz)
{
    const struct http_out_tpl *t = conf->tpl;
    size_t start = out->len;

    *head_len = *key_len = *ord_len = 0;
    if (t->head) {
        if (t->method) {
            size_t at = out->len;
            if (render(out, t->method, m, GUST_TPL_HEADER, "method", why, whysz) != 0) {
                return -1;
            }
            if (!http_out_method_ok(out->data + at, out->len - at)) {
                snprintf(why, whysz, "method: \"%.*s\" is none of POST, PUT, PATCH", (int)(out->len - at > 40 ? 40 : out->len - at),
                         out->data + at);
                return -1;
            }
        } else if (PUTS(conf->k.method) != 0) {
            return -1;
        }
        if (PUTS(" ") != 0) {
            return -1;
        }
        size_t at = out->len;
        if (t->target ? render(out, t->target, m, GUST_TPL_URL, "url", why, whysz) != 0
                      : put(out, conf->u.target, conf->u.target_len, why, whysz) != 0) {
            return -1;
        }
        if (out->len == at || out->data[at] == '?') {
            /* "" or "?q": the path is "/" */
            if (PUTS("/") != 0) {
                return -1;
            }
            memmove(out->data + at + 1, out->data + at, out->len - at - 1);
            out->data[at] = '/';
        }
        if (PUTS(" HTTP/1.1\r\n") != 0 ||
            (!t->own_host && (PUTS("Host: ") != 0 || put(out, conf->u.authority, conf->u.authority_len, why, whysz) != 0 ||
                              PUTS("\r\n") != 0)) ||
            PUTS("Content-Type: ") != 0 || PUTS(conf->k.content_type) != 0 || PUTS("\r\n") != 0) {
            return -1;
        }
        for (size_t i = 0; i < conf->headers.n; i++) {
            if (PUTS(conf->headers.items[i]) != 0 || PUTS("\r\n") != 0) {
                return -1;
            }
        }
        for (size_t i = 0; i < conf->nhdr; i++) {
            if (!t->hdr[i]) {
                continue;
            }
            char what[160];
            snprintf(what, sizeof(what), "header %.100s", conf->hdr_name[i]);
            if (PUTS(conf->hdr_name[i]) != 0 || PUTS(": ") != 0 ||
                render(out, t->hdr[i], m, GUST_TPL_HEADER, what, why, whysz) != 0 || PUTS("\r\n") != 0) {
                return -1;
            }
        }
        if (PUTS("Content-Length: ") != 0) {
            return -1;
        }
        *head_len = out->len - start;
    }
    if (t->key) {
        size_t at = out->len;
        if (render(out, t->key, m, 0, "rate_key", why, whysz) != 0) {
            return -1;
        }
        *key_len = out->len - at;
    }
    if (t->order) {
        size_t at = out->len;
        if (render(out, t->order, m, 0, "ordered_by", why, whysz) != 0) {
            return -1;
        }
        *ord_len = out->len - at;
    }
    return 0;
}
