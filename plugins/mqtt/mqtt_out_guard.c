/* mqtt_out's guard on what the broker sends: libmosquitto 2.0 allocates, as a client, a
 * buffer of whatever remaining length a packet announces (its packet__read has a FIXME
 * where the broker has max_packet_size, and no MOSQ_OPT bounds it), so a broker that
 * announces a 268 MB PUBLISH and sends it grows gust by that much. A sink's broker only
 * ever sends small packets (CONNACK, PUBACK, PUBREC, PUBCOMP, PINGRESP, at most a few
 * bytes in MQTT 3.1.1).
 *
 * So, on a plain TCP connection, libmosquitto's socket is swapped (dup2, right after
 * mosquitto_connect_async, before it reads anything) for one end of a socketpair, and the
 * network thread carries the bytes between the other end and the real socket (out_guard_in
 * and out_guard_out, from its loop): what libmosquitto writes as it is, what the broker
 * sends packet by packet, each fixed header read first. A packet over OUT_MAX_INCOMING, or
 * a malformed length, ends the relay before any of its body is taken: what came before it
 * is passed on, then both sockets are shut down, libmosquitto sees the connection gone,
 * and guard_why tells the network thread why. Over TLS the bytes are encrypted and
 * libmosquitto reads them itself, unguarded (README, Known limits).
 *
 * The relay was a thread of its own: woken by each of libmosquitto's writes, it sent a
 * batch to the broker a few packets at a time, and cost two system calls and a wake-up
 * for every 2-3 messages each way. On the network thread, what libmosquitto wrote in one
 * loop turn (a whole batch) goes out in one send. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mqtt_out.h"
#include "mqtt_wire.h"

#define OUT_MAX_INCOMING (256 * 1024) /* largest packet taken from the broker */
#define RELAY_BUF (64 * 1024)        /* most bytes held in either direction */

struct out_guard {
    struct mqtt_out *o;
    int real;    /* the TCP socket to the broker */
    int mine;    /* our end of the socketpair; libmosquitto has the other */
    int ended;   /* both shut down: libmosquitto reads what was passed on, then the end */
    /* broker -> libmosquitto */
    unsigned char head[5]; /* a fixed header being read */
    size_t head_len;
    size_t body_left; /* bytes of the current packet's body still to pass on */
    struct gust_buf down;
    size_t down_off;
    /* libmosquitto -> broker */
    struct gust_buf up;
    size_t up_off;
};

static void set_drop(struct mqtt_out *o, const char *why)
{
    pthread_mutex_lock(&o->lock);
    if (!o->guard_why[0]) {
        snprintf(o->guard_why, sizeof(o->guard_why), "%s", why);
    }
    pthread_mutex_unlock(&o->lock);
}

/* Takes in[0..n) from the broker into down, header by header; 0, or -1 (guard_why set). */
static int take(struct out_guard *g, const unsigned char *in, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (g->body_left > 0) {
            size_t k = n - i < g->body_left ? n - i : g->body_left;
            gust_buf_append(&g->down, in + i, k);
            g->body_left -= k;
            i += k;
            continue;
        }
        g->head[g->head_len++] = in[i++];
        size_t head_len = 0, rem = 0;
        int h = g->head_len >= 2 ? mqtt_wire_header(g->head, g->head_len, &head_len, &rem) : 0;
        if (h < 0 || (h == 0 && g->head_len == sizeof(g->head))) {
            set_drop(g->o, "protocol error: bad packet length from the broker");
            return -1;
        }
        if (h == 0) {
            continue;
        }
        if (rem > OUT_MAX_INCOMING) {
            char why[120];
            snprintf(why, sizeof(why), "the broker sent a packet of %zu bytes, over the limit of %d", rem,
                     OUT_MAX_INCOMING);
            set_drop(g->o, why);
            return -1;
        }
        gust_buf_append(&g->down, g->head, g->head_len);
        g->head_len = 0;
        g->body_left = rem;
    }
    return 0;
}

/* Writes what b holds from *off on to fd; 0, or -1 when fd is gone. */
static int flush(int fd, struct gust_buf *b, size_t *off)
{
    while (*off < b->len) {
        ssize_t w = send(fd, b->data + *off, b->len - *off, MSG_NOSIGNAL);
        if (w < 0) {
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ENOTCONN ? 0 : -1;
        }
        *off += (size_t)w;
    }
    b->len = *off = 0;
    return 0;
}

/* The relay is over (the broker closed, an error, a packet refused): libmosquitto reads
 * what was passed on before it, then sees the connection gone. */
