/* One rabbitmq-c connection with channel 1, and its reconnect policy: 100 ms doubling
 * to 10 s between attempts, reset once a connection has stayed up 10 s (a broker that
 * accepts and then drops us is not hammered). A lost connection and the recovery are
 * logged once each; repeated failures only when the reason changes. Every wait is
 * bounded: the TCP/TLS connect and the login by `timeout`, RPCs too. */
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "amqp_plugin.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

void amqp_link_init(struct amqp_link *l, struct gust_instance *inst, const struct amqp_conf *conf)
{
    memset(l, 0, sizeof(*l));
    l->inst = inst;
    l->conf = conf;
    l->backoff_ms = BACKOFF_MIN_MS;
}

static void failed(struct amqp_link *l, const char *why)
{
    atomic_fetch_add(&l->errors, 1);
    if (strcmp(why, l->last_error) != 0) {
        amqp_host->log(l->inst, GUST_LOG_WARN, "amqp %s: %s (retrying with backoff up to 10s)", l->conf->shown,
                       why);
        snprintf(l->last_error, sizeof(l->last_error), "%s", why);
        amqp_host->set_error(l->inst, why);
    }
    l->retry_at = gust_clock_mono_ms() + l->backoff_ms;
    l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : l->backoff_ms * 2;
}

static void text_of(char *out, size_t outsz, const char *what, const char *who, const amqp_bytes_t *t,
                    int code)
{
    snprintf(out, outsz, "%s: %s%d %.*s", what, who, code, (int)(t->len > 250 ? 250 : t->len),
             (const char *)t->bytes);
}

int amqp_close_text(amqp_connection_state_t conn, const amqp_method_t *m, char *out, size_t outsz)
{
    (void)conn;
    if (m->id == AMQP_CHANNEL_CLOSE_METHOD) {
        const amqp_channel_close_t *c = m->decoded;
        text_of(out, outsz, "channel closed by the broker", "", &c->reply_text, c->reply_code);
        return 1;
    }
    if (m->id == AMQP_CONNECTION_CLOSE_METHOD) {
        const amqp_connection_close_t *c = m->decoded;
        text_of(out, outsz, "connection closed by the broker", "", &c->reply_text, c->reply_code);
        return 1;
    }
    return 0;
}

int amqp_reply_text(amqp_rpc_reply_t r, const char *what, char *out, size_t outsz)
{
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
        return 1;
    case AMQP_RESPONSE_NONE:
        snprintf(out, outsz, "%s: no reply", what);
        return 0;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        snprintf(out, outsz, "%s: %s", what, amqp_error_string2(r.library_error));
        return 0;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            const amqp_channel_close_t *c = r.reply.decoded;
            text_of(out, outsz, what, "refused: ", &c->reply_text, c->reply_code);
        } else if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
            const amqp_connection_close_t *c = r.reply.decoded;
            text_of(out, outsz, what, "connection closed: ", &c->reply_text, c->reply_code);
        } else {
            snprintf(out, outsz, "%s: unexpected method 0x%08x", what, (unsigned)r.reply.id);
        }
        return 0;
    }
    snprintf(out, outsz, "%s: failed", what);
    return 0;
}

/* The password: the first line of password_file, read at each connect so a rotated
 * file is picked up; else the URL's (rabbitmq-c's default "guest" without one). */
