/* Ingest's connection on the h2o loop: see ingest_link.h for why and how. */
#include "ingest_link.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/log.h"
#include "bus.h" /* gust_now_ms */
#include "nats_url.h"
#include "pending.h"
#include "puback.h"

#define TICK_MS 100
/* Bytes waiting in nats.c's write buffer beyond which publishes are refused
 * (back-pressure); past twice that (only nats.c's own PONGs can get it there, answering
 * a server that sends PINGs and reads nothing) the connection is dropped. */
#define MAX_QUEUED (8u << 20)

struct gust_ingest_link {
    h2o_loop_t *loop;
    pthread_t loop_thread;
    natsConnection *nc;
    natsSubscription *acks; /* <inbox>.*, synchronous: drained on the loop */
    char inbox[96];         /* "<inbox>.": a publish's reply subject is this plus its id */
    size_t inbox_len;
    char shown[160]; /* the servers, for the log */
    char stream_subjects[256];
    int64_t timeout_ms;
    size_t max_queued;
    struct gust_pending pending;

    /* The socket nats.c connected, as h2o watches it: a dup of nats.c's descriptor, since
     * nats.c closes its own (from any thread) when the connection goes. */
    h2o_socket_t *sock;
    int want_write;     /* nats.c has data to write and asked to be told */
    int write_notified; /* h2o will tell us when the socket can take more */
    h2o_timeout_t flush_timeout, tick_timeout;
    h2o_timeout_entry_t flush_entry, tick_entry;

    /* What nats.c's own threads report, for the loop (under lock, then the eventfd). */
    pthread_mutex_t lock;
    int efd;
    h2o_socket_t *wake;
    int ev_attach_fd; /* a dup of the socket of a new connection, or -1 */
    int ev_stopped;   /* the connection in use went */
    int ev_write;     /* nats.c wants to write */
    int ev_posted;    /* the eventfd is signalled and not read yet */
};

static int on_loop(const struct gust_ingest_link *l)
{
    return pthread_equal(pthread_self(), l->loop_thread);
}

/* ---- events from nats.c, on whatever thread calls them ---- */

/* Lock held. */
static void post(struct gust_ingest_link *l)
{
    if (!l->ev_posted) {
        l->ev_posted = 1;
        uint64_t one = 1;
        ssize_t w = write(l->efd, &one, sizeof(one));
        (void)w; /* only fails when the counter is full: it is signalled anyway */
    }
}

static natsStatus ev_attach(void **user, void *loop, natsConnection *nc, natsSock fd)
{
    (void)nc;
    struct gust_ingest_link *l = loop;
    *user = l;
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0) {
        return NATS_SYS_ERROR;
    }
    pthread_mutex_lock(&l->lock);
    if (l->ev_attach_fd >= 0) {
        close(l->ev_attach_fd);
    }
    l->ev_attach_fd = d;
    post(l);
    pthread_mutex_unlock(&l->lock);
    return NATS_OK;
}

/* nats.c asks to stop reading only when the connection goes (it is about to close the
 * socket and reconnect). */
static void stopped(struct gust_ingest_link *l)
{
    pthread_mutex_lock(&l->lock);
    if (l->ev_attach_fd >= 0) {
        /* A connection that went before the loop took it. */
        close(l->ev_attach_fd);
        l->ev_attach_fd = -1;
    }
    l->ev_stopped = 1;
    l->ev_write = 0;
    post(l);
    pthread_mutex_unlock(&l->lock);
}

static natsStatus ev_read(void *user, bool add)
{
    if (!add) {
        stopped(user);
    }
    return NATS_OK;
}

static natsStatus ev_detach(void *user)
{
    stopped(user);
    return NATS_OK;
}

static natsStatus ev_write(void *user, bool add)
{
    struct gust_ingest_link *l = user;
    if (on_loop(l)) {
        /* From a publish or from ProcessWriteEvent: write at the end of this turn, with
         * whatever else the turn publishes. */
        l->want_write = add;
        if (add && !h2o_timeout_is_linked(&l->flush_entry)) {
            h2o_timeout_link(l->loop, &l->flush_timeout, &l->flush_entry);
        }
        return NATS_OK;
    }
    if (add) {
        /* A PING from the timer, the handshake's leftovers from the reconnect thread. */
        pthread_mutex_lock(&l->lock);
        l->ev_write = 1;
        post(l);
        pthread_mutex_unlock(&l->lock);
    }
    return NATS_OK;
}

