/* Who may call an admin route. Every admin request passes here (server.c) before its
 * handler runs:
 * 1. It must be meant for this server and not come from a page of another origin
 *    (origin.h), whether a token is set or not: a bearer token that a proxy in front
 *    adds would otherwise be spent by any page the browser shows.
 * 2. With an admin token, the token.
 * 3. Without one, only what reads (GET, HEAD of a read-only route), and only on a
 *    loopback listener (start and reload refuse any other address without a token).
 *    What changes state or runs code is closed: a local page or process could otherwise
 *    purge the dead letters or run Lua. SIGHUP still reloads. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "../common/log.h"
#include "internal.h"
#include "origin.h"

static const char no_token[] =
    "this route changes state or runs code, so it needs the admin token, and none is set: put "
    "admin_token_file FILE (or admin_token_env VAR) in the http block of host.conf, reload (SIGHUP "
    "reloads without a token), then send Authorization: Bearer <token>";

static int authorization_is(h2o_req_t *req, const struct gust_auth *auth)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    return i >= 0 && gust_auth_check(auth, req->headers.entries[i].value.base, req->headers.entries[i].value.len);
}

int gust_admin_writer(struct gust_http *http, h2o_req_t *req)
{
    const struct gust_auth *admin = &gust_http_policy(http)->admin_auth;
    return admin->enabled && authorization_is(req, admin);
}

int gust_http_authorized(struct gust_http *http, h2o_req_t *req, const struct gust_auth *auth,
                         enum gust_route route, const char *realm)
{
    if (!auth->enabled) {
        return 1;
    }
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    const h2o_iovec_t *v = i >= 0 ? &req->headers.entries[i].value : NULL;
    if (gust_auth_check(auth, v != NULL ? v->base : NULL, v != NULL ? v->len : 0)) {
        return 1;
    }
    struct gust_client client;
    gust_client_of(&gust_http_policy(http)->proxies, req, &client);
    gust_info("http: 401 for %.*s %.*s from %s%s%s (%s token)", (int)req->method.len, req->method.base,
              (int)(req->path.len < 256 ? req->path.len : 256), req->path.base, client.addr,
              client.via_proxy ? " via " : "", client.via_proxy ? client.peer : "",
              v != NULL ? "wrong" : "no");
    char challenge[64];
    int n = snprintf(challenge, sizeof(challenge), "Bearer realm=\"%s\"", realm);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                   h2o_strdup(&req->pool, challenge, (size_t)n).base, (size_t)n);
    gust_http_send_error(req, route, 401,
                         v != NULL ? "invalid bearer token"
                                   : "missing bearer token (Authorization: Bearer <token>)");
    return 0;
}

static void refuse(struct gust_http *http, h2o_req_t *req, enum gust_route route, const char *why)
{
    struct gust_client client;
    gust_client_of(&gust_http_policy(http)->proxies, req, &client);
    gust_info("http: 403 for %.*s %.*s from %s%s%s: %s", (int)req->method.len, req->method.base,
              (int)(req->path.len < 256 ? req->path.len : 256), req->path.base, client.addr,
              client.via_proxy ? " via " : "", client.via_proxy ? client.peer : "", why);
    gust_http_send_error(req, route, 403, why);
}

static int header(h2o_req_t *req, const char *name, size_t len, h2o_iovec_t *out)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, len, -1);
    if (i < 0) {
        return 0;
    }
    *out = req->headers.entries[i].value;
    return 1;
}

/* The rightmost entry of a list ("a, b"): what the nearest proxy saw. */
static h2o_iovec_t last_entry(h2o_iovec_t v)
{
    size_t start = v.len;
    while (start > 0 && v.base[start - 1] != ',') {
        start--;
    }
    size_t end = v.len;
    while (start < end && (v.base[start] == ' ' || v.base[start] == '\t')) {
        start++;
    }
    while (end > start && (v.base[end - 1] == ' ' || v.base[end - 1] == '\t')) {
        end--;
    }
    return h2o_iovec_init(v.base + start, end - start);
}

/* The connection's local address as text ("" when unknown). */
static void local_address(h2o_req_t *req, char *out, size_t size)
{
    struct sockaddr_storage ss;
    out[0] = '\0';
    socklen_t sl = req->conn->callbacks->get_sockname(req->conn, (struct sockaddr *)&ss);
    if (sl == 0) {
        return;
    }
    const void *a = ss.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                                             : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
    if (inet_ntop(ss.ss_family, a, out, (socklen_t)size) == NULL) {
        out[0] = '\0';
    }
}

