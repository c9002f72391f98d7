/* The keys kafka_in and kafka_out share, as one librdkafka configuration.
 *
 * librdkafka's own properties come through the prefix key `rdkafka`
 * (`rdkafka.session.timeout.ms 30000;`: the host hands them over as name, value pairs).
 * librdkafka checks each name and value here, at create, so gust -t refuses a bad one
 * with file:line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"

int kafka_conf_set(rd_kafka_conf_t *c, const char *name, const char *value, struct gust_err *err)
{
    char why[512];
    if (rd_kafka_conf_set(c, name, value, why, sizeof(why)) != RD_KAFKA_CONF_OK) {
        return gust_err_set(err, GUST_ECONFIG, "librdkafka refuses %s: %s", name, why);
    }
    return 0;
}

/* host:port, [v6]:port; the port 1..65535. */
static int broker_ok(const char *b)
{
    const char *colon = b[0] == '[' ? strstr(b, "]:") : strrchr(b, ':');
    if (!colon || colon == b || (b[0] == '[' && colon == b + 1)) {
        return 0;
    }
    const char *port = b[0] == '[' ? colon + 2 : colon + 1;
    char *end;
    long p = strtol(port, &end, 10);
    if (*port == '\0' || *end != '\0' || p < 1 || p > 65535) {
        return 0;
    }
    return strpbrk(b, " ,\t") == NULL && (b[0] == '[' || memchr(b, ':', (size_t)(colon - b)) == NULL);
}

static int read_secret(const char *path, char *out, size_t outsz)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    if (!fgets(out, (int)outsz, f)) {
        out[0] = '\0';
    }
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

static int in_list(const char *const *list, const char *s)
{
    for (size_t i = 0; list && list[i]; i++) {
        if (strcmp(list[i], s) == 0) {
            return 1;
        }
    }
    return 0;
}

int kafka_conf_build(const struct kafka_keys *k, const struct gust_cfg *cfg, const char *const *defaults,
                     const char *const *owned, rd_kafka_conf_t **out, char *shown, size_t shownsz,
                     struct gust_err *err)
{
    const struct gust_host_api *h = kafka_host;
    struct gust_buf list = {0};
    struct gust_err e = {{0}};
    char secret[512] = "";
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    int rc = 0;

    *out = NULL;
    if (!c) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < k->brokers.n; i++) {
        if (!broker_ok(k->brokers.items[i])) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: brokers: \"%s\" is not host:port", h->cfg_where(cfg, "brokers"),
                              k->brokers.items[i]);
            goto fail;
        }
        if (gust_buf_printf(&list, "%s%s", i ? "," : "", k->brokers.items[i]) != 0) {
            rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
            goto fail;
        }
    }
    snprintf(shown, shownsz, "%s", list.data ? list.data : "");
    if ((rc = kafka_conf_set(c, "bootstrap.servers", list.data ? list.data : "", &e)) != 0) {
        rc = gust_err_set(err, rc, "%s: brokers: %s", h->cfg_where(cfg, "brokers"), e.msg);
        goto fail;
    }
    if (k->sasl_mechanism && !k->sasl_username) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: sasl_mechanism needs sasl_username and sasl_password_file",
                          h->cfg_where(cfg, "sasl_mechanism"));
        goto fail;
    }
    if (k->sasl_username && !k->sasl_password_file) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: sasl_username needs sasl_password_file",
                          h->cfg_where(cfg, "sasl_username"));
        goto fail;
    }
    if (k->sasl_password_file && !k->sasl_username) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: sasl_password_file needs sasl_username",
                          h->cfg_where(cfg, "sasl_password_file"));
        goto fail;
    }
    const char *protocol = k->sasl_username ? (k->tls_ca ? "SASL_SSL" : "SASL_PLAINTEXT") : (k->tls_ca ? "SSL" : NULL);
    if (protocol && (rc = kafka_conf_set(c, "security.protocol", protocol, err)) != 0) {
        goto fail;
    }
    if (k->sasl_username) {
        if (read_secret(k->sasl_password_file, secret, sizeof(secret)) != 0) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: sasl_password_file %s cannot be read",
                              h->cfg_where(cfg, "sasl_password_file"), k->sasl_password_file);
            goto fail;
        }
        if ((rc = kafka_conf_set(c, "sasl.mechanisms", k->sasl_mechanism ? k->sasl_mechanism : "PLAIN", err)) != 0 ||
            (rc = kafka_conf_set(c, "sasl.username", k->sasl_username, err)) != 0 ||
            (rc = kafka_conf_set(c, "sasl.password", secret, err)) != 0) {
            goto fail;
        }
    }
    if (k->tls_ca && (rc = kafka_conf_set(c, "ssl.ca.location", k->tls_ca, &e)) != 0) {
        rc = gust_err_set(err, rc, "%s: tls_ca: %s", h->cfg_where(cfg, "tls_ca"), e.msg);
        goto fail;
    }
    for (size_t i = 0; defaults && defaults[i]; i += 2) {
        if ((rc = kafka_conf_set(c, defaults[i], defaults[i + 1], err)) != 0) {
            goto fail;
        }
    }
    for (size_t i = 0; i < k->rdkafka.n; i += 2) {
        const char *name = k->rdkafka.items[i], *value = k->rdkafka.items[i + 1];
        if (in_list(owned, name)) {
            rc = gust_err_set(err, GUST_ECONFIG,
                              "%s: rdkafka.%s: set by gust (the delivery guarantee depends on it): use the "
                              "plugin's own key",
                              h->cfg_where(cfg, "rdkafka"), name);
            goto fail;
        }
        if ((rc = kafka_conf_set(c, name, value, &e)) != 0) {
            rc = gust_err_set(err, rc, "%s: rdkafka.%s: %s", h->cfg_where(cfg, "rdkafka"), name, e.msg);
            goto fail;
        }
    }
    memset(secret, 0, sizeof(secret));
    gust_buf_free(&list);
    *out = c;
    return 0;
fail:
    memset(secret, 0, sizeof(secret));
    gust_buf_free(&list);
    rd_kafka_conf_destroy(c);
    return rc;
}
