#include "proxy.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int parse_addr(const char *s, size_t len, int *family, unsigned char addr[16])
{
    char tmp[INET6_ADDRSTRLEN + 1];
    if (len == 0 || len >= sizeof(tmp)) {
        return 0;
    }
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    memset(addr, 0, 16);
    if (inet_pton(AF_INET, tmp, addr) == 1) {
        *family = AF_INET;
        return 1;
    }
    if (inet_pton(AF_INET6, tmp, addr) == 1) {
        *family = AF_INET6;
        return 1;
    }
    return 0;
}

int gust_proxies_add(struct gust_proxies *p, const char *spec, struct gust_err *err)
{
    if (p->n >= GUST_PROXY_MAX) {
        return gust_err_set(err, GUST_ECONFIG, "http: trusted_proxies: at most %d entries", GUST_PROXY_MAX);
    }
    struct gust_cidr *c = &p->v[p->n];
    const char *slash = strchr(spec, '/');
    size_t alen = slash != NULL ? (size_t)(slash - spec) : strlen(spec);
    if (!parse_addr(spec, alen, &c->family, c->addr)) {
        return gust_err_set(err, GUST_ECONFIG, "http: trusted_proxies: '%s' is not an address or address/bits", spec);
    }
    int max = c->family == AF_INET ? 32 : 128;
    c->bits = max;
    if (slash != NULL) {
        char *end = NULL;
        long bits = strtol(slash + 1, &end, 10);
        if (end == slash + 1 || *end != '\0' || bits < 0 || bits > max) {
            return gust_err_set(err, GUST_ECONFIG, "http: trusted_proxies: bad prefix length in '%s'", spec);
        }
        c->bits = (int)bits;
    }
    p->n++;
    return 0;
}

static int cidr_match(const struct gust_cidr *c, int family, const unsigned char *addr)
{
    if (c->family != family) {
        return 0;
    }
    int full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(c->addr, addr, (size_t)full) != 0) {
        return 0;
    }
    if (rest == 0) {
        return 1;
    }
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (c->addr[full] & mask) == (addr[full] & mask);
}

/* An IPv4-mapped IPv6 peer (::ffff:127.0.0.1 on a dual-stack listener) counts as IPv4. */
static void normalise(const struct sockaddr *sa, int *family, unsigned char addr[16])
{
    memset(addr, 0, 16);
    *family = sa->sa_family;
    if (sa->sa_family == AF_INET) {
        memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, 12) == 0) {
            *family = AF_INET;
            memcpy(addr, a + 12, 4);
        } else {
            memcpy(addr, a, 16);
        }
    }
}

static int trusted(const struct gust_proxies *p, int family, const unsigned char *addr)
{
    for (size_t i = 0; i < p->n; i++) {
        if (cidr_match(&p->v[i], family, addr)) {
            return 1;
        }
    }
    return 0;
}

int gust_proxies_trusted(const struct gust_proxies *p, const struct sockaddr *sa)
{
    int family;
    unsigned char addr[16];
    normalise(sa, &family, addr);
    return trusted(p, family, addr);
}

static void copy_token(char *out, size_t size, const char *s, size_t len)
{
    if (len >= size) {
        len = size - 1;
    }
    memcpy(out, s, len);
    out[len] = '\0';
}

int gust_forwarded_for(const struct gust_proxies *p, const char *base, size_t len, char *out, size_t size)
{
    /* Walk from the right: each trusted hop appended the address it saw. */
    int found = 0;
    size_t end = len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && base[start - 1] != ',') {
            start--;
        }
        size_t a = start, b = end;
        while (a < b && (base[a] == ' ' || base[a] == '\t')) {
            a++;
        }
        while (b > a && (base[b - 1] == ' ' || base[b - 1] == '\t')) {
            b--;
        }
        int family;
        unsigned char addr[16];
        if (!parse_addr(base + a, b - a, &family, addr)) {
            break; /* garbage: stop at the last address we could vouch for */
        }
        inet_ntop(family, addr, out, (socklen_t)size);
        found = 1;
        if (!trusted(p, family, addr)) {
            break;
        }
        end = start > 0 ? start - 1 : 0;
    }
    return found;
}

void gust_client_of(const struct gust_proxies *p, h2o_req_t *req, struct gust_client *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->proto, sizeof(out->proto), "http");
    struct sockaddr_storage ss;
    socklen_t sl = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    if (sl == 0) {
        snprintf(out->peer, sizeof(out->peer), "?");
    } else {
        int family;
        unsigned char addr[16];
        normalise((struct sockaddr *)&ss, &family, addr);
        inet_ntop(family, addr, out->peer, sizeof(out->peer));
    }
    memcpy(out->addr, out->peer, sizeof(out->addr));
    if (sl == 0 || !gust_proxies_trusted(p, (struct sockaddr *)&ss)) {
        return;
    }
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_X_FORWARDED_FOR, -1);
    if (i >= 0 && gust_forwarded_for(p, req->headers.entries[i].value.base, req->headers.entries[i].value.len,
                                     out->addr, sizeof(out->addr))) {
        out->via_proxy = 1;
    }
    i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-forwarded-proto"), -1);
    if (i >= 0) {
        h2o_iovec_t v = req->headers.entries[i].value;
        if (h2o_memis(v.base, v.len, H2O_STRLIT("https")) || h2o_memis(v.base, v.len, H2O_STRLIT("http"))) {
            copy_token(out->proto, sizeof(out->proto), v.base, v.len);
            out->via_proxy = 1;
        }
    }
}
