/* One HTTP/1.1 POST to the OTLP collector. Written here rather than borrowed: the HTTP
 * clients in the tree are http_out's and http_poll's, inside their plugins (pipelined,
 * templated, tied to a plugin instance); the SDK's gust_sock gives the connection and
 * this adds a request line and the status of the answer, once a second at most. A
 * connection per POST (Connection: close) keeps it free of keep-alive state. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "gust/sock.h"
#include "trace_int.h"

int gust_otlp_target_parse(const char *url, struct gust_otlp_target *out, char *why, size_t whysz)
{
    static const char scheme[] = "http://";
    if (strncmp(url, scheme, sizeof(scheme) - 1) != 0) {
        snprintf(why, whysz, "endpoint must start with http:// (OTLP/HTTP; https is not supported)");
        return -1;
    }
    const char *host = url + sizeof(scheme) - 1, *slash = strchr(host, '/');
    size_t hlen = slash != NULL ? (size_t)(slash - host) : strlen(host);
    snprintf(out->path, sizeof(out->path), "%s", slash != NULL ? slash : "/v1/traces");
    const char *colon = memchr(host, ':', hlen);
    out->port = 80;
    if (colon != NULL) {
        char *end = NULL;
        long port = strtol(colon + 1, &end, 10);
        if (end != host + hlen || port < 1 || port > 65535) {
            snprintf(why, whysz, "endpoint: invalid port");
            return -1;
        }
        out->port = (int)port;
        hlen = (size_t)(colon - host);
    }
    if (hlen == 0 || hlen >= sizeof(out->host)) {
        snprintf(why, whysz, "endpoint: no host");
        return -1;
    }
    memcpy(out->host, host, hlen);
    out->host[hlen] = '\0';
    return 0;
}

static int wait_fd(struct gust_sock *s, short events, int64_t deadline_ms)
{
    int64_t left = deadline_ms - (int64_t)(gust_clock_mono_ns() / 1000000u);
    if (left <= 0) {
        return -1;
    }
    struct pollfd p = {.fd = gust_sock_fd(s), .events = events};
    return poll(&p, 1, (int)left) > 0 ? 0 : -1;
}

int gust_otlp_post(const struct gust_otlp_target *t, const char *body, size_t len, int64_t timeout_ms, char *why,
                   size_t whysz)
{
    int64_t deadline = (int64_t)(gust_clock_mono_ns() / 1000000u) + timeout_ms;
    struct gust_err err = {{0}};
    struct gust_sock *s = NULL;
    struct gust_sock_peer peer = {.host = t->host, .port = t->port, .role = "collector"};
    if (gust_sock_open(&s, &peer, timeout_ms, NULL, NULL, &err) != 0) {
        snprintf(why, whysz, "%s", err.msg);
        return -1;
    }
    struct gust_buf req = {0};
    int rc = gust_buf_printf(&req,
                             "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                             "Connection: close\r\nContent-Length: %zu\r\n\r\n",
                             t->path, t->host, t->port, len);
    rc = rc ? rc : gust_buf_append(&req, body, len);
    size_t sent = 0;
    while (rc == 0 && sent < req.len) {
        ssize_t w = gust_sock_write(s, req.data + sent, req.len - sent, &err);
        if (w < 0 || (w == 0 && wait_fd(s, POLLOUT, deadline) != 0)) {
            snprintf(why, whysz, "%s", w < 0 ? err.msg : "timed out sending");
            rc = -1;
        }
        sent += w > 0 ? (size_t)w : 0;
    }
    char head[512];
    size_t got = 0;
    /* The status line is all we need. */
    while (rc == 0 && (got < 12 || memchr(head, '\n', got) == NULL) && got < sizeof(head) - 1) {
        ssize_t r = gust_sock_read(s, head + got, sizeof(head) - 1 - got, &err);
        if (r < 0 || (r == 0 && wait_fd(s, POLLIN, deadline) != 0)) {
            snprintf(why, whysz, "%s", r < 0 ? err.msg : "no answer in time");
            rc = -1;
        }
        got += r > 0 ? (size_t)r : 0;
    }
    if (rc == 0) {
        head[got] = '\0';
        int status = 0;
        if (sscanf(head, "HTTP/1.%*d %d", &status) != 1 || status < 200 || status > 299) {
            char *nl = strpbrk(head, "\r\n");
            snprintf(why, whysz, "collector answered %.*s", (int)(nl != NULL ? nl - head : 60), head);
            rc = -1;
        }
    }
    gust_buf_free(&req);
    gust_sock_close(s);
    return rc;
}
