/* Who a request comes from, when gust sits behind a reverse proxy.
 *
 * X-Forwarded-For and X-Forwarded-Proto are set by whoever sends the request, so they
 * are believed only when the connection comes from an address listed in
 * `trusted_proxies`: then the client is the rightmost X-Forwarded-For entry that is not
 * itself a trusted proxy (entries left of it could have been forged by the client). */
#ifndef GUST_HTTP_PROXY_H
#define GUST_HTTP_PROXY_H

#include <netinet/in.h>
#include <stddef.h>

#include "gust/err.h"

#define GUST_PROXY_MAX 32

struct gust_cidr {
    int family; /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    int bits;
};

struct gust_proxies {
    struct gust_cidr v[GUST_PROXY_MAX];
    size_t n;
};

/* What the access log and the auth warnings show. */
struct gust_client {
    char addr[64];  /* the client as best known */
    char peer[64];  /* the TCP peer (the proxy when via_proxy) */
    char proto[8];  /* "http", or X-Forwarded-Proto from a trusted proxy */
    int via_proxy;
};

/* Adds "127.0.0.1", "::1" or "10.0.0.0/8". */
int gust_proxies_add(struct gust_proxies *p, const char *spec, struct gust_err *err);
int gust_proxies_trusted(const struct gust_proxies *p, const struct sockaddr *sa);

/* The client an X-Forwarded-For value base[0..len) names, written into out as text: its
 * rightmost address that is not a trusted proxy (or the leftmost one, when all are).
 * Returns 0, leaving out as it was, when its last entry is not an address. */
int gust_forwarded_for(const struct gust_proxies *p, const char *base, size_t len, char *out, size_t size);

struct st_h2o_req_t;
void gust_client_of(const struct gust_proxies *p, struct st_h2o_req_t *req, struct gust_client *out);

#endif
