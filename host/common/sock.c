/* TCP/TLS client connection shared by mqtt and http_out (see gust/sock.h). Connecting is
 * done with a deadline (non-blocking connect, then poll); the TLS handshake likewise; after
 * that every call is non-blocking and the caller polls. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gust/sock.h"

struct gust_tls {
    SSL_CTX *ctx;
};

struct gust_sock {
    int fd;
    SSL *ssl;
    int want_write;
    const char *role; /* borrowed */
};

static const char *ssl_why(void)
{
    static __thread char buf[256];
    unsigned long e = ERR_get_error();
    if (!e) {
        return "unknown TLS error";
    }
    ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return buf;
}

int gust_tls_create(struct gust_tls **out, const char *ca, const char *cert, const char *key,
                    struct gust_err *err)
{
    struct gust_tls *t;

    *out = NULL;
    if (!(t = calloc(1, sizeof(*t))) || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        free(t);
        return gust_err_set(err, GUST_ENOMEM, "TLS: cannot create a context");
    }
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    /* The output buffer moves (it is compacted and grows) between a write that would
     * block and its retry, and a partial write is as good as a whole one to the caller. */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    int ok = ca ? SSL_CTX_load_verify_locations(t->ctx, ca, NULL)
                       : SSL_CTX_set_default_verify_paths(t->ctx);
    if (ok != 1) {
        gust_err_set(err, GUST_ECONFIG, "TLS: cannot load CA %s: %s", ca ? ca : "(system)", ssl_why());
        goto fail;
    }
    if (cert && (SSL_CTX_use_certificate_chain_file(t->ctx, cert) != 1 ||
                        SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1 ||
                        SSL_CTX_check_private_key(t->ctx) != 1)) {
        gust_err_set(err, GUST_ECONFIG, "TLS: client certificate %s / key: %s", cert, ssl_why());
        goto fail;
    }
    *out = t;
    return 0;

fail:
    gust_tls_destroy(t);
    return GUST_ECONFIG;
}

void gust_tls_destroy(struct gust_tls *t)
{
    if (t) {
        SSL_CTX_free(t->ctx);
        free(t);
    }
}

static int wait_fd(int fd, short events, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = events};
    int64_t left = deadline - gust_clock_mono_ms();
    if (left <= 0) {
        return 0;
    }
    int n = poll(&p, 1, (int)left);
    return n < 0 && errno == EINTR ? wait_fd(fd, events, deadline) : n;
}

/* One address, non-blocking connect bounded by deadline. Returns the fd or -1. */
static int connect_one(const struct addrinfo *ai, int64_t deadline, int *why)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    int one = 1, soerr = 0;
    socklen_t sl = sizeof(soerr);

    if (fd < 0) {
        *why = errno;
        return -1;
    }
    /* Nagle would hold each small PUBACK (or pipelined request) back for up to 40 ms (and mosquitto's own
     * clients have it on by default: 88 ms round trips on this machine). */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        return fd;
    }
    if (errno != EINPROGRESS) {
        *why = errno;
        close(fd);
        return -1;
    }
    if (wait_fd(fd, POLLOUT, deadline) <= 0) {
        *why = ETIMEDOUT;
        close(fd);
        return -1;
    }
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr) {
        *why = soerr;
        close(fd);
        return -1;
    }
    return fd;
}

static int handshake(struct gust_sock *s, const struct gust_sock_peer *c, struct gust_tls *tls,
                     int64_t deadline, struct gust_err *err)
{
    if (!(s->ssl = SSL_new(tls->ctx)) || SSL_set_fd(s->ssl, s->fd) != 1) {
        return gust_err_set(err, GUST_ENOMEM, "TLS: cannot create a session");
    }
    /* The certificate must name the broker: an address literal is matched against the
     * IP entries, and gets no SNI (RFC 6066 allows host names only). */
    unsigned char addr[16];
    if (inet_pton(AF_INET, c->host, addr) == 1 || inet_pton(AF_INET6, c->host, addr) == 1) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s->ssl), c->host);
    } else {
        SSL_set_tlsext_host_name(s->ssl, c->host);
        SSL_set1_host(s->ssl, c->host);
    }
    for (;;) {
        int r = SSL_connect(s->ssl);
        if (r == 1) {
            return 0;
        }
        int e = SSL_get_error(s->ssl, r);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (!ev) {
            long v = SSL_get_verify_result(s->ssl);
            if (v != X509_V_OK) {
                return gust_err_set(err, GUST_EIO, "TLS handshake with %s:%d: certificate verify failed: %s (check tls_ca)",
                                c->host, c->port, X509_verify_cert_error_string(v));
            }
            return gust_err_set(err, GUST_EIO, "TLS handshake with %s:%d: %s", c->host, c->port, ssl_why());
        }
        if (wait_fd(s->fd, ev, deadline) <= 0) {
            return gust_err_set(err, GUST_ETIMEOUT, "TLS handshake with %s:%d: timed out", c->host, c->port);
        }
    }
}

