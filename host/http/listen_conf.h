/* The listener as host.conf writes it, nginx's way: `listen ADDR;` or, for HTTPS straight
 * to gust (devices that post without a proxy in front), `listen ADDR ssl;` with
 * `ssl_certificate FILE;` and `ssl_certificate_key FILE;`. */
#ifndef GUST_HTTP_LISTEN_CONF_H
#define GUST_HTTP_LISTEN_CONF_H

#include <openssl/ssl.h>

#include "gust/err.h"
#include "gust/schema.h"

struct gust_listen_conf {
    const char *addr; /* borrowed from the checked http block */
    int ssl;
    const char *certificate; /* ssl: PEM chain and key, borrowed */
    const char *certificate_key;
};

/* Reads and checks the keys of a checked `http { }` block: the address, the ssl flag,
 * and (with it) the certificate and key, which must load and match; an address that is
 * not loopback needs an admin token. Errors name file:line. Runs at `gust -t` and at
 * start. */
int gust_listen_conf_load(const struct gust_cfg *http, struct gust_listen_conf *out, struct gust_err *err);

/* The listener's TLS context (TLS 1.2 and later, HTTP/1.1), or NULL with why in err. */
SSL_CTX *gust_listen_tls_context(const struct gust_listen_conf *conf, struct gust_err *err);

#endif
