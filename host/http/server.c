#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../bus/bus.h"
#include "../common/buf.h"
#include "../common/json_out.h"
#include "../common/log.h"
#include "../unit/units.h"
#include "internal.h"

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

void gust_http_send(h2o_req_t *req, enum gust_route route, int status, const char *content_type,
                    const char *body, size_t len)
{
    gust_metrics_count_request(route, status);
    req->res.status = status;
    req->res.reason = reason_of(status);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type,
                   strlen(content_type));
    /* h2o 2.2.5 closes keep-alive connections when the length is not set. */
    req->res.content_length = len;
    h2o_send_inline(req, body, len);
}

void gust_http_send_error(h2o_req_t *req, enum gust_route route, int status, const char *message)
{
    struct gust_buf body = {0};
    gust_buf_append(&body, "{\"error\":", 9);
    gust_json_append_string(&body, message, strlen(message));
    gust_buf_append(&body, "}\n", 2);
    gust_http_send(req, route, status, "application/json", body.data, body.len);
    gust_buf_free(&body);
}

static int method_is(h2o_req_t *req, const char *m)
{
    return h2o_memis(req->method.base, req->method.len, m, strlen(m));
}

static void send_method_not_allowed(h2o_req_t *req, enum gust_route route, const char *allow)
{
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allow, strlen(allow));
    gust_http_send_error(req, route, 405, "method not allowed");
}

static void handle_healthz(struct gust_http *http, h2o_req_t *req)
{
    if (!method_is(req, "GET") && !method_is(req, "HEAD")) {
        send_method_not_allowed(req, GUST_ROUTE_HEALTHZ, "GET, HEAD");
        return;
    }
    if (gust_bus_healthy(http->bus)) {
        static const char ok[] = "{\"status\":\"ok\"}\n";
        gust_http_send(req, GUST_ROUTE_HEALTHZ, 200, "application/json", ok, sizeof(ok) - 1);
    } else {
        gust_http_send_error(req, GUST_ROUTE_HEALTHZ, 503,
                             gust_bus_connected(http->bus) ? "jetstream not answering"
                                                           : "bus not connected");
    }
}

static void handle_metrics(struct gust_http *http, h2o_req_t *req)
{
    if (!method_is(req, "GET")) {
        send_method_not_allowed(req, GUST_ROUTE_METRICS, "GET");
        return;
    }
    struct gust_buf out = {0};
    gust_metrics_render(&out, gust_bus_connected(http->bus), gust_bus_healthy(http->bus));
    gust_units_render_metrics(http->units, &out);
    gust_http_send(req, GUST_ROUTE_METRICS, 200, "text/plain; version=0.0.4", out.data, out.len);
    gust_buf_free(&out);
}

