/* mqtt_out's libmosquitto client: its setup, libmosquitto's callbacks, and the network
 * thread that connects, drives mosquitto_loop() and reconnects.
 *
 * The network thread is mqtt_out's own, instead of mosquitto_loop_start()'s: that one
 * (mosquitto_loop_forever) ends for good after a protocol error from the broker or a
 * failed TLS handshake, so the sink would never connect again, and its reconnects block in
 * connect(), where stop cannot reach them. This one reconnects after any failure with
 * mqtt_in's backoff (100 ms doubling up to 10 s, started over after a connection that
 * stayed up 10 s), gives an attempt `timeout` to be accepted, and stops within STOP_MS.
 * Keepalive is libmosquitto's: a PINGREQ after a keepalive period in which either side was
 * silent, the connection dropped when nothing comes back within another.
 *
 * The loop is mqtt_out's own too (loop_once), not mosquitto_loop(): that one also polls
 * libmosquitto's wake-up socketpair, to which every mosquitto_publish writes a byte, and
 * goes round once per byte (a pselect, a one-byte read and a write attempt per message).
 * Woken by the first message of a batch while the unit's thread was still handing over
 * the rest, it sent the batch a few packets at a time, each write waking the broker (and
 * the guard's relay). Here nothing polls that socketpair (once full, libmosquitto's
 * writes to it fail at once, unread): the unit's thread hands over its whole batch, then
 * wakes this thread once through wake_fd, and one loop_write sends every queued packet. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <openssl/x509.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mqtt_out.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000
#define LOOP_MS 500  /* the network thread looks up from mosquitto_loop at least this often */
#define STOP_MS 1000 /* how long stop gives the DISCONNECT to go out */

/* The instance whose network thread this is (NULL on other threads): on_log keeps the
 * lines of that thread only, since mosquitto_publish logs on the unit's thread too. */
static _Thread_local const struct mqtt_out *net_thread_of;

/* Until at_ms (gust_clock_mono_ms), or a broadcast; 0, or ETIMEDOUT. Under lock. */
int out_wait_until(struct mqtt_out *o, int64_t at_ms)
{
    struct timespec ts = {.tv_sec = at_ms / 1000, .tv_nsec = (at_ms % 1000) * 1000000};
    return pthread_cond_timedwait(&o->cond, &o->lock, &ts);
}

void out_net_wake(struct mqtt_out *o)
{
    uint64_t one = 1;
    if (write(o->wake_fd, &one, sizeof(one)) < 0) {
        /* only on overflow, and then it is readable anyway */
    }
}

/* libmosquitto looks at errno after its callbacks return: they leave it as they found it. */
static void on_connect(struct mosquitto *m, void *ud, int rc)
{
    struct mqtt_out *o = ud;
    int saved = errno;

    if (rc != 0) {
        o->refused = rc; /* the loop then fails, and went_down() says why */
        errno = saved;
        return;
    }
    /* Every packet would be formatted for it from now on: the lines only matter while connecting. */
    mosquitto_log_callback_set(m, NULL);
    o->up_at = gust_clock_mono_ms();
    pthread_mutex_lock(&o->lock);
    o->connected = 1;
    o->conn_gen++;
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->lock);
    mqtt_host->set_error(o->inst, NULL);
    mqtt_host->log(o->inst, GUST_LOG_INFO, "connected to %s:%d as %s", o->conf.host, o->conf.port,
                   o->conf.client_id);
    errno = saved;
}

static void on_disconnect(struct mosquitto *m, void *ud, int rc)
{
    struct mqtt_out *o = ud;
    (void)m, (void)rc;
    o->lost_errno = errno; /* what MOSQ_ERR_ERRNO stands for; the loop returns the code */
}

static void on_publish(struct mosquitto *m, void *ud, int mid)
{
    struct mqtt_out *o = ud;
    int saved = errno;
    (void)m;

    pthread_mutex_lock(&o->lock);
    uint32_t i = o->slot_of_mid[(uint16_t)mid];
    /* NO_SLOT: a message of a batch that has given up on it, already retried. */
    if (i != NO_SLOT) {
        o->slot_of_mid[(uint16_t)mid] = NO_SLOT;
        o->state[i] = 1;
        if (++o->nacked == o->want) {
            pthread_cond_broadcast(&o->cond); /* one wake-up per batch */
        }
    }
    pthread_mutex_unlock(&o->lock);
    errno = saved;
}

