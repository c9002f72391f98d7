/* Ingest's NATS connection on the h2o loop: see nats_loop.h for why it exists. */
#define _GNU_SOURCE /* memmem */
#include "nats_loop.h"

#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../bus/bus.h"
#include "../bus/nats_url.h"
#include "../bus/pending.h"
#include "../bus/puback.h"
#include "../common/buf.h"
#include "../common/log.h"

#define RECONNECT_WAIT_MS 250
#define TICK_MS 100
#define MAX_LINE 4096              /* a protocol line longer than this is a broken stream */
#define MAX_QUEUED (64u << 20)     /* bytes waiting to be written: beyond it, back-pressure */

enum state { DOWN, CONNECTING, HANDSHAKE, READY };

struct nats_loop {
    h2o_loop_t *loop;
    struct gust_nats_url *urls;
    size_t nurls, next_url;
    const struct gust_nats_url *url; /* the one connected or being tried */
    struct addrinfo *addrs;          /* url's addresses, */
    const struct addrinfo *addr;     /* and the one connected or being tried */
    h2o_socket_t *sock;
    enum state state;
    int64_t attempt_ms; /* when the current attempt began */
    int64_t timeout_ms;
    size_t max_payload;
    struct gust_pending pending;
    char inbox[64]; /* "_INBOX.<nuid>.": a publish's reply subject is this plus its id */
    size_t inbox_len;
    /* Publishes are gathered in `out` during a loop iteration; the flush entry (a 0 ms
     * timeout, run at the end of the iteration) hands them to h2o in one write. While
     * that write is in flight its bytes are in `writing`. */
    struct gust_buf out, writing;
    int write_busy;
    h2o_timeout_t flush_timeout, retry_timeout, tick_timeout;
    h2o_timeout_entry_t flush_entry, retry_entry, tick_entry;
    int warned_down; /* the current outage was logged */
};

static void connect_next(struct nats_loop *n);
static void try_addr(struct nats_loop *n);

/* ---- writing ---- */

static void on_written(h2o_socket_t *sock, const char *err);

static void flush_now(struct nats_loop *n)
{
    if (n->write_busy || n->out.len == 0 || n->sock == NULL) {
        return;
    }
    struct gust_buf t = n->writing;
    n->writing = n->out;
    n->out = t;
    n->out.len = 0;
    n->write_busy = 1;
    h2o_iovec_t iov = h2o_iovec_init(n->writing.data, n->writing.len);
    h2o_socket_write(n->sock, &iov, 1, on_written);
}

static void on_flush(h2o_timeout_entry_t *entry)
{
    flush_now(H2O_STRUCT_FROM_MEMBER(struct nats_loop, flush_entry, entry));
}

/* Writes at the end of this loop iteration, with whatever else it queues. */
static void flush_soon(struct nats_loop *n)
{
    if (!n->write_busy && !h2o_timeout_is_linked(&n->flush_entry)) {
        h2o_timeout_link(n->loop, &n->flush_timeout, &n->flush_entry);
    }
}

/* ---- connection state ---- */

static void schedule_retry(struct nats_loop *n)
{
    if (!h2o_timeout_is_linked(&n->retry_entry)) {
        h2o_timeout_link(n->loop, &n->retry_timeout, &n->retry_entry);
    }
}

/* Closes the socket, fails what was in flight, and tries again: at once on the next URL
 * after a working connection broke, at once on the URL's next address after a failed
 * attempt (a name may resolve to ::1 and 127.0.0.1), else after RECONNECT_WAIT_MS. */
static void lost(struct nats_loop *n, const char *why)
{
    int was_ready = n->state == READY;
    if (n->sock != NULL) {
        n->sock->data = NULL;
        h2o_socket_close(n->sock);
        n->sock = NULL;
    }
    n->state = DOWN;
    n->out.len = 0;
    n->writing.len = 0;
    n->write_busy = 0;
    if (h2o_timeout_is_linked(&n->flush_entry)) {
        h2o_timeout_unlink(&n->flush_entry);
    }
    if (was_ready || !n->warned_down) {
        gust_warn("ingest: nats %s: %s", n->url != NULL ? n->url->text : "", why);
        n->warned_down = 1;
    }
    /* Each may or may not be stored: the callers answer now rather than at the timeout. */
    gust_pending_expire(&n->pending, -1, GUST_EAGAIN, "bus connection lost before the PubAck");
    if (was_ready) {
        connect_next(n);
    } else if (n->addr != NULL && n->addr->ai_next != NULL) {
        n->addr = n->addr->ai_next;
        try_addr(n);
    } else {
        schedule_retry(n);
    }
}

