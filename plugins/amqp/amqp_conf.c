/* The keys amqp_in and amqp_out share. The host has checked their types and bounds;
 * what is left is the URL, which rabbitmq-c parses (amqp_parse_url: percent-decoding of
 * the user, password and vhost included). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_plugin.h"

int amqp_conf_load(struct amqp_conf *c, const struct amqp_keys *k, const struct gust_cfg *cfg,
                   struct gust_err *err)
{
    const struct gust_host_api *h = amqp_host;
    struct amqp_connection_info info;

    memset(c, 0, sizeof(*c));
    /* The URL may hold a password: no error repeats it. The schema has checked its scheme. */
    if (!(c->url_copy = strdup(k->url))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    amqp_default_connection_info(&info);
    if (amqp_parse_url(c->url_copy, &info) != AMQP_STATUS_OK) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s: url: not a valid amqp[s]://[user[:password]@]host[:port][/vhost] URL "
                            "(a bad port, or a reserved character not %%-encoded)",
                            h->cfg_where(cfg, "url"));
    }
    if (!info.host || !info.host[0]) {
        return gust_err_set(err, GUST_ECONFIG, "%s: url: no host", h->cfg_where(cfg, "url"));
    }
    if (info.port < 1 || info.port > 65535) {
        return gust_err_set(err, GUST_ECONFIG, "%s: url: bad port", h->cfg_where(cfg, "url"));
    }
    if (!info.vhost || !info.vhost[0]) {
        return gust_err_set(err, GUST_ECONFIG, "%s: url: empty vhost (the default vhost \"/\" is written %%2f)",
                            h->cfg_where(cfg, "url"));
    }
    c->host = info.host;
    c->port = info.port;
    c->user = info.user;
    c->url_password = info.password;
    c->vhost = info.vhost;
    c->tls = info.ssl ? 1 : 0;
    if (k->tls_ca && !c->tls) {
        return gust_err_set(err, GUST_ECONFIG, "%s: tls_ca: the url is amqp://, tls_ca needs amqps://",
                            h->cfg_where(cfg, "tls_ca"));
    }
    c->password_file = k->password_file;
    c->tls_ca = k->tls_ca;
    c->timeout_ms = k->timeout;
    c->heartbeat_s = (int)(k->heartbeat / 1000);
    snprintf(c->shown, sizeof(c->shown), "%s://%s:%d/%s", c->tls ? "amqps" : "amqp", c->host, c->port,
             strcmp(c->vhost, "/") == 0 ? "%2f" : c->vhost);
    return 0;
}

void amqp_conf_free(struct amqp_conf *c)
{
    free(c->url_copy);
    c->url_copy = NULL;
}
