/* One Vault KV v2 read: GET /v1/{mount}/data/{path} over the SDK's client connection
 * (gust/sock.h: TCP, TLS checked against vault_ca or the system store), one request per
 * connection (Connection: close), the answer read whole within the timeout. */
#define _GNU_SOURCE /* strcasestr */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "secret_int.h"

#define MAX_ANSWER (1 << 20)

/* Writes all of data before the deadline: 0, or -1 with why. */
static int send_all(struct gust_sock *sk, const char *data, size_t len, int64_t deadline, char *why,
                    size_t whysz)
{
    struct gust_err err = {{0}};
    while (len > 0) {
        ssize_t n = gust_sock_write(sk, data, len, &err);
        if (n < 0) {
            snprintf(why, whysz, "Vault: %s", err.msg);
            return -1;
        }
        if (n == 0) {
            int64_t left = deadline - gust_clock_mono_ms();
            struct pollfd pfd = {.fd = gust_sock_fd(sk), .events = POLLOUT | POLLIN};
            if (left <= 0 || poll(&pfd, 1, (int)left) < 0) {
                snprintf(why, whysz, "Vault: no answer within the timeout");
                return -1;
            }
            continue;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* 1 when out holds a whole answer: its head and Content-Length bytes of body, or a
 * chunked body to its last chunk. A TLS peer may close without close_notify: the
 * answer is taken once whole, never on the close. */
static int answer_whole(const struct gust_buf *out)
{
    const char *end = out->len > 0 ? strstr(out->data, "\r\n\r\n") : NULL;
    if (end == NULL) {
        return 0;
    }
    size_t body = out->len - (size_t)(end + 4 - out->data);
    const char *cl = strcasestr(out->data, "\r\nContent-Length:");
    if (cl != NULL && cl < end) {
        return body >= strtoul(cl + 17, NULL, 10);
    }
    const char *te = strcasestr(out->data, "\r\nTransfer-Encoding: chunked");
    return te != NULL && te < end && body >= 5 && memcmp(out->data + out->len - 5, "0\r\n\r\n", 5) == 0;
}

/* Reads until the answer is whole, the peer closes (Connection: close) or the deadline. */
static int read_all(struct gust_sock *sk, struct gust_buf *out, int64_t deadline, char *why, size_t whysz)
{
    struct gust_err err = {{0}};
    for (;;) {
        if (gust_buf_reserve(out, 4096) != 0 || out->len > MAX_ANSWER) {
            snprintf(why, whysz, "Vault: the answer is over %d bytes", MAX_ANSWER);
            return -1;
        }
        ssize_t n = gust_sock_read(sk, out->data + out->len, out->cap - out->len - 1, &err);
        if (n == GUST_SOCK_EOF) {
            out->data[out->len] = '\0';
            return 0;
        }
        if (n < 0) {
            snprintf(why, whysz, "Vault: %s", err.msg);
            return -1;
        }
        if (n > 0) {
            out->len += (size_t)n;
            out->data[out->len] = '\0';
            if (answer_whole(out)) {
                return 0;
            }
            continue;
        }
        if (gust_sock_buffered(sk)) {
            continue;
        }
        int64_t left = deadline - gust_clock_mono_ms();
        struct pollfd pfd = {.fd = gust_sock_fd(sk),
                             .events = POLLIN | (gust_sock_wants_write(sk) ? POLLOUT : 0)};
        if (left <= 0 || poll(&pfd, 1, (int)left) < 0) {
            snprintf(why, whysz, "Vault: no answer within the timeout");
            return -1;
        }
    }
}

/* A chunked body decoded in place: 0, or -1 when malformed. */
static int unchunk(char *body, size_t len, size_t *out_len)
{
    size_t r = 0, w = 0;
    for (;;) {
        char *end;
        unsigned long n = strtoul(body + r, &end, 16);
        char *crlf = strstr(body + r, "\r\n");
        if (end == body + r || crlf == NULL) {
            return -1;
        }
        r = (size_t)(crlf - body) + 2;
        if (n == 0) {
            *out_len = w;
            return 0;
        }
        if (r + n + 2 > len) {
            return -1;
        }
        memmove(body + w, body + r, n);
        w += n;
        r += n + 2;
    }
}

int secret_vault_get(const struct secret_store *s, const char *path, struct gust_buf *body, char *why,
                     size_t whysz)
{
    if (s->token_error != NULL) {
        snprintf(why, whysz, "%s", s->token_error);
        return -1;
    }
    int64_t deadline = gust_clock_mono_ms() + s->timeout_ms;
    struct gust_sock_peer peer = {.host = s->vault_host, .port = s->vault_port, .role = "Vault"};
    struct gust_sock *sk = NULL;
    struct gust_err err = {{0}};
    if (gust_sock_open(&sk, &peer, s->timeout_ms, s->tls, NULL, &err) != 0) {
        snprintf(why, whysz, "Vault %s:%d: %s", s->vault_host, s->vault_port, err.msg);
        return -1;
    }
    struct gust_buf req = {0}, ans = {0};
    int rc = -1;
    if (gust_buf_printf(&req,
                        "GET /v1/%s/data/%s HTTP/1.1\r\nHost: %s:%d\r\nX-Vault-Token: %s\r\n"
                        "Accept: application/json\r\nConnection: close\r\n\r\n",
                        s->vault_mount, path, s->vault_host, s->vault_port,
                        s->token != NULL ? s->token : "") != 0) {
        snprintf(why, whysz, "out of memory");
        goto done;
    }
    if (send_all(sk, req.data, req.len, deadline, why, whysz) != 0 ||
        read_all(sk, &ans, deadline, why, whysz) != 0) {
        goto done;
    }
    int status = 0;
    char *head_end = strstr(ans.data, "\r\n\r\n");
    if (sscanf(ans.data, "HTTP/1.%*d %d", &status) != 1 || head_end == NULL) {
        snprintf(why, whysz, "Vault: not an HTTP answer");
        goto done;
    }
    if (status != 200) {
        snprintf(why, whysz, "Vault answered %d for %s%s", status, path,
                 status == 404   ? " (no such secret)"
                 : status == 403 ? " (the token is refused)"
                                 : "");
        goto done;
    }
    *head_end = '\0';
    char *payload = head_end + 4;
    size_t plen = ans.len - (size_t)(payload - ans.data);
    if (strcasestr(ans.data, "\r\nTransfer-Encoding: chunked") != NULL &&
        unchunk(payload, plen, &plen) != 0) {
        snprintf(why, whysz, "Vault: a malformed chunked answer");
        goto done;
    }
    if (gust_buf_append(body, payload, plen) != 0) {
        snprintf(why, whysz, "out of memory");
        goto done;
    }
    rc = 0;
done:
    secret_buf_wipe(&req); /* it held the token */
    secret_buf_wipe(&ans);
    gust_sock_close(sk);
    return rc;
}
