#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../bus/bus.h"
#include "../bus/ingest_link.h"
#include "../cluster/lease.h"
#include "../cluster/nodes.h"
#include "../common/buf.h"
#include "../common/json_out.h"
#include "../common/log.h"
#include "../secret/secret.h"
#include "../unit/units.h"
#include "gust/schema.h"
#include "health.h"
#include "internal.h"
#include "listen_conf.h"
#include "loop_h2o.h"
#include "query.h"
#include "webhooks.h"

/* Routes and who may call them:
 *   POST /ingest/<suffix>       ingest token when one is set, else open
 *   POST /call/<suffix>         the same (call.c: answered with a flow's reply)
 *   POST <a webhook's path>     its signature (verify); with verify none, as ingest
 *   GET  /healthz               open (load balancers and probes): 503 naming each cause
 *   GET  /livez                 open: 200 while the process answers (supervisors)
 *   GET  /metrics               admin read, or open with `metrics_public on`
 *   GET  /units, /events, /dlq  admin read
 *   GET  /topology              admin read: the console's graph and gauges
 *   GET  /                      the console page: static (no data), only the Host and
 *                               Origin checks; it asks for the token itself
 *   POST /dlq/replay, /dlq/purge, /reload, /replay: admin write
 *   POST /mcp                   a token (admin, or read-only for the read tools): MCP (mcp.c)
 * Every admin route goes through gust_admin_gate (admin_gate.c): never from another
 * origin or for a name this server does not answer to; the token when one is set;
 * without one, reads on a loopback listener only, and no writes. A new admin route
 * takes admin_ok (a write) unless it only shows state. */

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 301: return "Moved Permanently";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
    }
}

/* The http of a request: its context is the one embedded in struct gust_http. */
static struct gust_http *http_of(h2o_req_t *req)
{
    return (struct gust_http *)((char *)req->conn->ctx - offsetof(struct gust_http, ctx));
}

/* At debug level, one access-log line per response, with the client as the trusted
 * proxies tell it. */
static void access_log(h2o_req_t *req, int status, size_t len)
{
    if (!gust_log_enabled(GUST_LOG_DEBUG)) {
        return;
    }
    struct gust_client client;
    gust_client_of(&gust_http_policy(http_of(req))->proxies, req, &client);
    gust_debug("http: %s %.*s %.*s %d %zu%s%s%s%s", client.addr, (int)req->method.len, req->method.base,
               (int)(req->path.len < 512 ? req->path.len : 512), req->path.base, status, len,
               client.via_proxy ? " via " : "", client.via_proxy ? client.peer : "",
               client.via_proxy ? " " : "", client.via_proxy ? client.proto : "");
}