static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus s, void *closure)
{
    (void)nc;
    (void)sub;
    (void)closure;
    const char *why = NULL;
    natsConnection_GetLastError(nc, &why);
    gust_warn("ingest: bus: %s%s%s", natsStatus_GetText(s), why != NULL && why[0] != '\0' ? ": " : "",
              why != NULL ? why : "");
}

static void on_connected(natsConnection *nc, void *closure)
{
    (void)nc;
    (void)closure;
}

/* ---- on the loop ---- */

static void flush_now(struct gust_ingest_link *l);

static void on_writable(h2o_socket_t *sock, const char *err)
{
    struct gust_ingest_link *l = sock->data;
    (void)err; /* nats.c sees the error itself when it writes */
    if (l == NULL) {
        return;
    }
    l->write_notified = 0;
    flush_now(l);
}

/* Hands what nats.c buffered to the socket. Only when nats.c asked: with nothing
 * buffered its write would take send()'s 0 for a closed connection. */
static void flush_now(struct gust_ingest_link *l)
{
    if (l->sock == NULL || !l->want_write || l->write_notified || natsConnection_Buffered(l->nc) <= 0) {
        return;
    }
    natsConnection_ProcessWriteEvent(l->nc);
    if (l->want_write && l->sock != NULL) {
        /* Part of it is still buffered: go on once the socket drains. */
        l->write_notified = 1;
        h2o_socket_notify_write(l->sock, on_writable);
    }
}

static void on_flush(h2o_timeout_entry_t *entry)
{
    flush_now(H2O_STRUCT_FROM_MEMBER(struct gust_ingest_link, flush_entry, entry));
}

/* natsMsg_Destroy hands every message to nats.c's garbage-collector thread, which
 * frees it there: a wake-up of that thread per loop turn and, worse, free() of the
 * loop's allocations from another thread, contending for malloc's arena lock (two
 * futex calls per request here, most of the gap to the hand-written client this
 * replaced). nats.c 3.4.1 exports the function that frees a message at once without
 * declaring it; a weak reference keeps gust correct with a nats.c that lacks it. */
extern void natsMsg_free(void *msg) __attribute__((weak));

static void free_msg(natsMsg *m)
{
    if (natsMsg_free != NULL) {
        natsMsg_free(m);
    } else {
        natsMsg_Destroy(m);
    }
}

/* The id at the end of a reply subject, or 0. */
static uint64_t reply_id(const struct gust_ingest_link *l, const char *subject)
{
    size_t n = strlen(subject);
    if (n <= l->inbox_len || n > l->inbox_len + 20 || memcmp(subject, l->inbox, l->inbox_len) != 0) {
        return 0;
    }
    uint64_t id = 0;
    for (const char *p = subject + l->inbox_len; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || id > (UINT64_MAX - 9) / 10) {
            return 0;
        }
        id = id * 10 + (uint64_t)(*p - '0');
    }
    return id;
}

static void on_ack(struct gust_ingest_link *l, natsMsg *m)
{
    uint64_t id = reply_id(l, natsMsg_GetSubject(m));
    if (id == 0) {
        return;
    }
    struct gust_puback ack = {0};
    char why[256] = "";
    int status = gust_puback_parse(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), &ack, why, sizeof(why));
    if (status == 0 && ack.duplicate) {
        status = GUST_PUBLISH_DUPLICATE;
    }
    gust_pending_complete(&l->pending, id, status, ack.seq, why);
}

static void drain_acks(struct gust_ingest_link *l)
{
    int n = 0;
    if (natsSubscription_GetPending(l->acks, &n, NULL) != NATS_OK) {
        return;
    }
    for (; n > 0; n--) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, l->acks, 0) != NATS_OK) {
            break;
        }
        on_ack(l, m);
        free_msg(m);
    }
}

