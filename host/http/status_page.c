/* GET / : the console. One self-contained HTML page (host/http/console.html, compiled in
 * by cmake/embed.cmake; no external assets): the pipeline drawn from GET topology, the
 * gauges, and the tables of units, recent events and dead letters. Its requests are
 * relative, so it works at the root, under base_path and behind a proxy that strips
 * the prefix alike; it must therefore be served at "<base>/" (server.c redirects
 * "<base>" there). It holds no data, so it is served without the admin token; with one
 * set, its login form asks for it and keeps it in the page's memory. */
#include <string.h>

#include "internal.h"

extern const char gust_console_page[];
extern const size_t gust_console_page_len;

void gust_status_page_handle(struct gust_http *http, h2o_req_t *req)
{
    (void)http;
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
        !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("GET, HEAD"));
        gust_http_send_error(req, GUST_ROUTE_STATUS, 405, "method not allowed");
        return;
    }
    /* The page holds no data, but keep browsers from framing it or sniffing types. */
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-frame-options"), 0, NULL, H2O_STRLIT("DENY"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-content-type-options"), 0, NULL,
                          H2O_STRLIT("nosniff"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    /* The browser enforces what the page promises: it loads nothing and talks to nobody
     * but this server (the admin token lives in its memory). */
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("content-security-policy"), 0, NULL,
                          H2O_STRLIT("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                                     "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
                                     "frame-ancestors 'none'"));
    gust_http_send(req, GUST_ROUTE_STATUS, 200, "text/html; charset=utf-8", gust_console_page, gust_console_page_len);
}