static void end(struct out_guard *g)
{
    g->ended = 1;
    shutdown(g->mine, SHUT_RDWR);
    shutdown(g->real, SHUT_RDWR);
}

int out_guard_fd(const struct mqtt_out *o, short *events, int *timeout_ms)
{
    const struct out_guard *g = o->guard;
    *events = (short)(g->ended ? 0 : (g->down.len < RELAY_BUF ? POLLIN : 0) | (g->up.len ? POLLOUT : 0));
    if (g->ended || g->down.len > 0 || (g->up.len < RELAY_BUF && mosquitto_want_write(o->mosq))) {
        *timeout_ms = 0; /* bytes (or the end) wait for libmosquitto, or it has more to write */
    }
    return g->real;
}

int out_guard_in(struct mqtt_out *o, int readable)
{
    struct out_guard *g = o->guard;
    unsigned char buf[16384];
    int moved = g->down.len > 0; /* bytes libmosquitto has yet to read */

    if (g->ended) {
        return 1; /* until libmosquitto has read to the end */
    }
    if (g->down.len > 0 && flush(g->mine, &g->down, &g->down_off) != 0) {
        end(g);
        return 1;
    }
    while (readable && !g->ended && g->down.len < RELAY_BUF) {
        ssize_t r = recv(g->real, buf, sizeof(buf), 0);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            break;
        }
        if (r <= 0) {
            int e = r < 0 ? errno : 0, so = 0;
            socklen_t sl = sizeof(so);
            if (e == 0 && getsockopt(g->real, SOL_SOCKET, SO_ERROR, &so, &sl) == 0) {
                e = so;
            }
            if (e != 0) {
                set_drop(o, strerror(e)); /* "Connection refused" while connecting */
            }
            flush(g->mine, &g->down, &g->down_off); /* what came before the close */
            end(g);
            return 1;
        }
        if (take(g, buf, (size_t)r) != 0) {
            flush(g->mine, &g->down, &g->down_off); /* the packets before the bad one */
            end(g);
            return 1;
        }
        moved = 1;
        if ((size_t)r < sizeof(buf)) {
            break; /* drained: another recv would only say EAGAIN */
        }
    }
    if (!g->ended && flush(g->mine, &g->down, &g->down_off) != 0) {
        end(g);
        return 1;
    }
    return moved;
}

void out_guard_out(struct mqtt_out *o)
{
    struct out_guard *g = o->guard;
    unsigned char buf[16384];

    if (g == NULL || g->ended) {
        return;
    }
    for (;;) {
        if (g->up.len < RELAY_BUF) {
            ssize_t r = recv(g->mine, buf, sizeof(buf), 0);
            if (r > 0) {
                gust_buf_append(&g->up, buf, (size_t)r);
                if ((size_t)r == sizeof(buf)) {
                    continue;
                }
            }
            /* 0: libmosquitto closed its end (a DISCONNECT written, say): what it wrote
             * still goes out below, and the loop sees its socket gone. */
        }
        break;
    }
    if (flush(g->real, &g->up, &g->up_off) != 0) {
        end(g);
    }
}

int out_guard_start(struct mqtt_out *o, char *why, size_t whysz)
{
    int sock = mosquitto_socket(o->mosq), sp[2] = {-1, -1};
    struct out_guard *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    g->o = o;
    g->real = g->mine = -1;
    if (sock < 0 || (g->real = dup(sock)) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0 ||
        dup2(sp[0], sock) < 0) {
        snprintf(why, whysz, "cannot set up the connection's guard: %s", strerror(errno));
        goto fail;
    }
    close(sp[0]);
    sp[0] = -1;
    g->mine = sp[1];
    fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK); /* as libmosquitto had it */
    fcntl(g->mine, F_SETFL, fcntl(g->mine, F_GETFL) | O_NONBLOCK);
    fcntl(g->real, F_SETFL, fcntl(g->real, F_GETFL) | O_NONBLOCK);
    fcntl(g->real, F_SETFD, FD_CLOEXEC);
    o->guard = g;
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (sp[i] >= 0 && sp[i] != g->mine) {
            close(sp[i]);
        }
    }
    if (g->mine >= 0) {
        close(g->mine);
    }
    if (g->real >= 0) {
        close(g->real);
    }
    free(g);
    return -1;
}

void out_guard_stop(struct mqtt_out *o)
{
    struct out_guard *g = o->guard;
    if (g == NULL) {
        return;
    }
    out_guard_out(o); /* what libmosquitto wrote last (the DISCONNECT of a clean stop) */
    close(g->real);
    close(g->mine);
    gust_buf_free(&g->down);
    gust_buf_free(&g->up);
    free(g);
    o->guard = NULL;
}