int gust_sock_open(struct gust_sock **out, const struct gust_sock_peer *c, int64_t timeout_ms,
                   struct gust_tls *tls, int *os_errno, struct gust_err *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[8];
    int64_t deadline = gust_clock_mono_ms() + timeout_ms;
    int why = 0, rc;
    struct gust_sock *s;

    *out = NULL;
    if (os_errno) {
        *os_errno = 0;
    }
    snprintf(port, sizeof(port), "%d", c->port);
    if ((rc = getaddrinfo(c->host, port, &hints, &res)) != 0) {
        return gust_err_set(err, GUST_EIO, "resolve %s: %s", c->host, gai_strerror(rc));
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        freeaddrinfo(res);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    s->fd = -1;
    s->role = c->role;
    for (struct addrinfo *ai = res; ai && s->fd < 0; ai = ai->ai_next) {
        s->fd = connect_one(ai, deadline, &why);
    }
    freeaddrinfo(res);
    if (s->fd < 0) {
        free(s);
        if (os_errno) {
            *os_errno = why;
        }
        return gust_err_set(err, GUST_EIO, "connect %s:%d: %s", c->host, c->port, strerror(why));
    }
    if (tls && (rc = handshake(s, c, tls, deadline, err)) != 0) {
        gust_sock_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void gust_sock_close(struct gust_sock *s)
{
    if (!s) {
        return;
    }
    if (s->ssl) {
        SSL_free(s->ssl);
    }
    if (s->fd >= 0) {
        close(s->fd);
    }
    free(s);
}

int gust_sock_fd(const struct gust_sock *s)
{
    return s->fd;
}

int gust_sock_buffered(const struct gust_sock *s)
{
    return s->ssl && SSL_pending(s->ssl) > 0;
}

int gust_sock_wants_write(const struct gust_sock *s)
{
    return s->want_write;
}

/* Common outcome of SSL_read/SSL_write. */
static ssize_t ssl_result(struct gust_sock *s, int r, const char *op, struct gust_err *err)
{
    int e = SSL_get_error(s->ssl, r);
    s->want_write = 0;
    if (e == SSL_ERROR_WANT_READ) {
        return 0;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        s->want_write = 1;
        return 0;
    }
    if (e == SSL_ERROR_ZERO_RETURN) {
        gust_err_set(err, -1, "%s closed the connection", s->role);
        return GUST_SOCK_EOF;
    }
    return gust_err_set(err, -1, "TLS %s: %s", op, e == SSL_ERROR_SYSCALL ? strerror(errno) : ssl_why());
}

ssize_t gust_sock_read(struct gust_sock *s, void *buf, size_t n, struct gust_err *err)
{
    if (s->ssl) {
        int r = SSL_read(s->ssl, buf, (int)n);
        return r > 0 ? r : ssl_result(s, r, "read", err);
    }
    ssize_t r = read(s->fd, buf, n);
    if (r > 0) {
        return r;
    }
    if (r == 0) {
        gust_err_set(err, -1, "%s closed the connection", s->role);
        return GUST_SOCK_EOF;
    }
    if (errno == EAGAIN || errno == EINTR) {
        return 0;
    }
    return gust_err_set(err, -1, "read: %s", strerror(errno));
}

ssize_t gust_sock_write(struct gust_sock *s, const void *buf, size_t n, struct gust_err *err)
{
    if (s->ssl) {
        int r = SSL_write(s->ssl, buf, (int)n);
        return r > 0 ? r : ssl_result(s, r, "write", err);
    }
    ssize_t r = send(s->fd, buf, n, MSG_NOSIGNAL);
    if (r >= 0) {
        return r;
    }
    if (errno == EAGAIN || errno == EINTR) {
        return 0;
    }
    return gust_err_set(err, -1, "write: %s", strerror(errno));
}