/* 1 when host (from the header named from) names this server; else why not. */
static int names_us(const struct gust_http_policy *p, const char *local, h2o_iovec_t host, const char *from,
                    char *why, size_t size)
{
    const char *name;
    size_t nlen;
    int port;
    int shown = host.len < 100 ? (int)host.len : 100;
    if (host.len == 0 || gust_authority_split(host.base, host.len, &name, &nlen, &port) != 0) {
        snprintf(why, size, "admin routes need a valid %s header (got '%.*s')", from, shown,
                 host.base != NULL ? host.base : "");
        return 0;
    }
    if (!gust_host_allowed(&p->names, name, nlen, local[0] != '\0' ? local : NULL)) {
        snprintf(why, size,
                 "%s '%.*s' is not a name of this server (a DNS rebinding?): an admin request must name the "
                 "listen address%s or one of server_names in the http block of host.conf",
                 from, shown, host.base, p->names.loopback ? ", localhost, 127.0.0.1, [::1]" : "");
        return 0;
    }
    return 1;
}

/* Step 1: 1 when the request may go on, else why not in why. */
static int same_server(const struct gust_http_policy *p, h2o_req_t *req, char *why, size_t size)
{
    h2o_iovec_t host = req->input.authority;
    /* Without a Host header h2o puts its host configuration's name there. */
    if (req->hostconf != NULL && host.base == req->hostconf->authority.hostport.base) {
        host = h2o_iovec_init(NULL, 0);
    }
    char local[INET6_ADDRSTRLEN];
    local_address(req, local, sizeof(local));
    /* The Host is checked whoever sends it: a proxy that passes the client's on (nginx's
     * $http_host) would otherwise let a rebound name through. */
    if (!names_us(p, local, host, "Host", why, size)) {
        return 0;
    }
    const char *from = "Host";
    int https = p->names.ssl;
    struct sockaddr_storage ss;
    socklen_t sl = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    h2o_iovec_t v;
    /* Behind a proxy that sends its own Host (the upstream's address), the client's is
     * in X-Forwarded-Host: believed, like X-Forwarded-Proto, from trusted_proxies only,
     * and checked too (a proxy that does not set it passes the client's on). */
    if (sl != 0 && gust_proxies_trusted(&p->proxies, (struct sockaddr *)&ss)) {
        if (header(req, H2O_STRLIT("x-forwarded-host"), &v)) {
            host = last_entry(v);
            from = "X-Forwarded-Host";
            if (!names_us(p, local, host, from, why, size)) {
                return 0;
            }
        }
        if (header(req, H2O_STRLIT("x-forwarded-proto"), &v)) {
            h2o_iovec_t proto = last_entry(v);
            if (h2o_memis(proto.base, proto.len, H2O_STRLIT("https"))) {
                https = 1;
            } else if (h2o_memis(proto.base, proto.len, H2O_STRLIT("http"))) {
                https = 0;
            }
        }
    }
    if (header(req, H2O_STRLIT("origin"), &v) &&
        !gust_origin_same(v.base, v.len, host.base, host.len, https)) {
        snprintf(
            why, size, "cross-origin admin request refused: Origin '%.*s' is not this server (%s '%.*s')",
            v.len < 100 ? (int)v.len : 100, v.base, from, host.len < 100 ? (int)host.len : 100, host.base);
        return 0;
    }
    return 1;
}

int gust_admin_gate(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                    enum gust_admin_access access)
{
    const struct gust_http_policy *p = gust_http_policy(http);
    char why[512];
    if (!same_server(p, req, why, sizeof(why))) {
        refuse(http, req, route, why);
        return 0;
    }
    if (p->admin_auth.enabled) {
        /* A read takes the read-only token too (when one is set). */
        if (access == GUST_ADMIN_READ && p->admin_read_auth.enabled && authorization_is(req, &p->admin_read_auth)) {
            return 1;
        }
        return gust_http_authorized(http, req, &p->admin_auth, route, "gust");
    }
    int reads = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
                h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    if (access == GUST_ADMIN_READ && reads && p->names.loopback) {
        return 1;
    }
    refuse(http, req, route,
           access == GUST_ADMIN_READ && reads
               ? "the admin routes need the admin token on a listener that is not "
                 "loopback: set admin_token_file or admin_token_env"
               : no_token);
    return 0;
}

int gust_admin_page_gate(struct gust_http *http, h2o_req_t *req, enum gust_route route)
{
    char why[512];
    if (!same_server(gust_http_policy(http), req, why, sizeof(why))) {
        refuse(http, req, route, why);
        return 0;
    }
    return 1;
}