static void on_readable(h2o_socket_t *sock, const char *err)
{
    struct gust_ingest_link *l = sock->data;
    (void)err;
    if (l == NULL) {
        return;
    }
    natsConnection_ProcessReadEvent(l->nc);
    drain_acks(l);
    if (natsConnection_Status(l->nc) != NATS_CONN_STATUS_CONNECTED) {
        /* The connection went: nats.c reports it (ev_read) and closes its socket; ours
         * would read as ready until then. */
        h2o_socket_read_stop(sock);
        return;
    }
    int queued = natsConnection_Buffered(l->nc);
    if (queued > 0 && (size_t)queued > 2 * l->max_queued) {
        gust_warn("ingest: bus: the server reads nothing of what gust writes (%d bytes queued): reconnecting", queued);
        shutdown(h2o_socket_get_fd(sock), SHUT_RDWR); /* nats.c's next read fails and reconnects */
    }
    flush_now(l); /* the PONGs of the PINGs just read */
}

static void drop_socket(struct gust_ingest_link *l)
{
    if (l->sock != NULL) {
        l->sock->data = NULL;
        h2o_socket_close(l->sock);
        l->sock = NULL;
    }
    l->want_write = 0;
    l->write_notified = 0;
}

/* The servers' URL as the log shows it. */
static void connected_url(struct gust_ingest_link *l, char *out, size_t size)
{
    char url[256] = "";
    struct gust_nats_url u;
    natsConnection_GetConnectedUrl(l->nc, url, sizeof(url));
    if (gust_nats_url_parse(url, &u) == NULL) {
        snprintf(out, size, "%s", u.text);
        gust_nats_url_free(&u);
    } else {
        snprintf(out, size, "%s", l->shown);
    }
}

static void on_wake(h2o_socket_t *sock, const char *err)
{
    struct gust_ingest_link *l = sock->data;
    (void)err;
    uint64_t count;
    ssize_t r = read(l->efd, &count, sizeof(count));
    (void)r;
    pthread_mutex_lock(&l->lock);
    int fd = l->ev_attach_fd, stopped_ = l->ev_stopped, write_ = l->ev_write;
    l->ev_attach_fd = -1;
    l->ev_stopped = 0;
    l->ev_write = 0;
    l->ev_posted = 0;
    pthread_mutex_unlock(&l->lock);
    if (stopped_ && l->sock != NULL) {
        drop_socket(l);
        const char *why = NULL;
        natsConnection_GetLastError(l->nc, &why);
        gust_warn("ingest: lost the bus connection%s%s; reconnecting", why != NULL && why[0] != '\0' ? ": " : "",
                  why != NULL ? why : "");
        /* Each may or may not be stored: the callers answer now rather than at the timeout. */
        gust_pending_expire(&l->pending, -1, GUST_EAGAIN, "the bus connection was lost before the PubAck");
    }
    if (fd >= 0) {
        drop_socket(l);
        l->sock = h2o_evloop_socket_create(l->loop, fd, H2O_SOCKET_FLAG_DONT_READ);
        l->sock->data = l;
        h2o_socket_read_start(l->sock, on_readable);
        char shown[256];
        connected_url(l, shown, sizeof(shown));
        gust_info("ingest: connected to %s", shown);
        /* What nats.c queued meanwhile (the subscription, a PING) goes out now. */
        l->want_write = 1;
    }
    if (write_) {
        l->want_write = 1;
    }
    if (l->want_write && !h2o_timeout_is_linked(&l->flush_entry)) {
        h2o_timeout_link(l->loop, &l->flush_timeout, &l->flush_entry);
    }
}

/* Every TICK_MS: fails the publishes whose PubAck is overdue. */
static void on_tick(h2o_timeout_entry_t *entry)
{
    struct gust_ingest_link *l = H2O_STRUCT_FROM_MEMBER(struct gust_ingest_link, tick_entry, entry);
    gust_pending_expire(&l->pending, gust_now_ms(), GUST_ETIMEOUT, "no PubAck in time");
    h2o_timeout_link(l->loop, &l->tick_timeout, &l->tick_entry);
}

/* Whether subject (no wildcards) is one that filter (a subscription filter: '*' one
 * token, '>' the rest) takes. */