/* Why an attempt failed shows up here first (an OpenSSL error, say). */
static void on_log(struct mosquitto *m, void *ud, int level, const char *str)
{
    struct mqtt_out *o = ud;
    int saved = errno;
    (void)m;

    if (net_thread_of == o && (level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING))) {
        snprintf(o->lib_error, sizeof(o->lib_error), "%s", str);
    }
    errno = saved;
}

/* Sets mosq up for a connection: made at start, started afresh after each connection
 * (see mqtt_out.h). Under lock once the network thread runs: no publish meanwhile. */
static int fresh_client(struct mqtt_out *o, struct gust_err *err)
{
    const struct mqtt_conf *c = &o->conf;
    int rc;

    if (!o->mosq) {
        if (!(o->mosq = mosquitto_new(c->client_id, true, o))) {
            return gust_err_set(err, GUST_ENOMEM, "mosquitto_new: %s", strerror(errno));
        }
    } else if ((rc = mosquitto_reinitialise(o->mosq, c->client_id, true, o)) != MOSQ_ERR_SUCCESS) {
        return gust_err_set(err, GUST_ENOMEM, "mosquitto_reinitialise: %s", mosquitto_strerror(rc));
    }
    mosquitto_threaded_set(o->mosq, true);
    mosquitto_connect_callback_set(o->mosq, on_connect);
    mosquitto_disconnect_callback_set(o->mosq, on_disconnect);
    mosquitto_publish_callback_set(o->mosq, on_publish);
    mosquitto_log_callback_set(o->mosq, on_log);
    /* Off by default in libmosquitto: 88 ms round trips on this machine without it. */
    mosquitto_int_option(o->mosq, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_int_option(o->mosq, MOSQ_OPT_SEND_MAXIMUM, o->max_inflight);
    if (c->username &&
        (rc = mosquitto_username_pw_set(o->mosq, c->username, c->password)) != MOSQ_ERR_SUCCESS) {
        return gust_err_set(err, GUST_EINVAL, "%s: username: %s", mqtt_host->cfg_where(o->cfg, "username"),
                            mosquitto_strerror(rc));
    }
    if (!c->tls) {
        return 0;
    }
    /* Without tls_ca the system's CAs, as mqtt_in's client does. */
    if (!c->tls_ca) {
        mosquitto_int_option(o->mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
    }
    rc = mosquitto_tls_set(o->mosq, c->tls_ca, c->tls_ca ? NULL : X509_get_default_cert_dir(), c->tls_cert,
                           c->tls_key, NULL);
    if (rc != MOSQ_ERR_SUCCESS) {
        return gust_err_set(err, GUST_ECONFIG, "%s: TLS files: %s",
                            mqtt_host->cfg_where(o->cfg, c->tls_ca ? "tls_ca" : "tls_cert"),
                            mosquitto_strerror(rc));
    }
    return 0;
}

/* What made libmosquitto's rc (from the loop or a connect) end the attempt or the connection. */
static void why_down(struct mqtt_out *o, int rc, int e, char *why, size_t whysz)
{
    if (o->refused) {
        snprintf(why, whysz, "%s (CONNACK %d)", mqtt_reason_text(o->refused), o->refused);
        return;
    }
    switch (rc) {
    case MOSQ_ERR_SUCCESS: /* the loop went well, but the socket is closed */
        snprintf(why, whysz, "the connection closed");
        break;
    case MOSQ_ERR_KEEPALIVE:
        snprintf(why, whysz, o->up_at ? "no PINGRESP within the keepalive period" : "no CONNACK in time");
        break;
    case MOSQ_ERR_ERRNO:
        snprintf(why, whysz, "%s", strerror(o->lost_errno ? o->lost_errno : e));
        break;
    case MOSQ_ERR_CONN_LOST:
        snprintf(why, whysz, "the broker closed the connection");
        break;
    case MOSQ_ERR_PROTOCOL:
        snprintf(why, whysz, "protocol error (a malformed or unexpected packet)");
        break;
    case MOSQ_ERR_TLS:
        snprintf(why, whysz, "TLS: %.140s", o->lib_error[0] ? o->lib_error : mosquitto_strerror(rc));
        break;
    default:
        snprintf(why, whysz, "%.150s", o->lib_error[0] ? o->lib_error : mosquitto_strerror(rc));
    }
}

/* The attempt or the connection is over: the batches hear of it, the client starts
 * afresh (which closes its socket), the next attempt waits for the backoff. Network
 * thread. */
static void went_down(struct mqtt_out *o, const char *why)
{
    struct gust_err err = {{0}};
    int64_t now = gust_clock_mono_ms(), up_ms = o->up_at ? now - o->up_at : 0;
    int64_t delay = mqtt_backoff_next(&o->backoff, up_ms);
    int stopping;

    out_guard_stop(o); /* first: it says nothing about the next connection */
    pthread_mutex_lock(&o->lock);
    o->connected = 0;
    o->conn_gen++;
    o->drop_why[0] = '\0';
    o->guard_why[0] = '\0';
    const char *what = o->up_at ? "connection lost: " : o->refused ? "broker refused the connection: " : "";
    snprintf(o->last_error, sizeof(o->last_error), "%s%.120s", what, why);
    mqtt_host->set_error(o->inst, o->last_error);
    o->client_ok = fresh_client(o, &err) == 0;
    stopping = o->stopping;
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->lock);

    o->open = 0;
    o->retry_at = now + delay;
    if (stopping) {
        return;
    }
    if (o->up_at) {
        mqtt_host->log(o->inst, GUST_LOG_WARN, "disconnected from %s:%d: %s; reconnecting in %" PRId64 " ms",
                       o->conf.host, o->conf.port, why, delay);
    } else if (o->refused) {
        mqtt_host->log(
            o->inst, GUST_LOG_ERROR, "broker %s:%d refused the connection: %s%s; retrying in %" PRId64 " ms",
            o->conf.host, o->conf.port, why,
            o->refused == 4 || o->refused == 5 ? "; check username and password/password_file" : "", delay);
    } else {
        mqtt_host->log(o->inst, GUST_LOG_WARN, "cannot connect to %s:%d: %s; retrying in %" PRId64 " ms",
                       o->conf.host, o->conf.port, why, delay);
    }
    if (!o->client_ok) {
        mqtt_host->log(o->inst, GUST_LOG_ERROR, "%s", err.msg);
    }
    o->up_at = 0;
}

/* Starts a connection attempt (non-blocking: libmosquitto's loop carries it on). */
static void attempt(struct mqtt_out *o)
{
    struct gust_err err = {{0}};
    char why[200];
    int rc;

    o->refused = o->lost_errno = 0;
    o->up_at = 0;
    o->lib_error[0] = '\0';
    if (!o->client_ok) {
        pthread_mutex_lock(&o->lock);
        o->client_ok = fresh_client(o, &err) == 0;
        pthread_mutex_unlock(&o->lock);
        if (!o->client_ok) {
            went_down(o, err.msg);
            return;
        }
    }
    o->attempt_at = gust_clock_mono_ms();
    rc = mosquitto_connect_async(o->mosq, o->conf.host, o->conf.port, o->conf.keepalive_s);
    if (rc == MOSQ_ERR_SUCCESS && !o->conf.tls && out_guard_start(o, why, sizeof(why)) != 0) {
        went_down(o, why);
        return;
    }
    if (rc == MOSQ_ERR_SUCCESS) {
        o->open = 1;
        return;
    }
    why_down(o, rc, errno, why, sizeof(why));
    went_down(o, why);
}

/* What mosquitto_loop() does, without its wake-up socketpair (see the top): waits up to
 * LOOP_MS for the socket or wake_fd, then reads, keeps the connection alive and writes
 * what is queued. On plain TCP the socket polled is the broker's, and the guard passes
 * the bytes between it and libmosquitto's (mqtt_out_guard.c). Over TLS the handshake
 * goes on in loop_read (libmosquitto's want_connect), so a socket that becomes writable
 * before the CONNACK is read too. */
static int loop_once(struct mqtt_out *o)
{
    int sock = mosquitto_socket(o->mosq), timeout = LOOP_MS, readable, wrote = 0, rc;
    if (sock < 0) {
        return MOSQ_ERR_NO_CONN;
    }
    short events = (short)(POLLIN | (mosquitto_want_write(o->mosq) ? POLLOUT : 0));
    int fd = o->guard ? out_guard_fd(o, &events, &timeout) : sock;
    struct pollfd p[2] = {{.fd = o->wake_fd, .events = POLLIN}, {.fd = fd, .events = events}};
    if (poll(p, 2, timeout) < 0) {
        return errno == EINTR ? MOSQ_ERR_SUCCESS : MOSQ_ERR_ERRNO;
    }
    if (p[0].revents & POLLIN) {
        uint64_t n;
        if (read(o->wake_fd, &n, sizeof(n)) < 0) {
            /* spurious: the eventfd is non-blocking */
        }
    }
    readable = (p[1].revents & (POLLIN | POLLERR | POLLHUP)) != 0;
    if (o->guard) {
        readable = out_guard_in(o, readable);
    } else if (!o->up_at && (p[1].revents & POLLOUT)) {
        readable = 1;
    }
    if (readable &&
        ((rc = mosquitto_loop_read(o->mosq, 1)) != MOSQ_ERR_SUCCESS || mosquitto_socket(o->mosq) < 0)) {
        return rc;
    }
    rc = mosquitto_loop_misc(o->mosq);
    /* Also what reading queued: PUBACKs free max_inflight slots for messages held back. */
    if (rc == MOSQ_ERR_SUCCESS && mosquitto_want_write(o->mosq)) {
        rc = mosquitto_loop_write(o->mosq, 1);
        wrote = 1;
    }
    if (o->guard && (wrote || (p[1].revents & POLLOUT))) {
        out_guard_out(o); /* the whole batch, in as few sends as the socket takes */
    }
    return rc;
}

/* One turn of the network thread while an attempt or a connection is under way. */
static void turn(struct mqtt_out *o)
{
    char why[200];

    pthread_mutex_lock(&o->lock);
    snprintf(why, sizeof(why), "%s", o->drop_why);
    pthread_mutex_unlock(&o->lock);
    if (why[0]) {
        went_down(o, why);
        return;
    }
    if (!o->up_at && gust_clock_mono_ms() - o->attempt_at >= o->conf.timeout_ms) {
        went_down(o, "no CONNACK in time");
        return;
    }
    int rc = loop_once(o), e = errno;
    if (rc != MOSQ_ERR_SUCCESS || mosquitto_socket(o->mosq) < 0) {
        pthread_mutex_lock(&o->lock); /* the guard may have said why */
        snprintf(why, sizeof(why), "%s", o->guard_why);
        pthread_mutex_unlock(&o->lock);
        if (!why[0]) {
            why_down(o, rc, e, why, sizeof(why));
        }
        went_down(o, why);
    }
}

static void *net_run(void *arg)
{
    struct mqtt_out *o = arg;

    net_thread_of = o;
    pthread_setname_np(pthread_self(), "mqtt_out"); /* for top -H and perf */
    for (;;) {
        pthread_mutex_lock(&o->lock);
        /* Stopping: once the DISCONNECT is out (the socket closes), or it could not be. */
        if (o->stopping && (!o->open || !o->connected || gust_clock_mono_ms() >= o->stop_by)) {
            pthread_mutex_unlock(&o->lock);
            return NULL;
        }
        if (!o->open) {
            if (gust_clock_mono_ms() < o->retry_at) {
                out_wait_until(o, o->retry_at);
            }
            int go = !o->stopping && gust_clock_mono_ms() >= o->retry_at;
            pthread_mutex_unlock(&o->lock);
            if (go) {
                attempt(o);
            }
            continue;
        }
        pthread_mutex_unlock(&o->lock);
        turn(o);
    }
}

int out_net_start(struct mqtt_out *o, struct gust_err *err)
{
    int rc;

    if ((rc = fresh_client(o, err)) != 0) {
        return rc;
    }
    if ((o->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        return gust_err_set(err, GUST_EIO, "eventfd: %s", strerror(errno));
    }
    o->client_ok = 1;
    mqtt_backoff_init(&o->backoff, BACKOFF_MIN_MS, BACKOFF_MAX_MS);
    if (pthread_create(&o->net, NULL, net_run, o) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start the network thread");
    }
    o->net_started = 1;
    return 0;
}

void out_net_stop(struct mqtt_out *o)
{
    if (!o->net_started) {
        return;
    }
    pthread_mutex_lock(&o->lock);
    o->stopping = 1;
    o->stop_by = gust_clock_mono_ms() + STOP_MS;
    /* Queues a DISCONNECT; once it is written (or when not connected) the thread ends. */
    mosquitto_disconnect(o->mosq);
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->lock);
    out_net_wake(o);
    pthread_join(o->net, NULL);
    o->net_started = 0;
    out_guard_stop(o);
}
