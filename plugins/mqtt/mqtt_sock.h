/* The connection to the broker of mqtt_in and mqtt_out: TCP with TCP_NODELAY, optionally
 * TLS (OpenSSL), non-blocking once connected so the caller polls it (mqtt_in together
 * with its wake-up fd). */
#ifndef GUST_MQTT_SOCK_H
#define GUST_MQTT_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mqtt.h"

/* CLOCK_MONOTONIC in milliseconds: the clock of every deadline here. */
int64_t mqtt_now_ms(void);

struct mqtt_tls; /* an SSL_CTX built from the conf's tls_* files */
struct mqtt_sock;

/* NULL in *out when the conf has no TLS. Reads the files (at start). */
int mqtt_tls_create(struct mqtt_tls **out, const struct mqtt_conf *c, struct gust_err *err);
void mqtt_tls_destroy(struct mqtt_tls *t);

/* Connects (and does the TLS handshake) within c->timeout_ms. tls may be NULL. */
int mqtt_sock_open(struct mqtt_sock **out, const struct mqtt_conf *c, struct mqtt_tls *tls, struct gust_err *err);
void mqtt_sock_close(struct mqtt_sock *s);
int mqtt_sock_fd(const struct mqtt_sock *s);
/* > 0 bytes, 0 when it would block, -1 on EOF or error (err says which). */
ssize_t mqtt_sock_read(struct mqtt_sock *s, void *buf, size_t n, struct gust_err *err);
ssize_t mqtt_sock_write(struct mqtt_sock *s, const void *buf, size_t n, struct gust_err *err);
/* Bytes TLS has decrypted already: read them without waiting for the socket. */
int mqtt_sock_buffered(const struct mqtt_sock *s);
/* TLS needs the socket writable to make progress on a read. */
int mqtt_sock_wants_write(const struct mqtt_sock *s);

#endif