static void on_written(h2o_socket_t *sock, const char *err)
{
    struct nats_loop *n = sock->data;
    if (n == NULL) {
        return;
    }
    n->write_busy = 0;
    n->writing.len = 0;
    if (err != NULL) {
        lost(n, err);
        return;
    }
    flush_now(n);
}

/* JSON string body of s (credentials from the URL) into out. */
static int append_json_string(struct gust_buf *out, const char *s)
{
    int rc = gust_buf_append(out, "\"", 1);
    for (; rc == 0 && *s; s++) {
        unsigned char c = (unsigned char)*s;
        rc = c == '"' || c == '\\' ? gust_buf_printf(out, "\\%c", c)
             : c < 0x20            ? gust_buf_printf(out, "\\u%04x", c)
                                   : gust_buf_append(out, s, 1);
    }
    return rc == 0 ? gust_buf_append(out, "\"", 1) : rc;
}

/* INFO arrived: CONNECT (no echo; headers so that a subject no stream takes answers
 * "no responders" at once), the reply subscription, then a PING whose PONG says all of it
 * was accepted. */
static int send_connect(struct nats_loop *n, const char *info, size_t len)
{
    const char *mp = memmem(info, len, "\"max_payload\":", 14);
    n->max_payload = mp != NULL ? strtoull(mp + 14, NULL, 10) : 1024 * 1024;
    struct gust_buf *o = &n->out;
    int rc = gust_buf_printf(o, "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"gust-ingest\","
                                "\"lang\":\"C\",\"version\":\"gust\",\"protocol\":1,\"echo\":false,"
                                "\"headers\":true,\"no_responders\":true");
    const struct gust_nats_url *u = n->url;
    if (rc == 0 && u->token != NULL) {
        rc = gust_buf_printf(o, ",\"auth_token\":");
        rc = rc == 0 ? append_json_string(o, u->token) : rc;
    } else if (rc == 0 && u->user != NULL) {
        rc = gust_buf_printf(o, ",\"user\":");
        rc = rc == 0 ? append_json_string(o, u->user) : rc;
        rc = rc == 0 ? gust_buf_printf(o, ",\"pass\":") : rc;
        rc = rc == 0 ? append_json_string(o, u->pass) : rc;
    }
    rc = rc == 0 ? gust_buf_printf(o, "}\r\nSUB %.*s* 1\r\nPING\r\n", (int)n->inbox_len, n->inbox) : rc;
    flush_now(n);
    return rc;
}

/* ---- reading ---- */

/* A reply on our inbox: headers (hdr bytes, may be 0) then payload. */
static void on_reply(struct nats_loop *n, const char *subject, size_t subject_len, const char *msg, size_t hdr,
                     size_t total)
{
    if (subject_len <= n->inbox_len || memcmp(subject, n->inbox, n->inbox_len) != 0) {
        return;
    }
    uint64_t id = strtoull(subject + n->inbox_len, NULL, 10);
    uint64_t seq = 0;
    char why[256] = "";
    int status;
    /* A status header without payload: "NATS/1.0 503" is no responders. */
    if (hdr >= 12 && memcmp(msg, "NATS/1.0 503", 12) == 0) {
        status = GUST_EIO;
        snprintf(why, sizeof(why), "no stream takes this subject");
    } else {
        struct gust_puback ack;
        status = gust_puback_parse(msg + hdr, total - hdr, &ack, why, sizeof(why));
        seq = ack.seq;
    }
    gust_pending_complete(&n->pending, id, status, seq, why);
}

/* "MSG <subject> <sid> [reply] <bytes>" or "HMSG <subject> <sid> [reply] <hdr> <total>":
 * the sizes are the last one or two fields. Returns 0 and fills them, or -1. */
static int msg_sizes(const char *line, size_t len, int with_headers, const char **subject, size_t *subject_len,
                     size_t *hdr, size_t *total)
{
    const char *f[6];
    size_t fl[6], nf = 0;
    for (size_t i = 0; i < len && nf < 6;) {
        while (i < len && line[i] == ' ') {
            i++;
        }
        size_t s = i;
        while (i < len && line[i] != ' ') {
            i++;
        }
        if (i > s) {
            f[nf] = line + s;
            fl[nf++] = i - s;
        }
    }
    size_t need = with_headers ? 5 : 4; /* without the optional reply */
    if (nf != need && nf != need + 1) {
        return -1;
    }
    *subject = f[1];
    *subject_len = fl[1];
    *total = strtoull(f[nf - 1], NULL, 10);
    *hdr = with_headers ? strtoull(f[nf - 2], NULL, 10) : 0;
    return *hdr <= *total ? 0 : -1;
}