void gust_http_send(h2o_req_t *req, enum gust_route route, int status, const char *content_type,
                    const char *body, size_t len)
{
    gust_metrics_count_request(route, status);
    access_log(req, status, len);
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

int gust_http_query(h2o_req_t *req, const char *name, char *out, size_t size)
{
    if (req->query_at == SIZE_MAX || size == 0) {
        return 0;
    }
    return gust_query_get(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1, name, out, size) >= 0;
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
    struct gust_health_ctx ctx = {.bus = http->bus, .ingest = http->ingest_bus, .units = http->units};
    struct gust_buf body = {0};
    size_t causes = gust_health_render(&ctx, &body);
    gust_http_send(req, GUST_ROUTE_HEALTHZ, causes == 0 ? 200 : 503, "application/json", body.data, body.len);
    gust_buf_free(&body);
}

/* The process answers: its event loop runs. Nothing else, so that a supervisor does
 * not restart it for a broker outage, which a restart would not cure. */
static void handle_livez(h2o_req_t *req)
{
    if (!method_is(req, "GET") && !method_is(req, "HEAD")) {
        send_method_not_allowed(req, GUST_ROUTE_LIVEZ, "GET, HEAD");
        return;
    }
    static const char ok[] = "{\"status\":\"alive\"}\n";
    gust_http_send(req, GUST_ROUTE_LIVEZ, 200, "application/json", ok, sizeof(ok) - 1);
}

static void handle_metrics(struct gust_http *http, h2o_req_t *req)
{
    if (!method_is(req, "GET")) {
        send_method_not_allowed(req, GUST_ROUTE_METRICS, "GET");
        return;
    }
    struct gust_buf out = {0};
    gust_metrics_render(&out, gust_bus_connected(http->bus), gust_bus_healthy(http->bus),
                        gust_ingest_link_connected(http->ingest_bus));
    gust_units_render_metrics(http->units, &out);
    gust_bus_render_metrics(http->bus, &out);
    gust_http_send(req, GUST_ROUTE_METRICS, 200, "text/plain; version=0.0.4", out.data, out.len);
    gust_buf_free(&out);
}

/* Every secret reference, its store and state: never a value (host/secret/store.c). */
static void handle_secrets(h2o_req_t *req)
{
    if (!method_is(req, "GET")) {
        send_method_not_allowed(req, GUST_ROUTE_SECRETS, "GET");
        return;
    }
    struct gust_buf out = {0};
    gust_secrets_render(&out);
    gust_http_send(req, GUST_ROUTE_SECRETS, 200, "application/json", out.data, out.len);
    gust_buf_free(&out);
}

void gust_http_render_cluster(const struct gust_http *http, struct gust_buf *out)
{
    if (http->leases == NULL) {
        gust_buf_append(out, "null", 4);
        return;
    }
    gust_buf_append(out, "{", 1);
    gust_leases_render_fields(http->leases, out);
    if (http->nodes != NULL) {
        gust_buf_append(out, ",\"nodes\":", 9);
        gust_nodes_render_json(http->nodes, out);
    }
    gust_buf_append(out, "}", 1);
}

void gust_units_json(struct gust_http *http, struct gust_buf *out)
{
    gust_buf_append(out, "{", 1);
    gust_units_render_fields(http->units, out);
    if (http->leases != NULL) {
        gust_buf_append(out, ",\"cluster\":", 11);
        gust_http_render_cluster(http, out);
    }
    gust_buf_append(out, "}\n", 2);
}

static void handle_units(struct gust_http *http, h2o_req_t *req)
{
    if (!method_is(req, "GET")) {
        send_method_not_allowed(req, GUST_ROUTE_UNITS, "GET");
        return;
    }
    struct gust_buf out = {0};
    gust_units_json(http, &out);
    gust_http_send(req, GUST_ROUTE_UNITS, 200, "application/json", out.data, out.len);
    gust_buf_free(&out);
}

static int admin_ok(struct gust_http *http, h2o_req_t *req, enum gust_route route)
{
    return gust_admin_gate(http, req, route, GUST_ADMIN_WRITE);
}

static int admin_read_ok(struct gust_http *http, h2o_req_t *req, enum gust_route route)
{
    return gust_admin_gate(http, req, route, GUST_ADMIN_READ);
}

static const char reload_accepted[] = "{\"reload\":\"requested\"}\n";

/* Admin worker: the check may read files and the bus. */
void gust_reload_run(struct gust_admin_job *job)
{
    struct gust_http *http = job->http;
    char why[700];
    if (http->request_reload == NULL) {
        gust_admin_fail(job, 503, "reload is not available");
        return;
    }
    int status = http->check_reload != NULL ? http->check_reload(http->reload_ud, job->q.force, why, sizeof(why)) : 0;
    if (status != 0) {
        gust_admin_fail(job, status, why);
        return;
    }
    http->request_reload(http->reload_ud);
    job->status = 202;
    gust_buf_append(&job->body, reload_accepted, sizeof(reload_accepted) - 1);
}

static void handle_reload(struct gust_http *http, h2o_req_t *req)
{
    if (!method_is(req, "POST")) {
        send_method_not_allowed(req, GUST_ROUTE_RELOAD, "POST");
        return;
    }
    if (http->request_reload == NULL) {
        gust_http_send_error(req, GUST_ROUTE_RELOAD, 503, "reload is not available");
        return;
    }
    if (http->check_reload != NULL) {
        char force[8] = "";
        struct gust_dlq_query q = {.force = gust_http_query(req, "force", force, sizeof(force)) &&
                                            (strcmp(force, "1") == 0 || strcmp(force, "true") == 0)};
        gust_admin_submit(http, req, GUST_ROUTE_RELOAD, gust_reload_run, &q);
        return;
    }
    /* Returns at once: the reload runs on the host's thread; /units shows its outcome. */
    http->request_reload(http->reload_ud);
    gust_http_send(req, GUST_ROUTE_RELOAD, 202, "application/json", reload_accepted, sizeof(reload_accepted) - 1);
}

/* "<base>" without the slash: the status page's relative links need "<base>/". */
static void redirect_to_base(struct gust_http *http, h2o_req_t *req)
{
    char *loc = h2o_mem_alloc_pool(&req->pool, http->base_len + 2);
    memcpy(loc, http->base_path, http->base_len);
    loc[http->base_len] = '/';
    loc[http->base_len + 1] = '\0';
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LOCATION, NULL, loc, http->base_len + 1);
    gust_http_send_error(req, GUST_ROUTE_STATUS, 301, "moved to the base path with a slash");
}