static int password(const struct amqp_conf *cf, char *out, size_t outsz, char *why, size_t whysz)
{
    if (!cf->password_file) {
        snprintf(out, outsz, "%s", cf->url_password ? cf->url_password : "");
        return 0;
    }
    FILE *f = fopen(cf->password_file, "r");
    if (!f) {
        snprintf(why, whysz, "password_file %s: cannot be read", cf->password_file);
        return -1;
    }
    if (!fgets(out, (int)outsz, f)) {
        out[0] = '\0';
    }
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

static int open_socket(amqp_connection_state_t conn, const struct amqp_conf *cf, struct timeval *tv, char *why,
                       size_t whysz)
{
    if (cf->tls) {
        atomic_store(&amqp_tls_used, 1);
    }
    amqp_socket_t *s = cf->tls ? amqp_ssl_socket_new(conn) : amqp_tcp_socket_new(conn);
    if (!s) {
        snprintf(why, whysz, "cannot make a %s socket", cf->tls ? "TLS" : "TCP");
        return -1;
    }
    if (cf->tls) {
        amqp_ssl_socket_set_verify_peer(s, 1);
        amqp_ssl_socket_set_verify_hostname(s, 1);
        if (cf->tls_ca && amqp_ssl_socket_set_cacert(s, cf->tls_ca) != AMQP_STATUS_OK) {
            snprintf(why, whysz, "tls_ca %s: cannot be loaded", cf->tls_ca);
            return -1;
        }
    }
    int rc = amqp_socket_open_noblock(s, cf->host, cf->port, tv);
    if (rc != AMQP_STATUS_OK) {
        snprintf(why, whysz, "connect: %s", amqp_error_string2(rc));
        return -1;
    }
    return 0;
}

int amqp_link_ensure(struct amqp_link *l, char *why, size_t whysz)
{
    const struct amqp_conf *cf = l->conf;
    struct timeval tv = {.tv_sec = cf->timeout_ms / 1000, .tv_usec = (cf->timeout_ms % 1000) * 1000};
    char pw[512];

    if (l->conn) {
        if (l->backoff_ms > BACKOFF_MIN_MS && gust_clock_mono_ms() - l->up_since > 10000) {
            l->backoff_ms = BACKOFF_MIN_MS;
        }
        return 0;
    }
    if (gust_clock_mono_ms() < l->retry_at) {
        snprintf(why, whysz, "%s", l->last_error[0] ? l->last_error : "not connected");
        return GUST_EAGAIN;
    }
    amqp_connection_state_t conn = amqp_new_connection();
    if (!conn) {
        snprintf(why, whysz, "out of memory");
        failed(l, why);
        return GUST_EAGAIN;
    }
    amqp_set_handshake_timeout(conn, &tv);
    amqp_set_rpc_timeout(conn, &tv);
    int ok = open_socket(conn, cf, &tv, why, whysz) == 0 && password(cf, pw, sizeof(pw), why, whysz) == 0;
    if (ok) {
        amqp_rpc_reply_t r = amqp_login(conn, cf->vhost, 0, AMQP_DEFAULT_FRAME_SIZE, cf->heartbeat_s,
                                        AMQP_SASL_METHOD_PLAIN, cf->user ? cf->user : "guest", pw);
        ok = amqp_reply_text(r, "login", why, whysz);
    }
    memset(pw, 0, sizeof(pw));
    if (ok) {
        amqp_channel_open(conn, 1);
        ok = amqp_reply_text(amqp_get_rpc_reply(conn), "channel.open", why, whysz);
    }
    if (!ok) {
        amqp_destroy_connection(conn);
        failed(l, why);
        return GUST_EAGAIN;
    }
    l->conn = conn;
    l->up_since = gust_clock_mono_ms();
    return 0;
}

void amqp_link_ready(struct amqp_link *l)
{
    atomic_fetch_add(&l->connects, 1);
    atomic_store(&l->connected, 1);
    if (!l->quiet) {
        amqp_host->log(l->inst, GUST_LOG_INFO, "%s amqp %s", l->was_up ? "reconnected to" : "connected to",
                       l->conf->shown);
    }
    l->quiet = 0;
    l->was_up = 1;
    l->last_error[0] = '\0';
    amqp_host->set_error(l->inst, NULL);
}

void amqp_link_drop(struct amqp_link *l, const char *why)
{
    if (l->conn) {
        /* No close handshake: the connection is broken or the broker is closing it. */
        amqp_destroy_connection(l->conn);
        l->conn = NULL;
        atomic_store(&l->connected, 0);
    }
    failed(l, why);
}

void amqp_link_reset(struct amqp_link *l)
{
    l->quiet = l->last_error[0] == '\0';
    if (l->conn) {
        amqp_destroy_connection(l->conn);
        l->conn = NULL;
        atomic_store(&l->connected, 0);
    }
}

void amqp_link_close(struct amqp_link *l)
{
    if (l->conn) {
        amqp_connection_close(l->conn, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(l->conn);
        l->conn = NULL;
        atomic_store(&l->connected, 0);
    }
}

int64_t amqp_link_wait_ms(const struct amqp_link *l)
{
    int64_t left = l->retry_at - gust_clock_mono_ms();
    return l->conn || left < 0 ? 0 : left;
}
