/* The keys redis_in and redis_out share. The host has checked their types and bounds;
 * what is left is the URL, which only this plugin understands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis.h"

/* redis://[user@]host[:port][/db]; [::1] for IPv6. */
static int parse_url(struct redis_conf *c, const char *url, const char **user, char *why, size_t whysz)
{
    const char *p, *at, *slash, *hend, *colon;
    char *end;

    if (strncmp(url, "rediss://", 9) == 0) {
        snprintf(why, whysz,
                 "TLS (rediss://) needs hiredis 1.0 or newer with hiredis_ssl; Debian 12 has hiredis 0.14, "
                 "which has no TLS: use redis:// on a trusted network or a TLS tunnel (stunnel, spiped)");
        return -1;
    }
    p = url + 8; /* the schema let redis:// and rediss:// through */
    slash = strchr(p, '/');
    at = strchr(p, '@');
    if (at && (!slash || at < slash)) {
        if (memchr(p, ':', (size_t)(at - p))) {
            snprintf(why, whysz,
                     "a password does not belong in the URL (it would be logged): use password_file");
            return -1;
        }
        if (at == p) {
            snprintf(why, whysz, "empty user name before '@'");
            return -1;
        }
        static __thread char ubuf[256];
        snprintf(ubuf, sizeof(ubuf), "%.*s", (int)(at - p), p);
        *user = ubuf;
        p = at + 1;
    }
    hend = slash ? slash : p + strlen(p);
    c->port = 6379;
    if (*p == '[') {
        const char *rb = memchr(p, ']', (size_t)(hend - p));
        if (!rb) {
            snprintf(why, whysz, "unclosed '[' in \"%s\"", url);
            return -1;
        }
        snprintf(c->host, sizeof(c->host), "%.*s", (int)(rb - p - 1), p + 1);
        colon = rb + 1 < hend && rb[1] == ':' ? rb + 1 : NULL;
        if (rb + 1 < hend && !colon) {
            snprintf(why, whysz, "junk after ']' in \"%s\"", url);
            return -1;
        }
    } else {
        colon = memchr(p, ':', (size_t)(hend - p));
        size_t hl = (size_t)((colon ? colon : hend) - p);
        if (hl >= sizeof(c->host)) {
            snprintf(why, whysz, "host name too long");
            return -1;
        }
        memcpy(c->host, p, hl);
        c->host[hl] = '\0';
    }
    if (c->host[0] == '\0') {
        snprintf(why, whysz, "no host in \"%s\"", url);
        return -1;
    }
    if (colon) {
        long port = strtol(colon + 1, &end, 10);
        if (end != hend || colon + 1 == hend || port < 1 || port > 65535) {
            snprintf(why, whysz, "bad port in \"%s\"", url);
            return -1;
        }
        c->port = (int)port;
    }
    if (slash && slash[1]) {
        long db = strtol(slash + 1, &end, 10);
        if (*end || db < 0 || db > 1000000) {
            snprintf(why, whysz, "\"%s\" after the host is not a database number", slash + 1);
            return -1;
        }
        c->db = (int)db;
    }
    return 0;
}

int redis_conf_load(struct redis_conf *c, const struct redis_keys *k, const struct gust_cfg *cfg,
                    struct gust_err *err)
{
    const struct gust_host_api *h = redis_host;
    const char *url_user = NULL;
    char why[300];

    memset(c, 0, sizeof(*c));
    if (parse_url(c, k->url, &url_user, why, sizeof(why)) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: url: %s", h->cfg_where(cfg, "url"), why);
    }
    if (k->db != 0) {
        if (c->db != 0 && c->db != k->db) {
            return gust_err_set(err, GUST_ECONFIG, "%s: db %lld differs from the URL's /%d",
                                h->cfg_where(cfg, "db"), (long long)k->db, c->db);
        }
        c->db = (int)k->db;
    }
    if (url_user && k->user && strcmp(url_user, k->user) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: user differs from the URL's", h->cfg_where(cfg, "user"));
    }
    c->user = k->user;
    if (!c->user && url_user && !(c->user = strdup(url_user))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    c->owns_user = c->user && c->user != k->user;
    if (c->user && !k->password_file) {
        return gust_err_set(err, GUST_ECONFIG, "%s: a user needs a password_file",
                            h->cfg_where(cfg, k->user ? "user" : "url"));
    }
    c->password_file = k->password_file;
    c->timeout_ms = k->timeout;
    if (!k->field[0]) {
        return gust_err_set(err, GUST_ECONFIG, "%s: field: must not be empty", h->cfg_where(cfg, "field"));
    }
    snprintf(c->shown, sizeof(c->shown), "%s:%d/%d", c->host, c->port, c->db);
    return 0;
}

void redis_conf_free(struct redis_conf *c)
{
    if (c->owns_user) {
        free((void *)c->user);
    }
    c->user = NULL;
    c->owns_user = 0;
}