static void handle_units(struct gust_http *http, h2o_req_t *req)
{
    if (!method_is(req, "GET")) {
        send_method_not_allowed(req, GUST_ROUTE_UNITS, "GET");
        return;
    }
    struct gust_buf out = {0};
    gust_units_render_json(http->units, &out);
    gust_http_send(req, GUST_ROUTE_UNITS, 200, "application/json", out.data, out.len);
    gust_buf_free(&out);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    struct gust_http *http = *(struct gust_http **)(self + 1);
    h2o_iovec_t path = req->path_normalized;
    /* Mounted under a prefix: accept paths with it, and without it for a proxy
     * that strips it. */
    if (http->base_len > 0 && path.len >= http->base_len &&
        memcmp(path.base, http->base_path, http->base_len) == 0 &&
        (path.len == http->base_len || path.base[http->base_len] == '/')) {
        path.base += http->base_len;
        path.len -= http->base_len;
    }
    static const char ingest[] = "/ingest/";
    if (path.len >= sizeof(ingest) - 2 && memcmp(path.base, ingest, sizeof(ingest) - 2) == 0 &&
        (path.len == sizeof(ingest) - 2 || path.base[sizeof(ingest) - 2] == '/')) {
        size_t skip = path.len >= sizeof(ingest) - 1 ? sizeof(ingest) - 1 : path.len;
        gust_ingest_handle(http, req, h2o_iovec_init(path.base + skip, path.len - skip));
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/healthz"))) {
        handle_healthz(http, req);
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/metrics"))) {
        handle_metrics(http, req);
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/units"))) {
        handle_units(http, req);
    } else {
        gust_http_send_error(req, GUST_ROUTE_OTHER, 404, "no such route");
    }
    return 0;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    struct gust_http *http = listener->data;
    if (err != NULL) {
        return;
    }
    h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
    if (sock == NULL) {
        return;
    }
    int one = 1;
    setsockopt(h2o_socket_get_fd(sock), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    h2o_accept(&http->accept_ctx, sock);
}

static void on_control(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    struct gust_http *http = (struct gust_http *)((char *)receiver - offsetof(struct gust_http, control));
    while (!h2o_linklist_is_empty(messages)) {
        h2o_multithread_message_t *m = H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        h2o_linklist_unlink(&m->link);
        free(m);
    }
    if (atomic_load(&http->stop_requested) && !http->stopping) {
        http->stopping = 1;
        if (http->listener != NULL) {
            /* Stop accepting; connections already open get their answers. */
            h2o_socket_read_stop(http->listener);
            h2o_socket_close(http->listener);
            http->listener = NULL;
        }
    }
}

void gust_http_request_stop(struct gust_http *http)
{
    atomic_store(&http->stop_requested, 1);
    h2o_multithread_message_t *m = calloc(1, sizeof(*m));
    if (m != NULL) {
        h2o_multithread_send_message(&http->control, m);
    }
}

static int bind_listener(const char *listen_addr, int *port_out, struct gust_err *err)
{
    char host[256];
    const char *colon = strrchr(listen_addr, ':');
    if (colon == NULL || (size_t)(colon - listen_addr) >= sizeof(host)) {
        return gust_err_set(err, GUST_ECONFIG, "listen %s: expected host:port", listen_addr);
    }
    const char *h = listen_addr;
    size_t hlen = (size_t)(colon - listen_addr);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(hlen > 0 ? host : NULL, colon + 1, &hints, &ai);
    if (gai != 0) {
        return gust_err_set(err, GUST_ECONFIG, "listen %s: %s", listen_addr, gai_strerror(gai));
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        int rc = gust_err_set(err, GUST_EIO, "listen %s: %s", listen_addr, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        freeaddrinfo(ai);
        return rc;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int gust_http_create(const struct gust_http_conf *conf, struct gust_bus *bus, struct gust_http **out,
                     struct gust_err *err)
{
    int fd = -1;
    struct gust_http *http = calloc(1, sizeof(*http));
    if (http == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    http->bus = bus;
    http->max_body = conf->max_body;
    http->units = conf->units;
    snprintf(http->base_path, sizeof(http->base_path), "%s", conf->base_path != NULL ? conf->base_path : "");
    http->base_len = strlen(http->base_path);
    while (http->base_len > 0 && http->base_path[http->base_len - 1] == '/') {
        http->base_path[--http->base_len] = '\0';
    }
    fd = bind_listener(conf->listen, &http->port, err);
    if (fd < 0) {
        free(http);
        return fd;
    }

    h2o_config_init(&http->config);
    http->config.server_name = h2o_iovec_init(H2O_STRLIT("gust"));
    /* h2o refuses bodies over its own limit with a plain-text 413 before any handler
     * runs. Give it headroom so that the handler sees moderately oversized bodies and
     * answers them in JSON; only bodies far over max_body get h2o's text. */
    http->config.max_request_entity_size = conf->max_body + (conf->max_body > 65536 ? conf->max_body : 65536);
    h2o_hostconf_t *host = h2o_config_register_host(&http->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *pathconf = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(pathconf, sizeof(*handler) + sizeof(http));
    handler->on_req = on_req;
    *(struct gust_http **)(handler + 1) = http;

    h2o_context_init(&http->ctx, h2o_evloop_create(), &http->config);
    http->accept_ctx.ctx = &http->ctx;
    http->accept_ctx.hosts = http->config.hosts;
    http->queue = h2o_multithread_create_queue(http->ctx.loop);
    h2o_multithread_register_receiver(http->queue, &http->acks, gust_ingest_on_acks);
    h2o_multithread_register_receiver(http->queue, &http->control, on_control);

    http->listener = h2o_evloop_socket_create(http->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    http->listener->data = http;
    h2o_socket_read_start(http->listener, on_accept);
    gust_info("http: listening on %s (port %d)%s%s", conf->listen, http->port,
              http->base_len > 0 ? ", base path " : "", http->base_path);
    *out = http;
    return 0;
}

int gust_http_port(const struct gust_http *http)
{
    return http->port;
}

void gust_http_run(struct gust_http *http, int64_t drain_ms)
{
    int64_t deadline = 0;
    for (;;) {
        h2o_evloop_run(http->ctx.loop, 50);
        if (!http->stopping) {
            continue;
        }
        int64_t now = gust_now_ms();
        if (deadline == 0) {
            deadline = now + drain_ms;
        }
        if (http->ingest_inflight == 0 || now >= deadline) {
            if (http->ingest_inflight > 0) {
                gust_warn("http: %zu ingest requests still waiting at shutdown", http->ingest_inflight);
            }
            return;
        }
    }
}

void gust_http_close(struct gust_http *http)
{
    if (http == NULL) {
        return;
    }
    /* Answer (or free) the ingest waits the bus completed while it shut down. */
    h2o_evloop_run(http->ctx.loop, 0);
    if (http->listener != NULL) {
        h2o_socket_close(http->listener);
        http->listener = NULL;
    }
    /* The loop and the context stay: h2o 2.2.5 cannot dispose of an evloop that still
     * has connections registered, and the process ends right after this. */
}
