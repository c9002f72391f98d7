/* mqtt_out's connection: CONNECT/CONNACK, writing what is queued, reading what comes
 * back. Every wait is a poll bounded by a deadline; the caller holds the instance lock
 * (or, while connecting, owns the connection alone). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt_out.h"

#define READ_CHUNK 16384

void out_conn_close(struct out_conn *c)
{
    gust_sock_close(c->sock);
    c->sock = NULL;
}

void out_conn_free(struct out_conn *c)
{
    out_conn_close(c);
    mqtt_wbuf_free(&c->out);
    free(c->rbuf);
    c->rbuf = NULL;
    c->roff = c->rlen = c->rcap = 0;
}

uint64_t out_conn_queued(const struct out_conn *c)
{
    return c->written + (c->out.len - c->out.off);
}

/* Reads what is there (TLS: what it has decrypted too); 0, or -1 when the connection failed. */
static int read_some(struct out_conn *c, struct gust_err *err)
{
    if (c->roff > 0) {
        memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
        c->rlen -= c->roff;
        c->roff = 0;
    }
    do {
        if (c->rcap - c->rlen < READ_CHUNK) {
            unsigned char *b = realloc(c->rbuf, c->rcap + 2 * READ_CHUNK);
            if (!b) {
                return gust_err_set(err, -1, "out of memory");
            }
            c->rbuf = b;
            c->rcap += 2 * READ_CHUNK;
        }
        ssize_t n = gust_sock_read(c->sock, c->rbuf + c->rlen, c->rcap - c->rlen, err);
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }
        c->rlen += (size_t)n;
    } while (gust_sock_buffered(c->sock));
    return 0;
}

static int write_some(struct out_conn *c, struct gust_err *err)
{
    while (c->out.off < c->out.len) {
        ssize_t n = gust_sock_write(c->sock, c->out.p + c->out.off, c->out.len - c->out.off, err);
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }
        c->out.off += (size_t)n;
        c->written += (uint64_t)n;
        c->last_send = gust_now_ms();
    }
    mqtt_wbuf_compact(&c->out);
    return 0;
}

int out_conn_pump(struct out_conn *c, int want_input, int64_t deadline, struct gust_err *err)
{
    for (;;) {
        if (write_some(c, err) != 0) {
            return -1;
        }
        int pending = c->out.len > 0;
        if (!pending && !want_input) {
            return 0;
        }
        if (want_input && gust_sock_buffered(c->sock)) {
            return read_some(c, err);
        }
        int64_t left = deadline - gust_now_ms();
        struct pollfd p = {.fd = gust_sock_fd(c->sock),
                           .events = (short)(POLLIN | (pending || gust_sock_wants_write(c->sock) ? POLLOUT : 0))};
        int n = poll(&p, 1, left > 0 ? (int)left : 0);
        if (n < 0 && errno != EINTR) {
            return gust_err_set(err, -1, "poll: %s", strerror(errno));
        }
        if (n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP))) {
            /* Read even when only writing: a broker that closes the connection says why
             * (or at least that it did) on the read side. */
            return read_some(c, err);
        }
        if (n <= 0 && left <= 0) {
            return 0;
        }
    }
}

int out_conn_next(struct out_conn *c, struct mqtt_packet *p)
{
    long n = mqtt_wire_next(c->rbuf + c->roff, c->rlen - c->roff, MQTT_MAX_PACKET, p);
    if (n <= 0) {
        return n < 0 ? -1 : 0;
    }
    c->roff += (size_t)n;
    return 1;
}

int out_conn_open(struct out_conn *c, const struct mqtt_conf *conf, struct gust_tls *tls, int *refused,
                  struct gust_err *err)
{
    int64_t deadline = gust_now_ms() + conf->timeout_ms;
    struct mqtt_packet p;
    struct gust_sock_peer peer = {conf->host, conf->port, "broker"};

    *refused = 0;
    c->out.off = c->out.len = 0;
    c->roff = c->rlen = 0;
    c->written = 0;
    c->ping_at = 0;
    if (gust_sock_open(&c->sock, &peer, conf->timeout_ms, tls, NULL, err) != 0) {
        return -1;
    }
    /* The host redelivers what was not acked: no session state to keep at the broker. */
    if (mqtt_wire_connect(&c->out, conf->client_id, conf->username, conf->password, 1, conf->keepalive_s) != 0) {
        gust_err_set(err, -1, "CONNECT does not fit (a field over 65535 bytes?)");
        goto fail;
    }
    while (gust_now_ms() < deadline) {
        if (out_conn_pump(c, 1, deadline, err) != 0) {
            goto fail;
        }
        int got = out_conn_next(c, &p);
        if (got < 0 || (got > 0 && (p.type != MQTT_CONNACK || p.body_len != 2))) {
            gust_err_set(err, -1, "protocol error: expected a CONNACK");
            goto fail;
        }
        if (got > 0 && p.body[1] != 0) {
            *refused = p.body[1];
            gust_err_set(err, -1, "%s (CONNACK %d)", mqtt_connack_text(p.body[1]), p.body[1]);
            goto fail;
        }
        if (got > 0) {
            return 0;
        }
    }
    gust_err_set(err, -1, "no CONNACK in time");

fail:
    out_conn_close(c);
    return -1;
}