/* Handles what sock->input holds; returns -1 when the stream is broken. */
static int parse_input(struct nats_loop *n, h2o_buffer_t **input)
{
    const char *buf = (*input)->bytes;
    size_t len = (*input)->size, off = 0;
    int rc = 0;
    while (off < len) {
        const char *line = buf + off;
        const char *nl = memchr(line, '\n', len - off);
        if (nl == NULL) {
            if (len - off > MAX_LINE) {
                rc = -1;
            }
            break;
        }
        size_t line_len = (size_t)(nl - line);
        if (line_len > 0 && line[line_len - 1] == '\r') {
            line_len--;
        }
        size_t next = (size_t)(nl - buf) + 1;
        if (line_len >= 4 && (memcmp(line, "MSG ", 4) == 0 || memcmp(line, "HMSG", 4) == 0)) {
            const char *subject;
            size_t subject_len, hdr, total;
            /* Nothing the server sends us is bigger than what it accepts (a PubAck is small). */
            if (msg_sizes(line, line_len, line[0] == 'H', &subject, &subject_len, &hdr, &total) != 0 ||
                total > n->max_payload + MAX_LINE) {
                rc = -1;
                break;
            }
            if (len - next < total + 2) {
                break; /* the payload is not all here yet */
            }
            on_reply(n, subject, subject_len, buf + next, hdr, total);
            next += total + 2;
        } else if (line_len >= 4 && memcmp(line, "PING", 4) == 0) {
            rc = gust_buf_append(&n->out, "PONG\r\n", 6);
            flush_soon(n);
        } else if (line_len >= 4 && memcmp(line, "PONG", 4) == 0) {
            if (n->state == HANDSHAKE) {
                n->state = READY;
                gust_info("ingest: nats connected to %s", n->url->text);
                n->warned_down = 0;
            }
        } else if (line_len >= 4 && memcmp(line, "INFO", 4) == 0) {
            if (n->state == CONNECTING) {
                n->state = HANDSHAKE;
                rc = send_connect(n, line, line_len);
            }
        } else if (line_len >= 4 && memcmp(line, "-ERR", 4) == 0) {
            /* The server closes the connection after most of them (bad credentials, ...);
             * the others (a permission refused) leave a publish to its timeout. */
            gust_warn("ingest: nats %s: %.*s", n->url->text, (int)(line_len > 200 ? 200 : line_len), line);
        } /* +OK and anything else: nothing to do */
        off = next;
        if (rc != 0) {
            break;
        }
    }
    h2o_buffer_consume(input, off);
    return rc;
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    struct nats_loop *n = sock->data;
    if (n == NULL) {
        return;
    }
    if (err != NULL) {
        lost(n, err);
        return;
    }
    if (parse_input(n, &sock->input) != 0) {
        lost(n, "unexpected data from the server");
    }
}

