/* The keys mqtt_in and mqtt_out share (bound by MQTT_COMMON_KEYS in each type's schema).
 * The host has checked their types already; what is left are the values only this plugin
 * understands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt.h"

static int parse_broker(struct mqtt_conf *c, const char *addr)
{
    const char *colon = strrchr(addr, ':');
    char *end;
    long port;

    if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(c->host)) {
        return -1;
    }
    port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535) {
        return -1;
    }
    /* [::1]:1883 */
    if (addr[0] == '[' && colon[-1] == ']') {
        memcpy(c->host, addr + 1, (size_t)(colon - addr) - 2);
        c->host[colon - addr - 2] = '\0';
    } else {
        memcpy(c->host, addr, (size_t)(colon - addr));
        c->host[colon - addr] = '\0';
    }
    c->port = (int)port;
    return 0;
}

int mqtt_conf_load(struct mqtt_conf *c, const struct mqtt_keys *k, const struct gust_cfg *cfg,
                   const char *unit, char *client_id_buf, size_t bufsz, struct gust_err *err)
{
    const struct gust_host_api *h = mqtt_host;

    memset(c, 0, sizeof(*c));
    if (parse_broker(c, k->broker) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: broker: \"%s\" is not host:port", h->cfg_where(cfg, "broker"),
                            k->broker);
    }
    c->qos = (int)k->qos;
    c->client_id = k->client_id;
    if (!c->client_id) {
        /* A fixed default, so a persistent session survives restarts without extra config:
         * "gust-source-x" for unit "source:x" (a source and a sink may share a name, and
         * two connections with one client id would keep kicking each other off). */
        snprintf(client_id_buf, bufsz, "gust-%s", unit);
        for (char *p = client_id_buf; *p; p++) {
            *p = *p == ':' ? '-' : *p;
        }
        c->client_id = client_id_buf;
    }
    if (strlen(c->client_id) == 0 || strlen(c->client_id) > 65535) {
        return gust_err_set(err, GUST_ECONFIG, "%s: client_id: must not be empty", h->cfg_where(cfg, "client_id"));
    }
    c->username = k->username;
    if (k->password && k->password_file) {
        return gust_err_set(err, GUST_ECONFIG, "%s: password and password_file are exclusive",
                            h->cfg_where(cfg, "password_file"));
    }
    if ((k->password || k->password_file) && !c->username) {
        return gust_err_set(err, GUST_ECONFIG, "%s: a password needs a username (MQTT 3.1.1)",
                            h->cfg_where(cfg, k->password ? "password" : "password_file"));
    }
    if (k->password && !(c->password = strdup(k->password))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    c->password_file = k->password_file;
    c->tls_ca = k->tls_ca;
    c->tls_cert = k->tls_cert;
    c->tls_key = k->tls_key;
    c->tls = c->tls_ca || c->tls_cert || c->tls_key;
    if (!c->tls_cert != !c->tls_key) {
        mqtt_conf_free(c);
        return gust_err_set(err, GUST_ECONFIG, "%s: tls_cert and tls_key go together",
                            h->cfg_where(cfg, c->tls_cert ? "tls_cert" : "tls_key"));
    }
    c->keepalive_s = (int)(k->keepalive / 1000);
    c->timeout_ms = k->timeout;
    return 0;
}

int mqtt_conf_read_password(struct mqtt_conf *c, const struct gust_cfg *cfg, struct gust_err *err)
{
    const char *path = c->password_file;
    char line[1024];
    FILE *f;

    if (!path) {
        return 0;
    }
    if (!(f = fopen(path, "r"))) {
        return gust_err_set(err, GUST_ECONFIG, "%s: password_file: %s: %s",
                            mqtt_host->cfg_where(cfg, "password_file"), path, strerror(errno));
    }
    if (!fgets(line, sizeof(line), f)) {
        line[0] = '\0';
    }
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    free(c->password);
    if (!(c->password = strdup(line))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    return 0;
}

void mqtt_conf_free(struct mqtt_conf *c)
{
    if (c->password) {
        /* Not left in freed memory for a core dump to show. */
        memset(c->password, 0, strlen(c->password));
        free(c->password);
        c->password = NULL;
    }
}