/* Request line and headers; h2o has its own, larger, hard limit before this. */
static size_t header_bytes(h2o_req_t *req)
{
    size_t n = req->method.len + req->path.len + 12;
    for (size_t i = 0; i < req->headers.size; i++) {
        n += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
    }
    return n;
}

static int starts_with_segment(h2o_iovec_t path, const char *prefix, size_t plen)
{
    return path.len >= plen && memcmp(path.base, prefix, plen) == 0 && (path.len == plen || path.base[plen] == '/');
}

/* The routes that publish a request's body under a subject suffix, with the same checks
 * (gust_ingest_route): /ingest answers once it is stored, /call with a flow's reply. */
struct publish_route {
    const char *name;
    size_t len;
    enum gust_route route;
    gust_ingest_publish_fn publish;
};

static const struct publish_route publish_routes[] = {
    {"/ingest", 7, GUST_ROUTE_INGEST, gust_ingest_publish},
    {"/call", 5, GUST_ROUTE_CALL, gust_call_publish},
};

static const struct publish_route *publish_route_of(h2o_iovec_t path)
{
    for (size_t i = 0; i < sizeof(publish_routes) / sizeof(publish_routes[0]); i++) {
        if (starts_with_segment(path, publish_routes[i].name, publish_routes[i].len)) {
            return &publish_routes[i];
        }
    }
    return NULL;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    struct gust_http *http = *(struct gust_http **)(self + 1);
    int bad_status;
    char bad_why[96];
    if (gust_h2o_bad_request(req, &bad_status, bad_why, sizeof(bad_why))) {
        gust_http_send_error(req, GUST_ROUTE_OTHER, bad_status, bad_why);
        return 0;
    }
    const struct gust_http_policy *policy = gust_http_policy(http);
    if (policy->s.max_header > 0 && header_bytes(req) > policy->s.max_header) {
        char msg[96];
        snprintf(msg, sizeof(msg), "request headers over %zu bytes", policy->s.max_header);
        gust_http_send_error(req, GUST_ROUTE_OTHER, 431, msg);
        return 0;
    }
    h2o_iovec_t path = req->path_normalized;
    int had_base = 0;
    /* Mounted under a prefix: accept paths with it, and without it for a proxy
     * that strips it. */
    if (http->base_len > 0 && path.len >= http->base_len &&
        memcmp(path.base, http->base_path, http->base_len) == 0 &&
        (path.len == http->base_len || path.base[http->base_len] == '/')) {
        path.base += http->base_len;
        path.len -= http->base_len;
        had_base = 1;
    }
    const struct publish_route *pr = publish_route_of(path);
    const struct gust_webhook *hook = gust_webhooks_find(policy->webhooks, path.base, path.len);
    if (hook != NULL) {
        /* The signature stands in for the ingest token; the admin token never applies. */
        if (hook->v.scheme != GUST_WH_NONE ||
            gust_http_authorized(http, req, &policy->ingest_auth, GUST_ROUTE_WEBHOOK, "gust-ingest")) {
            gust_webhook_handle(http, req, hook);
        }
    } else if (pr != NULL) {
        /* The suffix: what follows "<name>/" (empty for "<name>" alone). */
        size_t skip = path.len > pr->len ? pr->len + 1 : path.len;
        if (gust_http_authorized(http, req, &policy->ingest_auth, pr->route, "gust-ingest")) {
            gust_ingest_route(http, req, pr->route, h2o_iovec_init(path.base + skip, path.len - skip), pr->publish);
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/healthz"))) {
        handle_healthz(http, req);
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/livez"))) {
        handle_livez(req);
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/metrics"))) {
        if (policy->s.metrics_public || admin_read_ok(http, req, GUST_ROUTE_METRICS)) {
            handle_metrics(http, req);
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/units"))) {
        if (admin_read_ok(http, req, GUST_ROUTE_UNITS)) {
            handle_units(http, req);
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/topology"))) {
        if (admin_read_ok(http, req, GUST_ROUTE_TOPOLOGY)) {
            gust_topology_handle(http, req);
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/secrets"))) {
        if (admin_read_ok(http, req, GUST_ROUTE_SECRETS)) {
            handle_secrets(req);
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/events"))) {
        if (admin_read_ok(http, req, GUST_ROUTE_EVENTS)) {
            gust_events_handle(http, req);
        }
    } else if (starts_with_segment(path, H2O_STRLIT("/dlq"))) {
        /* Listing is a read; replay and purge (POST) are writes. */
        if (gust_admin_gate(http, req, GUST_ROUTE_DLQ, path.len <= 5 ? GUST_ADMIN_READ : GUST_ADMIN_WRITE)) {
            gust_dlq_handle(http, req, h2o_iovec_init(path.base + 4, path.len - 4));
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/replay"))) {
        if (admin_ok(http, req, GUST_ROUTE_REPLAY)) {
            gust_replay_handle(http, req);
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/mcp"))) {
        /* A POST, so never open: the admin token, or the read-only one, which the
         * tools that write or run code then refuse (mcp_tools.c). */
        if (admin_read_ok(http, req, GUST_ROUTE_MCP)) {
            gust_mcp_handle(http, req);
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/reload"))) {
        if (admin_ok(http, req, GUST_ROUTE_RELOAD)) {
            handle_reload(http, req);
        }
    } else if (h2o_memis(path.base, path.len, H2O_STRLIT("/")) ||
               h2o_memis(path.base, path.len, H2O_STRLIT("/index.html"))) {
        if (gust_admin_page_gate(http, req, GUST_ROUTE_STATUS)) {
            gust_status_page_handle(http, req);
        }
    } else if (had_base && path.len == 0) {
        redirect_to_base(http, req);
    } else {
        gust_http_send_error(req, GUST_ROUTE_OTHER, 404, "no such route");
    }
    return 0;
}

/* h2o calls this when it disposes of a client socket, whoever closed it (or linger.c,
 * once it has done with the socket's copy). */
void gust_http_on_conn_close(void *data)
{
    struct gust_http *http = data;
    http->connections--;
    gust_metrics_set_connections(http->connections);
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
    /* The connection cap: accepting and closing at once (rather than leaving the
     * connection in the backlog) tells the client right away and keeps the backlog
     * free for when connections close. */
    size_t max_connections = gust_http_policy(http)->s.max_connections;
    if (max_connections > 0 && http->connections >= max_connections) {
        gust_metrics_count_refused();
        gust_debug("http: %zu connections open (max_connections): closing a new one", http->connections);
        h2o_socket_close(sock);
        return;
    }
    http->connections++;
    gust_metrics_set_connections(http->connections);
    sock->on_close.cb = gust_http_on_conn_close;
    sock->on_close.data = http;
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

/* h2o refuses a body over this before any handler runs (and before reading it),
 * answered in JSON by h2o_errors.c with a lingering close: so it needs no headroom and
 * holds no more than max_body in memory. + 1 because h2o refuses a chunked body once it
 * reaches the limit, a Content-Length only above it. */
static size_t entity_limit(size_t max_body)
{
    return max_body + 1;
}

int gust_http_policy_create(const struct gust_http_settings *s, struct gust_http_policy **out, struct gust_err *err)
{
    *out = NULL;
    struct gust_http_policy *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    p->s = *s;
    p->s.admin_token_file = p->s.admin_token_env = p->s.ingest_token_file = p->s.ingest_token_env = NULL;
    p->s.admin_read_token_file = p->s.admin_read_token_env = NULL;
    p->s.trusted_proxies = NULL;
    p->s.listen = NULL;
    p->s.server_names = NULL;
    p->s.webhooks = NULL;
    p->s.nwebhooks = 0;
    int rc = gust_auth_load(&p->admin_auth, "admin", s->admin_token_file, s->admin_token_env, err);
    rc = rc ? rc : gust_auth_load(&p->ingest_auth, "ingest", s->ingest_token_file, s->ingest_token_env, err);
    rc = rc ? rc
            : gust_auth_load(&p->admin_read_auth, "admin_read", s->admin_read_token_file, s->admin_read_token_env,
                             err);
    /* Without an admin token the reads are open on loopback and closed elsewhere: a
     * read-only token would stand for nothing, and be taken for a guard it is not. */
    if (rc == 0 && p->admin_read_auth.enabled && !p->admin_auth.enabled) {
        rc = gust_err_set(err, GUST_ECONFIG,
                          "http: admin_read_token_file (or admin_read_token_env) needs an admin token too: set "
                          "admin_token_file or admin_token_env");
    }
    for (size_t i = 0; i < s->ntrusted_proxies && rc == 0; i++) {
        rc = gust_proxies_add(&p->proxies, s->trusted_proxies[i], err);
    }
    rc = rc ? rc
            : gust_admin_names_init(&p->names, s->listen, s->listen_ssl, s->server_names, s->nserver_names, err);
    rc = rc ? rc : gust_webhooks_create(s->webhooks, s->nwebhooks, &p->webhooks, err);
    /* A reload that drops the token of a listener others can reach is refused (at start,
     * gust_listen_conf_load has said so with the file and line). */
    if (rc == 0 && !p->names.loopback && !p->admin_auth.enabled) {
        rc = gust_err_set(err, GUST_ECONFIG,
                          "http: listen %s is not a loopback address, so the admin routes need a token: set "
                          "admin_token_file or admin_token_env",
                          s->listen != NULL ? s->listen : "?");
    }
    if (rc != 0) {
        gust_http_policy_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}

void gust_http_policy_destroy(struct gust_http_policy *p)
{
    if (p != NULL) {
        gust_webhooks_destroy(p->webhooks); /* wipes their secrets */
        OPENSSL_cleanse(p, sizeof(*p)); /* the token digests */
        free(p);
    }
}

struct retired_policy {
    h2o_multithread_message_t msg; /* first: messages are cast back */
    struct gust_http_policy *policy;
    size_t max_body;
    int64_t client_timeout_ms;
    int64_t call_timeout_ms;
};

/* On the loop: the limits h2o keeps itself are set here, on its thread, and no callback
 * can still hold the replaced policy (they all returned), so it goes. */
static void on_retired(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    struct gust_http *http = (struct gust_http *)((char *)receiver - offsetof(struct gust_http, retired));
    while (!h2o_linklist_is_empty(messages)) {
        struct retired_policy *m = (struct retired_policy *)H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link,
                                                                                   messages->next);
        h2o_linklist_unlink(&m->msg.link);
        http->config.max_request_entity_size = entity_limit(m->max_body);
        if (m->client_timeout_ms > 0) {
            http->ctx.http1.req_timeout.timeout = (uint64_t)m->client_timeout_ms;
        }
        gust_calls_set_timeout(http, m->call_timeout_ms);
        gust_http_policy_destroy(m->policy);
        free(m);
    }
}

void gust_http_set_policy(struct gust_http *http, struct gust_http_policy *p)
{
    struct retired_policy *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        gust_error("http: out of memory: the tokens and limits stay as they were");
        gust_http_policy_destroy(p);
        return;
    }
    m->max_body = p->s.max_body;
    m->client_timeout_ms = p->s.client_timeout_ms;
    m->call_timeout_ms = p->s.call_timeout_ms;
    gust_info("http: reloaded tokens and limits; admin routes %s, ingest %s",
              p->admin_auth.enabled ? "need the admin token" : "read-only on loopback (no admin token)",
              p->ingest_auth.enabled ? "needs the ingest token" : "open");
    /* In force at once for every request the loop handles from now on. */
    m->policy = atomic_exchange(&http->policy, p);
    h2o_multithread_send_message(&http->retired, &m->msg);
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
    http->units = conf->units;
    http->leases = conf->leases;
    http->nodes = conf->nodes;
    http->request_reload = conf->request_reload;
    http->reload_ud = conf->reload_ud;
    http->check_reload = conf->check_reload;
    struct gust_http_policy *policy = NULL;
    int rc = gust_http_policy_create(&conf->settings, &policy, err);
    atomic_init(&http->policy, policy);
    snprintf(http->subject_prefix, sizeof(http->subject_prefix), "%s",
             conf->subject_prefix != NULL ? conf->subject_prefix : "ev.");
    snprintf(http->dlq_stream, sizeof(http->dlq_stream), "%s", conf->dlq_stream != NULL ? conf->dlq_stream : "GUST_DLQ");
    snprintf(http->config_path, sizeof(http->config_path), "%s", conf->config_path != NULL ? conf->config_path : "");
    snprintf(http->dlq_filter, sizeof(http->dlq_filter), "%s", conf->dlq_subjects != NULL ? conf->dlq_subjects : "dlq.>");
    /* "dlq.>" -> "dlq.": host.c has already checked that it ends with ".>". */
    snprintf(http->dlq_prefix, sizeof(http->dlq_prefix), "%s", http->dlq_filter);
    size_t plen = strlen(http->dlq_prefix);
    if (plen >= 1 && http->dlq_prefix[plen - 1] == '>') {
        http->dlq_prefix[plen - 1] = '\0';
    }
    if (rc != 0) {
        free(http);
        return rc;
    }
    snprintf(http->base_path, sizeof(http->base_path), "%s", conf->base_path != NULL ? conf->base_path : "");
    http->base_len = strlen(http->base_path);
    while (http->base_len > 0 && http->base_path[http->base_len - 1] == '/') {
        http->base_path[--http->base_len] = '\0';
    }
    fd = bind_listener(conf->listen.addr, &http->port, err);
    if (fd < 0) {
        gust_http_policy_destroy(policy);
        free(http);
        return fd;
    }

    h2o_config_init(&http->config);
    http->config.server_name = h2o_iovec_init(H2O_STRLIT("gust"));
    /* Slow clients: headers and body must arrive within this, and an idle keep-alive
     * connection is closed after it (h2o's http1 request timeout covers both). */
    if (conf->settings.client_timeout_ms > 0) {
        http->config.http1.req_timeout = (uint64_t)conf->settings.client_timeout_ms;
    }
    http->config.max_request_entity_size = entity_limit(conf->settings.max_body);
    h2o_hostconf_t *host = h2o_config_register_host(&http->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *pathconf = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(pathconf, sizeof(*handler) + sizeof(http));
    handler->on_req = on_req;
    *(struct gust_http **)(handler + 1) = http;
    gust_h2o_errors_register(http, pathconf);
    gust_h2o_errors_register(http, &host->fallback_path); /* errors before a path is chosen */

    h2o_context_init(&http->ctx, h2o_evloop_create(), &http->config);
    gust_linger_init(http);
    http->accept_ctx.ctx = &http->ctx;
    http->accept_ctx.hosts = http->config.hosts;
    if (conf->listen.ssl) {
        /* h2o does the handshake of every accepted connection with it (HTTP/1.1: no ALPN). */
        if ((http->accept_ctx.ssl_ctx = gust_listen_tls_context(&conf->listen, err)) == NULL) {
            close(fd);
            return GUST_ECONFIG; /* the loop and context are never torn down (see gust_http_close) */
        }
    }
    http->queue = h2o_multithread_create_queue(http->ctx.loop);
    h2o_multithread_register_receiver(http->queue, &http->control, on_control);
    h2o_multithread_register_receiver(http->queue, &http->admin_done, gust_admin_on_done);
    h2o_multithread_register_receiver(http->queue, &http->retired, on_retired);
    const char *urls[64];
    const struct gust_bus_conf *bc = gust_bus_config(bus);
    struct gust_ingest_link_conf nc = {
        .urls = urls,
        .nurls = gust_bus_urls(bus, urls, 64),
        .link = &bc->link,
        .stream_subjects = bc->subjects,
        .publish_timeout_ms = bc->publish_timeout_ms,
        .max_pending = bc->max_pending,
    };
    struct gust_loop loop = gust_loop_h2o(http->ctx.loop);
    if ((rc = gust_ingest_link_create(&loop, &nc, &http->ingest_bus, err)) != 0) {
        close(fd);
        return rc; /* the loop and context are never torn down (see gust_http_close) */
    }
    if ((rc = gust_calls_create(http, conf->settings.call_timeout_ms > 0 ? conf->settings.call_timeout_ms : 2000)) !=
        0) {
        close(fd);
        return gust_err_set(err, rc, "http: out of memory");
    }
    if ((rc = gust_admin_start(http, err)) != 0) {
        close(fd);
        return rc; /* the loop and context are never torn down (see gust_http_close) */
    }

    gust_topology_init(http); /* after the ingest link: its state is sampled */
    http->listener = h2o_evloop_socket_create(http->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    http->listener->data = http;
    h2o_socket_read_start(http->listener, on_accept);
    gust_info("http: listening on %s (port %d%s)%s%s; admin routes %s, ingest %s", conf->listen.addr, http->port,
              conf->listen.ssl ? ", HTTPS" : "",
              http->base_len > 0 ? ", base path " : "", http->base_path,
              policy->admin_auth.enabled ? "need the admin token" : "read-only on loopback (no admin token)",
              policy->ingest_auth.enabled ? "needs the ingest token" : "open");
    *out = http;
    return 0;
}


void gust_http_run(struct gust_http *http)
{
    int64_t deadline = 0;
    for (;;) {
        h2o_evloop_run(http->ctx.loop, 50);
        if (!http->stopping) {
            continue;
        }
        int64_t now = gust_clock_mono_ms();
        if (deadline == 0) {
            deadline = now + gust_http_policy(http)->s.drain_ms;
        }
        size_t calls = gust_calls_waiting(http);
        if ((http->ingest_inflight == 0 && http->admin_inflight == 0 && calls == 0) || now >= deadline) {
            if (http->ingest_inflight > 0) {
                gust_warn("http: %zu ingest requests still waiting at shutdown", http->ingest_inflight);
            }
            if (calls > 0) {
                gust_warn("http: %zu calls still waiting for their reply at shutdown", calls);
            }
            /* The worker's JetStream calls must end before the bus goes away, which
             * happens right after this returns. */
            gust_admin_stop(http);
            return;
        }
    }
}

void gust_http_close(struct gust_http *http)
{
    if (http == NULL) {
        return;
    }
    gust_admin_stop(http); /* a no-op when gust_http_run already stopped it */
    gust_topology_stop(http); /* no sample of units the caller is about to tear down */
    /* Fail (answer, or free) the ingest waits still open, and send those answers. */
    gust_ingest_link_destroy(http->ingest_bus);
    http->ingest_bus = NULL;
    gust_calls_close(http); /* after the link: the publishes it failed are done */
    h2o_evloop_run(http->ctx.loop, 0);
    if (http->listener != NULL) {
        h2o_socket_close(http->listener);
        http->listener = NULL;
    }
    /* The loop and the context stay: h2o 2.2.5 cannot dispose of an evloop that still
     * has connections registered, and the process ends right after this. */
}