static int filter_matches(const char *filter, const char *subject)
{
    const char *f = filter, *s = subject;
    for (;;) {
        size_t fl = strcspn(f, "."), sl = strcspn(s, ".");
        if (fl == 1 && f[0] == '>' && f[1] == '\0') {
            return sl > 0;
        }
        if (!(fl == 1 && f[0] == '*') && (fl != sl || memcmp(f, s, fl) != 0)) {
            return 0;
        }
        if (f[fl] == '\0' || s[sl] == '\0') {
            return f[fl] == '\0' && s[sl] == '\0';
        }
        f += fl + 1;
        s += sl + 1;
    }
}

/* ---- the API ---- */

static int connect_link(struct gust_ingest_link *l, const struct gust_ingest_link_conf *conf, struct gust_err *err)
{
    natsOptions *opts = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetServers(opts, (const char **)conf->urls, (int)conf->nurls);
    if (s == NATS_OK) s = natsOptions_SetName(opts, "gust-ingest");
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
    /* With a callback the first connection is retried in the background (without
     * one nats.c would retry it here, blocking the start); the loop learns of it
     * through ev_attach, so the callback has nothing to do. */
    if (s == NATS_OK) s = natsOptions_SetRetryOnFailedConnect(opts, true, on_connected, NULL);
    if (s == NATS_OK) s = natsOptions_SetNoEcho(opts, true);
    /* nats.c's synchronous subscriptions drop a "no responders" status without saying
     * whose it was, so the server is not asked for them: a subject outside the stream
     * is refused before it is sent (filter_matches). */
    if (s == NATS_OK) s = natsOptions_DisableNoResponders(opts, true);
    /* Every publish asks for a write at once, which the loop gathers to the end of its
     * turn (ev_write): no flusher thread, no 1 ms wait. */
    if (s == NATS_OK) s = natsOptions_SetSendAsap(opts, true);
    if (s == NATS_OK) s = natsOptions_SetErrorHandler(opts, on_async_error, NULL);
    if (s == NATS_OK) s = natsOptions_SetEventLoop(opts, l, ev_attach, ev_read, ev_write, ev_detach);
    int rc = s == NATS_OK ? gust_nats_opts_fill(opts, conf->link, "ingest", err) : 0;
    if (rc == 0 && s == NATS_OK) {
        s = natsConnection_Connect(&l->nc, opts);
        if (s == NATS_NOT_YET_CONNECTED) {
            gust_warn("ingest: %s not reachable yet; retrying in the background", l->shown);
            s = NATS_OK;
        }
    }
    if (rc == 0 && s == NATS_OK) {
        char *inbox = NULL;
        s = natsInbox_Create(&inbox);
        if (s == NATS_OK) {
            l->inbox_len = (size_t)snprintf(l->inbox, sizeof(l->inbox), "%s.", inbox);
            char wildcard[128];
            snprintf(wildcard, sizeof(wildcard), "%s*", l->inbox);
            natsInbox_Destroy(inbox);
            s = natsConnection_SubscribeSync(&l->acks, l->nc, wildcard);
        }
        /* Drained after every read, so bounded by what one read brings. */
        if (s == NATS_OK) s = natsSubscription_SetPendingLimits(l->acks, -1, -1);
    }
    natsOptions_Destroy(opts);
    if (rc == 0 && s != NATS_OK) {
        const char *why = nats_GetLastError(NULL);
        rc = gust_err_set(err, GUST_EIO, "ingest: bus %s: %s", l->shown, why != NULL ? why : natsStatus_GetText(s));
    }
    return rc;
}

