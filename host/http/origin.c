#include "origin.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int name_is(const char *a, size_t alen, const char *b)
{
    return strlen(b) == alen && strncasecmp(a, b, alen) == 0;
}

static void lower_copy(char *out, size_t size, const char *s, size_t len)
{
    if (len >= size) {
        len = size - 1;
    }
    for (size_t i = 0; i < len; i++) {
        out[i] = (char)tolower((unsigned char)s[i]);
    }
    out[len] = '\0';
}

/* The address of an IP literal ("1.2.3.4", "[::1]" or "::1"): its family, or 0 when it
 * is a name. */
static int ip_literal(const char *s, size_t len, unsigned char addr[16])
{
    char tmp[INET6_ADDRSTRLEN + 1];
    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
        s++;
        len -= 2;
    }
    if (len == 0 || len >= sizeof(tmp)) {
        return 0;
    }
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    memset(addr, 0, 16);
    if (inet_pton(AF_INET, tmp, addr) == 1) {
        return AF_INET;
    }
    if (inet_pton(AF_INET6, tmp, addr) == 1) {
        /* ::ffff:127.0.0.1, a dual-stack socket's view of an IPv4 peer, is IPv4. */
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(addr, mapped, 12) == 0) {
            memmove(addr, addr + 12, 4);
            memset(addr + 4, 0, 12);
            return AF_INET;
        }
        return AF_INET6;
    }
    return 0;
}

/* The host of "host:port" (brackets kept), or NULL when there is no colon. */
static const char *listen_host(const char *listen, size_t *len)
{
    const char *colon = strrchr(listen, ':');
    if (colon == NULL) {
        return NULL;
    }
    *len = (size_t)(colon - listen);
    return listen;
}

int gust_listen_is_loopback(const char *listen)
{
    size_t len = 0;
    const char *h = listen != NULL ? listen_host(listen, &len) : NULL;
    if (h == NULL || len == 0) {
        return 0;
    }
    if (name_is(h, len, "localhost")) {
        return 1;
    }
    unsigned char a[16];
    switch (ip_literal(h, len, a)) {
    case AF_INET:
        return a[0] == 127;
    case AF_INET6:
        return IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)a);
    default:
        return 0;
    }
}

/* A name (letters, digits, '-', '.', '_') or a bracketed IPv6 literal. */
static int host_chars_ok(const char *s, size_t len)
{
    if (len == 0 || len >= GUST_SERVER_NAME_LEN) {
        return 0;
    }
    if (s[0] == '[') {
        if (len < 3 || s[len - 1] != ']') {
            return 0;
        }
        return strspn(s + 1, "0123456789abcdefABCDEF:.") >= len - 2;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '.' && c != '_') {
            return 0;
        }
    }
    return 1;
}

int gust_authority_split(const char *s, size_t len, const char **name, size_t *name_len, int *port)
{
    size_t n;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (close == NULL) {
            return -1;
        }
        n = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', len);
        n = colon != NULL ? (size_t)(colon - s) : len;
    }
    if (!host_chars_ok(s, n)) {
        return -1;
    }
    *name = s;
    *name_len = n;
    *port = -1;
    if (n == len) {
        return 0;
    }
    if (s[n] != ':' || len - n - 1 == 0 || len - n - 1 > 5) {
        return -1;
    }
    int p = 0;
    for (size_t i = n + 1; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) {
            return -1;
        }
        p = p * 10 + (s[i] - '0');
    }
    if (p < 1 || p > 65535) {
        return -1;
    }
    *port = p;
    return 0;
}

int gust_admin_names_init(struct gust_admin_names *names, const char *listen, int ssl,
                          const char *const *server_names, size_t count, struct gust_err *err)
{
    memset(names, 0, sizeof(*names));
    names->ssl = ssl;
    names->loopback = gust_listen_is_loopback(listen);
    size_t len = 0;
    const char *h = listen != NULL ? listen_host(listen, &len) : NULL;
    unsigned char a[16];
    int family = h != NULL ? ip_literal(h, len, a) : 0;
    static const unsigned char any[16] = {0};
    /* A wildcard is no name a client can use: the connection's local address stands
     * for it (gust_host_allowed). */
    if (h != NULL && len > 0 && !(family != 0 && memcmp(a, any, 16) == 0)) {
        lower_copy(names->listen_host, sizeof(names->listen_host), h, len);
    }
    if (count > GUST_SERVER_NAMES_MAX) {
        return gust_err_set(err, GUST_ECONFIG, "http: server_names: at most %d names", GUST_SERVER_NAMES_MAX);
    }
    for (size_t i = 0; i < count; i++) {
        const char *s = server_names[i];
        const char *nm;
        size_t nlen;
        int port;
        if (gust_authority_split(s, strlen(s), &nm, &nlen, &port) != 0 || port != -1) {
            return gust_err_set(err, GUST_ECONFIG,
                                "http: server_names: '%s' is not a host name (a DNS name or an IP address, "
                                "IPv6 in brackets, without a port)",
                                s);
        }
        lower_copy(names->v[names->n++], GUST_SERVER_NAME_LEN, nm, nlen);
    }
    return 0;
}

int gust_host_allowed(const struct gust_admin_names *names, const char *name, size_t len, const char *local)
{
    if (names->listen_host[0] != '\0' && name_is(name, len, names->listen_host)) {
        return 1;
    }
    if (names->loopback &&
        (name_is(name, len, "localhost") || name_is(name, len, "127.0.0.1") || name_is(name, len, "[::1]"))) {
        return 1;
    }
    for (size_t i = 0; i < names->n; i++) {
        if (name_is(name, len, names->v[i])) {
            return 1;
        }
    }
    unsigned char a[16], b[16];
    int family = ip_literal(name, len, a);
    return local != NULL && family != 0 && ip_literal(local, strlen(local), b) == family &&
           memcmp(a, b, 16) == 0;
}

int gust_origin_same(const char *origin, size_t origin_len, const char *host, size_t host_len, int https)
{
    int origin_https;
    size_t skip;
    if (origin_len > 7 && strncasecmp(origin, "http://", 7) == 0) {
        origin_https = 0;
        skip = 7;
    } else if (origin_len > 8 && strncasecmp(origin, "https://", 8) == 0) {
        origin_https = 1;
        skip = 8;
    } else {
        return 0; /* "null" (a sandboxed page, a file), another scheme */
    }
    const char *on, *hn;
    size_t olen, hlen;
    int oport, hport;
    if (gust_authority_split(origin + skip, origin_len - skip, &on, &olen, &oport) != 0 ||
        gust_authority_split(host, host_len, &hn, &hlen, &hport) != 0) {
        return 0;
    }
    if (oport < 0) {
        oport = origin_https ? 443 : 80;
    }
    if (hport < 0) {
        hport = https ? 443 : 80;
    }
    return origin_https == https && olen == hlen && strncasecmp(on, hn, olen) == 0 && oport == hport;
}
