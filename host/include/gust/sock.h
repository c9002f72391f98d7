/* A client connection for the plugins that speak TCP (mqtt_in, mqtt_out, http_out): TCP
 * with TCP_NODELAY, optionally TLS (OpenSSL, the peer verified against a CA file or the
 * system store, with its host name and SNI). Opening it is bounded by a deadline; after
 * that every call is non-blocking and the caller polls the fd. Part of libgust-sdk. */
#ifndef GUST_SOCK_H
#define GUST_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gust/err.h"
#include "gust/sdk.h"

/* gust_sock_read's answer when the peer closed the connection in order. */
#define GUST_SOCK_EOF (-2)

struct gust_tls; /* an SSL_CTX: the trust and the client certificate of every connection */
struct gust_sock;

/* Reads the files (ca NULL: the system CA store; cert and key NULL: no client
 * certificate). All borrowed. */
int gust_tls_create(struct gust_tls **out, const char *ca, const char *cert, const char *key,
                    struct gust_err *err);
void gust_tls_destroy(struct gust_tls *t);

/* Where to connect, borrowed during gust_sock_open; role (a literal) for the life of the sock. */
struct gust_sock_peer {
    const char *host; /* a name or an address literal; TLS checks the certificate names it */
    int port;
    const char *role; /* "broker", "server": who closed the connection, in error texts */
};

/* Connects (and does the TLS handshake when tls is not NULL) within timeout_ms. On failure
 * err says why and, when connect() itself failed, *os_errno (may be NULL) holds its errno
 * (ETIMEDOUT for the deadline), else 0. */
int gust_sock_open(struct gust_sock **out, const struct gust_sock_peer *peer, int64_t timeout_ms,
                   struct gust_tls *tls, int *os_errno, struct gust_err *err);
/* NULL is a no-op. */
void gust_sock_close(struct gust_sock *s);
int gust_sock_fd(const struct gust_sock *s);
/* > 0 bytes, 0 when it would block, GUST_SOCK_EOF when the peer closed, -1 on an error
 * (err says which, for EOF too). */
ssize_t gust_sock_read(struct gust_sock *s, void *buf, size_t n, struct gust_err *err);
/* > 0 bytes (maybe fewer than n), 0 when it would block, -1 on an error. */
ssize_t gust_sock_write(struct gust_sock *s, const void *buf, size_t n, struct gust_err *err);
/* Bytes TLS has decrypted already: read them without waiting for the socket. */
int gust_sock_buffered(const struct gust_sock *s);
/* TLS needs the socket writable to make progress on a read. */
int gust_sock_wants_write(const struct gust_sock *s);

#endif