int gust_ingest_link_create(h2o_loop_t *loop, const struct gust_ingest_link_conf *conf, struct gust_ingest_link **out,
                            struct gust_err *err)
{
    struct gust_ingest_link *l = calloc(1, sizeof(*l));
    if (l == NULL || gust_pending_init(&l->pending, conf->max_pending) != 0) {
        free(l);
        return gust_err_set(err, GUST_ENOMEM, "ingest: out of memory");
    }
    l->loop = loop;
    l->loop_thread = pthread_self();
    l->timeout_ms = conf->publish_timeout_ms;
    snprintf(l->stream_subjects, sizeof(l->stream_subjects), "%s", conf->stream_subjects != NULL ? conf->stream_subjects : ">");
    l->ev_attach_fd = -1;
    pthread_mutex_init(&l->lock, NULL);
    struct gust_nats_url u;
    if (conf->nurls > 0 && gust_nats_url_parse(conf->urls[0], &u) == NULL) {
        snprintf(l->shown, sizeof(l->shown), "%s%s", u.text, conf->nurls > 1 ? ",..." : "");
        gust_nats_url_free(&u);
    }
    h2o_timeout_init(loop, &l->flush_timeout, 0);
    h2o_timeout_init(loop, &l->tick_timeout, TICK_MS);
    l->flush_entry.cb = on_flush;
    l->tick_entry.cb = on_tick;
    l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->efd < 0) {
        int rc = gust_err_set(err, GUST_EIO, "ingest: eventfd: %s", strerror(errno));
        gust_pending_dispose(&l->pending);
        free(l);
        return rc;
    }
    l->wake = h2o_evloop_socket_create(loop, l->efd, H2O_SOCKET_FLAG_DONT_READ);
    l->wake->data = l;
    h2o_socket_read_start(l->wake, on_wake);
    h2o_timeout_link(loop, &l->tick_timeout, &l->tick_entry);
    int rc = connect_link(l, conf, err);
    if (rc != 0) {
        gust_ingest_link_destroy(l);
        return rc;
    }
    l->max_queued = MAX_QUEUED + (size_t)natsConnection_GetMaxPayload(l->nc);
    *out = l;
    return 0;
}

void gust_ingest_link_destroy(struct gust_ingest_link *l)
{
    if (l == NULL) {
        return;
    }
    /* Close first: it joins nats.c's threads, so no callback comes after it. */
    if (l->nc != NULL) {
        natsConnection_Close(l->nc);
    }
    natsSubscription_Destroy(l->acks);
    natsConnection_Destroy(l->nc);
    drop_socket(l);
    if (l->ev_attach_fd >= 0) {
        close(l->ev_attach_fd);
    }
    if (l->wake != NULL) {
        h2o_socket_close(l->wake); /* closes efd */
    }
    h2o_timeout_entry_t *entries[] = {&l->flush_entry, &l->tick_entry};
    for (size_t i = 0; i < 2; i++) {
        if (h2o_timeout_is_linked(entries[i])) {
            h2o_timeout_unlink(entries[i]);
        }
    }
    gust_pending_expire(&l->pending, -1, GUST_EAGAIN, "shutting down");
    gust_pending_dispose(&l->pending);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

int gust_ingest_link_connected(const struct gust_ingest_link *l)
{
    return l->sock != NULL && natsConnection_Status(l->nc) == NATS_CONN_STATUS_CONNECTED;
}

int gust_ingest_link_publish(struct gust_ingest_link *l, const char *subject, const void *data, size_t len,
                             const char *msg_id, gust_publish_done_fn fn, void *ud)
{
    if (!filter_matches(l->stream_subjects, subject)) {
        return GUST_EIO;
    }
    if (!gust_ingest_link_connected(l)) {
        return GUST_EAGAIN;
    }
    if (len > (size_t)natsConnection_GetMaxPayload(l->nc)) {
        return GUST_EINVAL;
    }
    int queued = natsConnection_Buffered(l->nc);
    if (queued > 0 && (size_t)queued > l->max_queued) {
        return GUST_EAGAIN;
    }
    uint64_t id = gust_pending_add(&l->pending, gust_now_ms() + l->timeout_ms, fn, ud, NULL);
    if (id == 0) {
        return GUST_EAGAIN;
    }
    char reply[128];
    memcpy(reply, l->inbox, l->inbox_len);
    snprintf(reply + l->inbox_len, sizeof(reply) - l->inbox_len, "%" PRIu64, id);
    natsStatus s;
    if (msg_id == NULL) {
        s = natsConnection_PublishRequest(l->nc, subject, reply, data, (int)len);
    } else {
        natsMsg *m = NULL;
        s = natsMsg_Create(&m, subject, reply, data, (int)len);
        if (s == NATS_OK) s = natsMsgHeader_Set(m, "Nats-Msg-Id", msg_id);
        if (s == NATS_OK) s = natsConnection_PublishMsg(l->nc, m);
        if (m != NULL) {
            free_msg(m);
        }
    }
    if (s != NATS_OK) {
        /* Not sent (the connection went meanwhile): the caller hears it through fn. */
        gust_pending_complete(&l->pending, id, GUST_EIO, 0, natsStatus_GetText(s));
    }
    return 0;
}
