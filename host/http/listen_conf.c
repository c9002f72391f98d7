#include "listen_conf.h"

#include <openssl/err.h>
#include <stdio.h>
#include <string.h>

#include "../conf/value.h"
#include "origin.h"

/* OpenSSL's reason for the last failure, for a message. */
static const char *ssl_reason(char *buf, size_t size)
{
    unsigned long e = ERR_get_error();
    ERR_error_string_n(e, buf, size);
    ERR_clear_error();
    return e != 0 ? buf : "unknown error";
}

SSL_CTX *gust_listen_tls_context(const struct gust_listen_conf *c, struct gust_err *err)
{
    char why[200];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        gust_err_set(err, GUST_ENOMEM, "out of memory");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, c->certificate) != 1) {
        gust_err_set(err, GUST_ECONFIG, "ssl_certificate %s: not a PEM certificate chain (%s)",
                     c->certificate, ssl_reason(why, sizeof(why)));
    } else if (SSL_CTX_use_PrivateKey_file(ctx, c->certificate_key, SSL_FILETYPE_PEM) != 1) {
        /* Either no key, or the key of another certificate. */
        const char *r = ssl_reason(why, sizeof(why));
        gust_err_set(err, GUST_ECONFIG,
                     strstr(r, "mismatch") != NULL
                         ? "ssl_certificate_key %s is not the key of ssl_certificate (%s)"
                         : "ssl_certificate_key %s: not a PEM private key (%s)",
                     c->certificate_key, r);
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        gust_err_set(err, GUST_ECONFIG, "ssl_certificate_key %s is not the key of ssl_certificate (%s)",
                     c->certificate_key, ssl_reason(why, sizeof(why)));
    } else {
        return ctx;
    }
    SSL_CTX_free(ctx);
    return NULL;
}

int gust_listen_conf_load(const struct gust_cfg *http, struct gust_listen_conf *c, struct gust_err *err)
{
    memset(c, 0, sizeof(*c));
    const char *where = gust_cfg_where(http, "listen");
    size_t n = gust_cfg_count(http, "listen");
    c->addr = gust_cfg_item(http, "listen", 0);
    c->certificate = gust_cfg_str(http, "ssl_certificate");
    c->certificate_key = gust_cfg_str(http, "ssl_certificate_key");
    int port;
    if (n == 0 || n > 2) {
        return gust_err_set(err, GUST_ECONFIG, "%s: listen takes an address and, for HTTPS, ssl (one listen)",
                            where);
    }
    if (gust_parse_addr(c->addr, &port) != 0) {
        return gust_err_set(
            err, GUST_ECONFIG,
            "%s: invalid address '%s' for 'listen' (host:port, e.g. 127.0.0.1:8787 or [::1]:8787)", where,
            c->addr);
    }
    /* Whoever reaches a listener that is not loopback reaches the admin routes: no token,
     * no start (and no reload that drops it: gust_http_policy_create). */
    if (!gust_listen_is_loopback(c->addr) && gust_cfg_str(http, "admin_token_file") == NULL &&
        gust_cfg_str(http, "admin_token_env") == NULL) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s: listen %s is not a loopback address, so the admin routes need a token: set "
                            "admin_token_file (or admin_token_env) in this http block, or listen on 127.0.0.1",
                            where, c->addr);
    }
    if ((gust_cfg_str(http, "admin_read_token_file") != NULL || gust_cfg_str(http, "admin_read_token_env") != NULL) &&
        gust_cfg_str(http, "admin_token_file") == NULL && gust_cfg_str(http, "admin_token_env") == NULL) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s: admin_read_token_file (or admin_read_token_env) needs an admin token too: set "
                            "admin_token_file or admin_token_env in this http block",
                            where);
    }
    /* server_names: checked here for `gust -t`'s file:line (the policy takes them at
     * start and at each reload). */
    size_t nnames = gust_cfg_count(http, "server_names");
    const char *names[GUST_SERVER_NAMES_MAX + 1];
    for (size_t i = 0; i < nnames && i <= GUST_SERVER_NAMES_MAX; i++) {
        names[i] = gust_cfg_item(http, "server_names", i);
    }
    struct gust_admin_names checked;
    struct gust_err inner;
    if (gust_admin_names_init(&checked, c->addr, 0, names, nnames, &inner) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: %s", gust_cfg_where(http, "server_names"), inner.msg);
    }
    if (n == 2) {
        const char *flag = gust_cfg_item(http, "listen", 1);
        if (strcmp(flag, "ssl") != 0) {
            return gust_err_set(err, GUST_ECONFIG, "%s: listen %s %s: only `ssl` may follow the address",
                                where, c->addr, flag);
        }
        c->ssl = 1;
    }
    if (!c->ssl) {
        const char *k = c->certificate != NULL       ? "ssl_certificate"
                        : c->certificate_key != NULL ? "ssl_certificate_key"
                                                     : NULL;
        if (k != NULL) {
            return gust_err_set(err, GUST_ECONFIG,
                                "%s: %s, but the listener is plain HTTP (write `listen %s ssl;`)",
                                gust_cfg_where(http, k), k, c->addr);
        }
        return 0;
    }
    if (c->certificate == NULL || c->certificate_key == NULL) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s: listen %s ssl needs ssl_certificate and ssl_certificate_key", where,
                            c->addr);
    }
    SSL_CTX *ctx = gust_listen_tls_context(c, &inner);
    if (ctx == NULL) {
        const char *k =
            strncmp(inner.msg, "ssl_certificate_key", 19) == 0 ? "ssl_certificate_key" : "ssl_certificate";
        return gust_err_set(err, GUST_ECONFIG, "%s: %s", gust_cfg_where(http, k), inner.msg);
    }
    SSL_CTX_free(ctx);
    return 0;
}
