/* Which of a message's NATS headers go out as HTTP request headers: the one place that
 * decides it (forward_headers, and the W3C trace context, traceparent and tracestate,
 * always: a trace goes on to the far end unless the message has none).
 *
 * Names match case-insensitively (NATS keeps a header's name as it was written; HTTP
 * names are case-insensitive). Never forwarded: Nats-* (the bus's own: Nats-Msg-Id is
 * the message's identity on this bus, not the far end's), the framing headers the plugin
 * owns and a name the `header` key sets (refused at load), and a value holding a line
 * break or another control character (skipped per message: it would inject a header
 * line). With batching, a request carries the headers of its batch's first message. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_out.h"

static const char *const always[] = {"traceparent", "tracestate"};
#define NALWAYS (sizeof(always) / sizeof(always[0]))

static int value_ok(const char *v)
{
    for (; *v; v++) {
        if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f) {
            return 0;
        }
    }
    return 1;
}

size_t http_out_fwd(const struct http_out_conf *conf, const struct gust_msg *m, struct gust_buf *out)
{
    size_t total = 0;

    for (size_t i = 0; i < m->nheaders; i++) {
        const struct gust_header *h = &m->headers[i];
        int wanted = 0;
        for (size_t f = 0; !wanted && f < conf->nfwd; f++) {
            wanted = strcasecmp(h->name, conf->fwd[f]) == 0;
        }
        if (!wanted || !value_ok(h->value)) {
            continue;
        }
        size_t nl = strlen(h->name), vl = strlen(h->value);
        total += nl + 2 + vl + 2;
        if (out != NULL &&
            (gust_buf_append(out, h->name, nl) != 0 || gust_buf_append(out, ": ", 2) != 0 ||
             gust_buf_append(out, h->value, vl) != 0 || gust_buf_append(out, "\r\n", 2) != 0)) {
            return total; /* the caller reserved the room: cannot happen */
        }
    }
    return total;
}

const char *http_out_msg_header(const struct gust_msg *m, const char *name)
{
    for (size_t i = 0; i < m->nheaders; i++) {
        if (strcasecmp(m->headers[i].name, name) == 0) {
            return m->headers[i].value;
        }
    }
    return NULL;
}

const char *http_out_header_name_problem(const struct http_out_conf *conf, const char *name)
{
    static const char *const owned[] = {"Content-Type", "Content-Length", "Transfer-Encoding", "Host",
                                        "Connection"};

    if (*name == '\0') {
        return "is empty";
    }
    for (const char *c = name; *c; c++) {
        if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", *c)) {
            return "is not a header name";
        }
    }
    if (strncasecmp(name, "Nats-", 5) == 0) {
        return "is the bus's own (Nats-*), never forwarded";
    }
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
        if (strcasecmp(name, owned[i]) == 0) {
            return "is a header the plugin owns";
        }
    }
    for (size_t i = 0; i < conf->nhdr; i++) {
        if (strcasecmp(name, conf->hdr_name[i]) == 0) {
            return "is set by the header key too";
        }
    }
    return NULL;
}

int http_out_fwd_load(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                      struct gust_err *err)
{
    const struct gust_list *l = &conf->k.forward_headers;

    if (!(conf->fwd = calloc(l->n + NALWAYS, sizeof(*conf->fwd)))) {
        return gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
    }
    for (size_t i = 0; i < NALWAYS; i++) {
        /* A header the user sets himself is his, trace context or not. */
        if (http_out_header_name_problem(conf, always[i]) == NULL) {
            conf->fwd[conf->nfwd++] = always[i];
        }
    }
    for (size_t i = 0; i < l->n; i++) {
        const char *why = http_out_header_name_problem(conf, l->items[i]);
        if (why != NULL) {
            return gust_err_set(err, GUST_ECONFIG, "%s: forward_headers: \"%s\" %s",
                                api->cfg_where(cfg, "forward_headers"), l->items[i], why);
        }
        int dup = 0;
        for (size_t f = 0; !dup && f < conf->nfwd; f++) {
            dup = strcasecmp(conf->fwd[f], l->items[i]) == 0;
        }
        if (!dup) {
            conf->fwd[conf->nfwd++] = l->items[i];
        }
    }
    return 0;
}
