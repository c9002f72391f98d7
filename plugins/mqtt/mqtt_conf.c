/* The keys mqtt_in and mqtt_out share. The host has checked their types already; what is
 * left are the values only this plugin understands. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt.h"


const char *mqtt_connack_text(int rc)
{
    switch (rc) {
    case 0: return "accepted";
    case 1: return "unacceptable protocol version";
    case 2: return "client identifier rejected";
    case 3: return "server unavailable";
    case 4: return "bad user name or password";
    case 5: return "not authorized";
    default: return "unknown return code";
    }
}

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

int mqtt_conf_load(struct mqtt_conf *c, const struct gust_cfg *cfg, const char *unit,
                   char *client_id_buf, size_t bufsz, struct gust_err *err)
{
    const struct gust_host_api *h = mqtt_host;
    int64_t v;

    memset(c, 0, sizeof(*c));
    if (parse_broker(c, h->cfg_str(cfg, "broker")) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: broker: \"%s\" is not host:port",
                        h->cfg_where(cfg, "broker"), h->cfg_str(cfg, "broker"));
    }
    v = h->cfg_int(cfg, "qos");
    if (v != 0 && v != 1) {
        return gust_err_set(err, GUST_ECONFIG, "%s: qos: %lld is neither 0 nor 1 (QoS 2 is not supported)",
                        h->cfg_where(cfg, "qos"), (long long)v);
    }
    c->qos = (int)v;
    c->client_id = h->cfg_str(cfg, "client_id");
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
    c->username = h->cfg_str(cfg, "username");
    const char *pw = h->cfg_str(cfg, "password");
    if (pw && h->cfg_str(cfg, "password_file")) {
        return gust_err_set(err, GUST_ECONFIG, "%s: password and password_file are exclusive",
                        h->cfg_where(cfg, "password_file"));
    }
    if ((pw || h->cfg_str(cfg, "password_file")) && !c->username) {
        return gust_err_set(err, GUST_ECONFIG, "%s: a password needs a username (MQTT 3.1.1)",
                        h->cfg_where(cfg, pw ? "password" : "password_file"));
    }
    if (pw && !(c->password = strdup(pw))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    c->tls_ca = h->cfg_str(cfg, "tls_ca");
    c->tls_cert = h->cfg_str(cfg, "tls_cert");
    c->tls_key = h->cfg_str(cfg, "tls_key");
    c->tls = c->tls_ca || c->tls_cert || c->tls_key;
    if (!c->tls_cert != !c->tls_key) {
        mqtt_conf_free(c);
        return gust_err_set(err, GUST_ECONFIG, "%s: tls_cert and tls_key go together",
                        h->cfg_where(cfg, c->tls_cert ? "tls_cert" : "tls_key"));
    }
    v = h->cfg_int(cfg, "keepalive");
    if (v < 1000 || v > 65535000) {
        mqtt_conf_free(c);
        return gust_err_set(err, GUST_ECONFIG, "%s: keepalive: must be within 1s..65535s", h->cfg_where(cfg, "keepalive"));
    }
    c->keepalive_s = (int)(v / 1000);
    c->timeout_ms = h->cfg_int(cfg, "timeout");
    if (c->timeout_ms < 10) {
        mqtt_conf_free(c);
        return gust_err_set(err, GUST_ECONFIG, "%s: timeout: at least 10ms", h->cfg_where(cfg, "timeout"));
    }
    return 0;
}

int mqtt_conf_read_password(struct mqtt_conf *c, const struct gust_cfg *cfg, struct gust_err *err)
{
    const char *path = mqtt_host->cfg_str(cfg, "password_file");
    char line[1024];
    FILE *f;

    if (!path) {
        return 0;
    }
    if (!(f = fopen(path, "r"))) {
        return gust_err_set(err, GUST_ECONFIG, "%s: password_file: %s: %s", mqtt_host->cfg_where(cfg, "password_file"),
                        path, strerror(errno));
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