static void on_connected(h2o_socket_t *sock, const char *err)
{
    struct nats_loop *n = sock->data;
    if (n == NULL) {
        return;
    }
    if (err != NULL) {
        lost(n, err);
        return;
    }
    int one = 1;
    setsockopt(h2o_socket_get_fd(sock), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    h2o_socket_read_start(sock, on_read);
}

static void try_addr(struct nats_loop *n)
{
    n->attempt_ms = gust_now_ms();
    n->sock = h2o_socket_connect(n->loop, n->addr->ai_addr, n->addr->ai_addrlen, on_connected);
    if (n->sock == NULL) {
        lost(n, "cannot connect");
        return;
    }
    n->sock->data = n;
    n->state = CONNECTING;
}

/* Starts an attempt on the next URL (resolving its name here, on the loop). */
static void connect_next(struct nats_loop *n)
{
    n->url = &n->urls[n->next_url];
    n->next_url = (n->next_url + 1) % n->nurls;
    if (n->addrs != NULL) {
        freeaddrinfo(n->addrs);
        n->addrs = NULL;
    }
    n->addr = NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int gai = getaddrinfo(n->url->host, n->url->port, &hints, &n->addrs);
    if (gai != 0) {
        n->addrs = NULL;
        lost(n, gai_strerror(gai));
        return;
    }
    n->addr = n->addrs;
    try_addr(n);
}

static void on_retry(h2o_timeout_entry_t *entry)
{
    struct nats_loop *n = H2O_STRUCT_FROM_MEMBER(struct nats_loop, retry_entry, entry);
    if (n->state == DOWN) {
        connect_next(n);
    }
}

/* Every TICK_MS: fails the publishes whose PubAck is overdue, and an attempt to connect
 * that got no answer. */
static void on_tick(h2o_timeout_entry_t *entry)
{
    struct nats_loop *n = H2O_STRUCT_FROM_MEMBER(struct nats_loop, tick_entry, entry);
    int64_t now = gust_now_ms();
    gust_pending_expire(&n->pending, now, GUST_ETIMEOUT, "no PubAck in time");
    if ((n->state == CONNECTING || n->state == HANDSHAKE) && now - n->attempt_ms > n->timeout_ms) {
        lost(n, "no answer to connect");
    }
    h2o_timeout_link(n->loop, &n->tick_timeout, &n->tick_entry);
}

/* ---- the API ---- */

int nats_loop_create(h2o_loop_t *loop, const struct nats_loop_conf *conf, struct nats_loop **out,
                     struct gust_err *err)
{
    struct nats_loop *n = calloc(1, sizeof(*n));
    if (n == NULL || conf->nurls == 0 || (n->urls = calloc(conf->nurls, sizeof(*n->urls))) == NULL ||
        gust_pending_init(&n->pending, conf->max_pending) != 0) {
        free(n != NULL ? n->urls : NULL);
        free(n);
        return gust_err_set(err, GUST_ENOMEM, "ingest: out of memory");
    }
    n->loop = loop;
    n->timeout_ms = conf->publish_timeout_ms;
    n->max_payload = 1024 * 1024; /* until the server's INFO says */
    for (; n->nurls < conf->nurls; n->nurls++) {
        const char *why = gust_nats_url_parse(conf->urls[n->nurls], &n->urls[n->nurls]);
        if (why != NULL) {
            gust_nats_url_free(&n->urls[n->nurls]);
            nats_loop_destroy(n);
            return gust_err_set(err, GUST_ECONFIG, "nats url %s: %s", conf->urls[n->nurls], why);
        }
    }
    /* A unique inbox as the bus's own links make theirs (nats.c is open by now). */
    char *inbox = NULL;
    if (natsInbox_Create(&inbox) != NATS_OK) {
        nats_loop_destroy(n);
        return gust_err_set(err, GUST_ENOMEM, "ingest: out of memory");
    }
    n->inbox_len = (size_t)snprintf(n->inbox, sizeof(n->inbox), "%s.", inbox);
    natsInbox_Destroy(inbox);
    h2o_timeout_init(loop, &n->flush_timeout, 0);
    h2o_timeout_init(loop, &n->retry_timeout, RECONNECT_WAIT_MS);
    h2o_timeout_init(loop, &n->tick_timeout, TICK_MS);
    n->flush_entry.cb = on_flush;
    n->retry_entry.cb = on_retry;
    n->tick_entry.cb = on_tick;
    h2o_timeout_link(loop, &n->tick_timeout, &n->tick_entry);
    connect_next(n);
    *out = n;
    return 0;
}

void nats_loop_destroy(struct nats_loop *n)
{
    if (n == NULL) {
        return;
    }
    if (n->sock != NULL) {
        n->sock->data = NULL;
        h2o_socket_close(n->sock);
    }
    h2o_timeout_entry_t *entries[] = {&n->flush_entry, &n->retry_entry, &n->tick_entry};
    for (size_t i = 0; i < 3; i++) {
        if (h2o_timeout_is_linked(entries[i])) {
            h2o_timeout_unlink(entries[i]);
        }
    }
    gust_pending_expire(&n->pending, -1, GUST_EAGAIN, "shutting down");
    gust_pending_dispose(&n->pending);
    if (n->addrs != NULL) {
        freeaddrinfo(n->addrs);
    }
    for (size_t i = 0; i < n->nurls; i++) {
        gust_nats_url_free(&n->urls[i]);
    }
    free(n->urls);
    gust_buf_free(&n->out);
    gust_buf_free(&n->writing);
    free(n);
}

int nats_loop_connected(const struct nats_loop *n)
{
    return n->state == READY;
}

int nats_loop_publish(struct nats_loop *n, const char *subject, const void *data, size_t len,
                      gust_publish_done_fn fn, void *ud)
{
    if (n->state != READY || n->out.len > MAX_QUEUED) {
        return GUST_EAGAIN;
    }
    if (len > n->max_payload) {
        return GUST_EINVAL;
    }
    /* Room first, so that once the publish has its id nothing can fail. */
    size_t subject_len = strlen(subject);
    if (gust_buf_reserve(&n->out, subject_len + n->inbox_len + len + 64) != 0) {
        return GUST_EAGAIN;
    }
    uint64_t id = gust_pending_add(&n->pending, gust_now_ms() + n->timeout_ms, fn, ud, NULL);
    if (id == 0) {
        return GUST_EAGAIN;
    }
    char *o = n->out.data + n->out.len;
    o += sprintf(o, "PUB %s %.*s%" PRIu64 " %zu\r\n", subject, (int)n->inbox_len, n->inbox, id, len);
    memcpy(o, data, len);
    memcpy(o + len, "\r\n", 2);
    n->out.len = (size_t)(o + len + 2 - n->out.data);
    flush_soon(n);
    return 0;
}
