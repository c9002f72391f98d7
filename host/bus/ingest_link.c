/* Ingest's connection on the HTTP front's loop: see ingest_link.h for why and how. */
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
#include "bus.h"
#include "nats_msg.h"
#include "nats_opts.h"
#include "nats_url.h"
#include "pending.h"
#include "puback.h"
#include "reply.h"
#include "retention.h"

#define TICK_MS 100
/* Bytes waiting in nats.c's write buffer beyond which publishes are refused
 * (back-pressure); past twice that (only nats.c's own PONGs can get it there, answering
 * a server that sends PINGs and reads nothing) the connection is dropped. */
#define MAX_QUEUED (8u << 20)
#define MAX_URLS 64

/* One natsConnection, from the connector making it to the connector destroying it.
 * nats.c's threads report on it under the link's lock; the loop reads those reports. */
struct conn {
    struct gust_ingest_link *l;
    natsConnection *nc;
    natsSubscription *acks; /* <inbox>.*, synchronous: drained on the loop */
    natsSubscription *calls; /* <calls inbox>.*: replies to calls, the same way */
    int attach_fd;          /* a dup of nats.c's socket, until the loop takes it */
    int attached, detached; /* nats.c's first and last calls with this conn */
    int stopped;            /* nats.c stopped polling: the connection is gone */
    int want_write;         /* nats.c asked to write, from another thread */
    int ready, failed;      /* the connector's verdict on making it */
    char why[256];          /* failed: the reason */
    int destroy;            /* a job for the connector: destroy rather than connect */
    struct conn *next_job;
};

struct gust_ingest_link {
    struct gust_loop loop;
    pthread_t loop_thread;
    /* What a connection is made with, owned: the configuration may be gone by the time
     * the connector makes the next one. */
    char *urls[MAX_URLS];
    size_t nurls;
    struct gust_nats_link_conf conf;
    char *conf_strings[8];
    char shown[160];          /* the servers, for the log */
    char stream_subjects[256];
    char inbox[96]; /* "<inbox>.": a publish's reply subject is this plus its id */
    size_t inbox_len;
    char calls[96]; /* "<inbox>.": a call's reply subject is this plus its id (reply.h) */
    size_t calls_len;
    gust_ingest_reply_fn on_reply; /* NULL: replies are dropped */
    void *reply_ud;
    int64_t timeout_ms;
    size_t max_queued;
    struct gust_pending pending;

    /* On the loop. cur is the connection in use; making is the one the connector is
     * making (at most one of the two at a time). */
    struct conn *cur, *making;
    struct gust_loop_watch *sock; /* cur's socket as the loop watches it (a dup: nats.c
                                     closes its own) */
    int sock_fd;                  /* that dup */
    int want_write;     /* nats.c has data to write and asked to be told */
    int write_notified; /* the loop will tell us when the socket can take more */
    struct gust_nats_backoff backoff;
    int failed_attempts;
    int64_t connect_at_ms; /* when to ask for the next connection (0: none due) */
    struct gust_loop_timer *flush, *tick;

    /* Shared with nats.c's threads and the connector. */
    pthread_mutex_t lock;
    pthread_cond_t jobs_cond;
    pthread_cond_t detached_cond;
    struct conn *jobs, *jobs_tail;
    int stopping;
    pthread_t connector;
    int efd;
    struct gust_loop_watch *wake;
    int posted; /* the eventfd is signalled and not read yet */
    /* Subjects the server refused as not permitted, for the loop to fail what waits on
     * them (no PubAck comes): under lock. */
    char refused[4][256];
    size_t nrefused;
};

static int on_loop(const struct gust_ingest_link *l)
{
    return pthread_equal(pthread_self(), l->loop_thread);
}

/* ---- what nats.c's threads report, on whatever thread calls them ---- */

/* Lock held. */
static void post(struct gust_ingest_link *l)
{
    if (!l->posted) {
        l->posted = 1;
        uint64_t one = 1;
        ssize_t w = write(l->efd, &one, sizeof(one));
        (void)w; /* only fails when the counter is full: it is signalled anyway */
    }
}

static natsStatus ev_attach(void **user, void *loop, natsConnection *nc, natsSock fd)
{
    (void)nc;
    struct conn *c = loop;
    *user = c;
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0) {
        return NATS_SYS_ERROR;
    }
    pthread_mutex_lock(&c->l->lock);
    if (c->attach_fd >= 0) {
        close(c->attach_fd);
    }
    c->attach_fd = d;
    c->attached = 1;
    pthread_mutex_unlock(&c->l->lock);
    return NATS_OK;
}

/* nats.c stops reading only when the connection goes (reconnecting is off: it closes). */
static void stopped(struct conn *c)
{
    pthread_mutex_lock(&c->l->lock);
    c->stopped = 1;
    c->want_write = 0;
    post(c->l);
    pthread_mutex_unlock(&c->l->lock);
}

static natsStatus ev_read(void *user, bool add)
{
    if (!add) {
        stopped(user);
    }
    return NATS_OK;
}

/* nats.c's last call with the conn, which destroy() waits for: it may come after
 * natsConnection_Destroy returned, from the thread of nats.c that began closing it (its
 * ping timer, on a stale connection). */
static natsStatus ev_detach(void *user)
{
    struct conn *c = user;
    pthread_mutex_lock(&c->l->lock);
    c->stopped = 1;
    c->want_write = 0;
    c->detached = 1;
    post(c->l);
    pthread_cond_broadcast(&c->l->detached_cond);
    pthread_mutex_unlock(&c->l->lock);
    return NATS_OK;
}

static void flush_soon(struct gust_ingest_link *l)
{
    l->loop.arm(l->flush);
}

static natsStatus ev_write(void *user, bool add)
{
    struct conn *c = user;
    struct gust_ingest_link *l = c->l;
    if (on_loop(l)) {
        /* From a publish or from ProcessWriteEvent: write at the end of this turn, with
         * whatever else the turn publishes. */
        if (c == l->cur) {
            l->want_write = add;
            if (add) {
                flush_soon(l);
            }
        }
        return NATS_OK;
    }
    if (add) {
        /* A PING from nats.c's timer, the subscription from the connector. */
        pthread_mutex_lock(&l->lock);
        c->want_write = 1;
        post(l);
        pthread_mutex_unlock(&l->lock);
    }
    return NATS_OK;
}

static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus s, void *closure)
{
    (void)sub;
    struct gust_ingest_link *l = closure;
    const char *why = NULL;
    natsConnection_GetLastError(nc, &why);
    char subject[256];
    if (s == NATS_NOT_PERMITTED && gust_refused_subject(why, subject, sizeof(subject)) == 0) {
        pthread_mutex_lock(&l->lock);
        if (l->nrefused < sizeof(l->refused) / sizeof(l->refused[0])) {
            snprintf(l->refused[l->nrefused++], sizeof(l->refused[0]), "%s", subject);
        }
        post(l);
        pthread_mutex_unlock(&l->lock);
    }
    gust_warn("ingest: bus: %s%s%s", natsStatus_GetText(s), why != NULL && why[0] != '\0' ? ": " : "",
              why != NULL ? why : "");
}

/* ---- the connector: makes and destroys connections, off the loop ---- */

/* Making a connection blocks (TCP, TLS, the handshake), and so does destroying one (it
 * joins nats.c's threads): neither may happen on the loop. Each connection is made anew
 * rather than reconnected by nats.c: in its external-event-loop mode nats.c keeps its
 * protocol parser's state across a reconnect, so a connection lost in the middle of a
 * frame (or to a malformed one) leaves every later connection unreadable. */
static void make(struct gust_ingest_link *l, struct conn *c)
{
    natsOptions *opts = NULL;
    struct gust_err err = {{0}};
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetServers(opts, (const char **)l->urls, (int)l->nurls);
    if (s == NATS_OK) s = natsOptions_SetName(opts, "gust-ingest");
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
    if (s == NATS_OK) s = natsOptions_SetNoEcho(opts, true);
    /* nats.c's synchronous subscriptions drop a "no responders" status without saying
     * whose it was, so the server is not asked for them: a subject outside the stream
     * is refused before it is sent (filter_matches). */
    if (s == NATS_OK) s = natsOptions_DisableNoResponders(opts, true);
    /* Every publish asks for a write at once, which the loop gathers to the end of its
     * turn (ev_write): no flusher thread, no 1 ms wait. */
    if (s == NATS_OK) s = natsOptions_SetSendAsap(opts, true);
    if (s == NATS_OK) s = natsOptions_SetErrorHandler(opts, on_async_error, l);
    if (s == NATS_OK) s = natsOptions_SetEventLoop(opts, c, ev_attach, ev_read, ev_write, ev_detach);
    int rc = s == NATS_OK ? gust_nats_opts_fill(opts, &l->conf, "ingest", &err) : 0;
    if (rc == 0 && s == NATS_OK) s = natsConnection_Connect(&c->nc, opts);
    if (rc == 0 && s == NATS_OK) {
        char wildcard[128];
        snprintf(wildcard, sizeof(wildcard), "%s*", l->inbox);
        s = natsConnection_SubscribeSync(&c->acks, c->nc, wildcard);
    }
    if (rc == 0 && s == NATS_OK) {
        char wildcard[128];
        snprintf(wildcard, sizeof(wildcard), "%s*", l->calls);
        s = natsConnection_SubscribeSync(&c->calls, c->nc, wildcard);
    }
    /* Drained after every read, so bounded by what one read brings. */
    if (rc == 0 && s == NATS_OK) s = natsSubscription_SetPendingLimits(c->acks, -1, -1);
    if (rc == 0 && s == NATS_OK) s = natsSubscription_SetPendingLimits(c->calls, -1, -1);
    const char *why = rc != 0 ? err.msg : gust_nats_last_error();
    pthread_mutex_lock(&l->lock);
    if (rc == 0 && s == NATS_OK) {
        c->ready = 1;
    } else {
        c->failed = 1;
        snprintf(c->why, sizeof(c->why), "%.*s", (int)sizeof(c->why) - 1, why != NULL ? why : natsStatus_GetText(s));
    }
    post(l);
    pthread_mutex_unlock(&l->lock);
    natsOptions_Destroy(opts);
}

static void destroy(struct conn *c)
{
    struct gust_ingest_link *l = c->l;
    int made = c->nc != NULL; /* else nats.c gave the connection up itself, detach or not */
    if (made) {
        natsConnection_Close(c->nc); /* joins nats.c's threads, unless another one is closing it */
    }
    natsSubscription_Destroy(c->acks);
    natsSubscription_Destroy(c->calls);
    natsConnection_Destroy(c->nc);
    pthread_mutex_lock(&l->lock);
    while (made && c->attached && !c->detached) {
        pthread_cond_wait(&l->detached_cond, &l->lock);
    }
    pthread_mutex_unlock(&l->lock);
    if (c->attach_fd >= 0) {
        close(c->attach_fd);
    }
    free(c);
}

static void *connector(void *arg)
{
    struct gust_ingest_link *l = arg;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (l->jobs == NULL && !l->stopping) {
            pthread_cond_wait(&l->jobs_cond, &l->lock);
        }
        struct conn *c = l->jobs;
        if (c == NULL) {
            break; /* stopping, and nothing left to destroy */
        }
        l->jobs = c->next_job;
        if (l->jobs == NULL) {
            l->jobs_tail = NULL;
        }
        int stopping = l->stopping;
        pthread_mutex_unlock(&l->lock);
        if (c->destroy) {
            destroy(c);
        } else if (stopping) {
            pthread_mutex_lock(&l->lock);
            c->failed = 1; /* the loop hands it back for destroying */
            pthread_mutex_unlock(&l->lock);
        } else {
            make(l, c);
        }
        pthread_mutex_lock(&l->lock);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* On the loop. */
static void queue_job(struct gust_ingest_link *l, struct conn *c)
{
    pthread_mutex_lock(&l->lock);
    c->next_job = NULL;
    if (l->jobs_tail != NULL) {
        l->jobs_tail->next_job = c;
    } else {
        l->jobs = c;
    }
    l->jobs_tail = c;
    pthread_cond_signal(&l->jobs_cond);
    pthread_mutex_unlock(&l->lock);
}

static void retire(struct gust_ingest_link *l, struct conn *c)
{
    c->destroy = 1;
    queue_job(l, c);
}

static void ask_connection(struct gust_ingest_link *l)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        l->connect_at_ms = gust_clock_mono_ms() + l->backoff.max_ms; /* try again later */
        return;
    }
    c->l = l;
    c->attach_fd = -1;
    l->making = c;
    l->connect_at_ms = 0;
    queue_job(l, c);
}

/* ---- on the loop ---- */

static void flush_now(struct gust_ingest_link *l);

static void on_writable(void *ud)
{
    struct gust_ingest_link *l = ud; /* an error: nats.c sees it itself when it writes */
    l->write_notified = 0;
    flush_now(l);
}

/* Hands what nats.c buffered to the socket. Only when nats.c asked: with nothing
 * buffered its write would take send()'s 0 for a closed connection. */
static void flush_now(struct gust_ingest_link *l)
{
    if (l->sock == NULL || !l->want_write || l->write_notified || natsConnection_Buffered(l->cur->nc) <= 0) {
        return;
    }
    natsConnection_ProcessWriteEvent(l->cur->nc);
    if (l->want_write && l->sock != NULL) {
        /* Part of it is still buffered: go on once the socket drains. */
        l->write_notified = 1;
        l->loop.notify_write(l->sock, on_writable);
    }
}

static void on_flush(void *ud)
{
    flush_now(ud);
}

/* The id at the end of a subject under prefix (prefix_len bytes), or 0. */
static uint64_t id_after(const char *prefix, size_t prefix_len, const char *subject)
{
    size_t n = strlen(subject);
    if (n <= prefix_len || n > prefix_len + 20 || memcmp(subject, prefix, prefix_len) != 0) {
        return 0;
    }
    uint64_t id = 0;
    for (const char *p = subject + prefix_len; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || id > (UINT64_MAX - 9) / 10) {
            return 0;
        }
        id = id * 10 + (uint64_t)(*p - '0');
    }
    return id;
}

static uint64_t reply_id(const struct gust_ingest_link *l, const char *subject)
{
    return id_after(l->inbox, l->inbox_len, subject);
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
    if (ack.full) {
        gust_retention_note_full();
    }
    gust_pending_complete(&l->pending, id, status, ack.seq, why);
}

static void drain_acks(struct gust_ingest_link *l)
{
    int n = 0;
    if (natsSubscription_GetPending(l->cur->acks, &n, NULL) != NATS_OK) {
        return;
    }
    for (; n > 0; n--) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, l->cur->acks, 0) != NATS_OK) {
            break;
        }
        on_ack(l, m);
        gust_nats_msg_free(m);
    }
}

/* A flow's reply to a call (reply.h): its status header, 200 when missing. */
static void on_call_reply(struct gust_ingest_link *l, natsMsg *m)
{
    uint64_t id = id_after(l->calls, l->calls_len, natsMsg_GetSubject(m));
    if (id == 0 || l->on_reply == NULL) {
        return;
    }
    int status = 200;
    const char *v = NULL;
    if (natsMsgHeader_Get(m, GUST_REPLY_STATUS_HEADER, &v) == NATS_OK && v != NULL) {
        char *end = NULL;
        long n = strtol(v, &end, 10);
        status = end != v && *end == '\0' && n >= 200 && n <= 599 ? (int)n : 502;
    }
    l->on_reply(l->reply_ud, id, status, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m));
}

static void drain_calls(struct gust_ingest_link *l)
{
    int n = 0;
    if (natsSubscription_GetPending(l->cur->calls, &n, NULL) != NATS_OK) {
        return;
    }
    for (; n > 0; n--) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, l->cur->calls, 0) != NATS_OK) {
            break;
        }
        on_call_reply(l, m);
        gust_nats_msg_free(m);
    }
}

static void on_readable(void *ud)
{
    struct gust_ingest_link *l = ud;
    natsConnection *nc = l->cur->nc;
    natsConnection_ProcessReadEvent(nc);
    drain_acks(l);
    drain_calls(l); /* after the PubAcks: a call whose PubAck came in the same read is done first */
    if (natsConnection_Status(nc) != NATS_CONN_STATUS_CONNECTED) {
        /* The connection went: nats.c reports it (ev_read) and closes its socket; ours
         * would read as ready until then. */
        l->loop.read_stop(l->sock);
        return;
    }
    int queued = natsConnection_Buffered(nc);
    if (queued > 0 && (size_t)queued > 2 * l->max_queued) {
        gust_warn("ingest: bus: the server reads nothing of what gust writes (%d bytes queued): reconnecting", queued);
        shutdown(l->sock_fd, SHUT_RDWR); /* nats.c's next read fails */
        l->loop.read_stop(l->sock);
        return;
    }
    flush_now(l); /* the PONGs of the PINGs just read */
}

static void drop_socket(struct gust_ingest_link *l)
{
    if (l->sock != NULL) {
        l->loop.unwatch(l->sock);
        l->sock = NULL;
        l->sock_fd = -1;
    }
    l->want_write = 0;
    l->write_notified = 0;
}

/* The server's URL as the log shows it. */
static void connected_url(struct gust_ingest_link *l, char *out, size_t size)
{
    char url[256] = "";
    struct gust_nats_url u;
    natsConnection_GetConnectedUrl(l->cur->nc, url, sizeof(url));
    if (gust_nats_url_parse(url, &u) == NULL) {
        snprintf(out, size, "%s", u.text);
        gust_nats_url_free(&u);
    } else {
        snprintf(out, size, "%s", l->shown);
    }
}

static void schedule_connection(struct gust_ingest_link *l, const char *why)
{
    l->failed_attempts++;
    l->connect_at_ms = gust_clock_mono_ms() + gust_nats_backoff_delay(&l->backoff, l->failed_attempts, why);
}

/* The connector made the connection: it becomes the one in use. */
static void adopt(struct gust_ingest_link *l, struct conn *c, int fd)
{
    l->cur = c;
    l->making = NULL;
    l->sock = l->loop.watch(l->loop.impl, fd, l);
    l->sock_fd = fd;
    l->loop.read_start(l->sock, on_readable);
    int64_t max_payload = natsConnection_GetMaxPayload(c->nc);
    l->max_queued = MAX_QUEUED + (size_t)(max_payload > 0 && max_payload < (64 << 20) ? max_payload : 1 << 20);
    l->failed_attempts = 0;
    gust_nats_backoff_connected(&l->backoff);
    char shown[256];
    connected_url(l, shown, sizeof(shown));
    gust_info("ingest: connected to %s", shown);
    /* What nats.c queued meanwhile (the subscription, a PING) goes out now. */
    l->want_write = 1;
    flush_soon(l);
}

/* The connection in use went. */
static void lose(struct gust_ingest_link *l)
{
    const char *why = NULL;
    natsConnection_GetLastError(l->cur->nc, &why);
    char reason[300];
    snprintf(reason, sizeof(reason), "%s", why != NULL ? why : "");
    drop_socket(l);
    retire(l, l->cur);
    l->cur = NULL;
    gust_warn("ingest: lost the bus connection%s%s; reconnecting", reason[0] != '\0' ? ": " : "", reason);
    /* Each may or may not be stored: the callers answer now rather than at the timeout. */
    gust_pending_expire(&l->pending, -1, GUST_EAGAIN, "the bus connection was lost before the PubAck");
    l->failed_attempts = 0;
    schedule_connection(l, NULL);
}

static void on_wake(void *ud)
{
    struct gust_ingest_link *l = ud;
    uint64_t count;
    ssize_t r = read(l->efd, &count, sizeof(count));
    (void)r;
    pthread_mutex_lock(&l->lock);
    l->posted = 0;
    char refused[4][256];
    size_t nrefused = l->nrefused;
    memcpy(refused, l->refused, sizeof(refused));
    l->nrefused = 0;
    struct conn *m = l->making, *c = l->cur;
    int made = m != NULL && m->ready, failed = m != NULL && m->failed;
    int fd = -1;
    char why[256] = "";
    if (made) {
        fd = m->attach_fd;
        m->attach_fd = -1;
        made = fd >= 0 && !m->stopped; /* it may have gone already */
        failed = !made;
    }
    if (failed) {
        snprintf(why, sizeof(why), "%s", m->why[0] != '\0' ? m->why : "the connection went at once");
    }
    int lost = c != NULL && c->stopped, write_ = c != NULL && c->want_write;
    if (c != NULL) {
        c->want_write = 0;
    }
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < nrefused; i++) { /* not stored, for sure: no PubAck comes */
        char why[320];
        snprintf(why, sizeof(why), "not permitted to publish to %s", refused[i]);
        gust_warn("ingest: %s", why);
        gust_pending_fail_tag(&l->pending, gust_pending_tag(refused[i]), GUST_EIO, why);
    }
    if (made) {
        adopt(l, m, fd);
    } else if (failed) {
        if (fd >= 0) {
            close(fd);
        }
        l->making = NULL;
        retire(l, m);
        schedule_connection(l, why);
    }
    if (lost) {
        lose(l);
    } else if (write_) {
        l->want_write = 1;
        flush_soon(l);
    }
}

/* Every TICK_MS: fails the publishes whose PubAck is overdue, asks for a connection when
 * one is due. */
static void on_tick(void *ud)
{
    struct gust_ingest_link *l = ud;
    int64_t now = gust_clock_mono_ms();
    gust_pending_expire(&l->pending, now, GUST_ETIMEOUT, "no PubAck in time");
    if (l->cur == NULL && l->making == NULL && l->connect_at_ms != 0 && now >= l->connect_at_ms) {
        ask_connection(l);
    }
    l->loop.arm(l->tick);
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

/* Owned copies of what the connector needs after create returns. */
static int copy_conf(struct gust_ingest_link *l, const struct gust_ingest_link_conf *conf)
{
    if (conf->nurls == 0 || conf->nurls > MAX_URLS) {
        return -1;
    }
    for (; l->nurls < conf->nurls; l->nurls++) {
        if ((l->urls[l->nurls] = strdup(conf->urls[l->nurls])) == NULL) {
            return -1;
        }
    }
    l->conf = *conf->link;
    const char **strings[] = {&l->conf.tls_ca, &l->conf.tls_cert, &l->conf.tls_key, &l->conf.creds,
                              &l->conf.nkey_seed, &l->conf.token_file, &l->conf.password_file,
                              &l->conf.password_env};
    for (size_t i = 0; i < 8; i++) {
        if (*strings[i] != NULL && (*strings[i] = l->conf_strings[i] = strdup(*strings[i])) == NULL) {
            return -1;
        }
    }
    if (l->conf.user != NULL && (l->conf.user = strdup(l->conf.user)) == NULL) {
        return -1;
    }
    return 0;
}

int gust_ingest_link_create(const struct gust_loop *loop, const struct gust_ingest_link_conf *conf,
                            struct gust_ingest_link **out, struct gust_err *err)
{
    struct gust_ingest_link *l = calloc(1, sizeof(*l));
    if (l == NULL || gust_pending_init(&l->pending, conf->max_pending) != 0) {
        free(l);
        return gust_err_set(err, GUST_ENOMEM, "ingest: out of memory");
    }
    l->loop = *loop;
    l->loop_thread = pthread_self();
    l->sock_fd = -1;
    l->timeout_ms = conf->publish_timeout_ms;
    l->max_queued = MAX_QUEUED + (1 << 20);
    l->efd = -1;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->jobs_cond, NULL);
    pthread_cond_init(&l->detached_cond, NULL);
    snprintf(l->stream_subjects, sizeof(l->stream_subjects), "%s",
             conf->stream_subjects != NULL ? conf->stream_subjects : ">");
    l->flush = loop->timer(loop->impl, 0, on_flush, l);
    l->tick = loop->timer(loop->impl, TICK_MS, on_tick, l);
    int rc = 0;
    char *inbox = NULL;
    if (copy_conf(l, conf) != 0 || natsInbox_Create(&inbox) != NATS_OK) {
        rc = gust_err_set(err, GUST_ENOMEM, "ingest: out of memory");
        goto fail;
    }
    l->inbox_len = (size_t)snprintf(l->inbox, sizeof(l->inbox), "%s.", inbox);
    natsInbox_Destroy(inbox);
    inbox = NULL;
    if (natsInbox_Create(&inbox) != NATS_OK) {
        rc = gust_err_set(err, GUST_ENOMEM, "ingest: out of memory");
        goto fail;
    }
    l->calls_len = (size_t)snprintf(l->calls, sizeof(l->calls), "%s.", inbox);
    natsInbox_Destroy(inbox);
    struct gust_nats_url u;
    if (gust_nats_url_parse(l->urls[0], &u) == NULL) {
        snprintf(l->shown, sizeof(l->shown), "%s%s", u.text, l->nurls > 1 ? ",..." : "");
        gust_nats_url_free(&u);
    }
    gust_nats_backoff_init(&l->backoff, &l->conf, "ingest");
    l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->efd < 0) {
        rc = gust_err_set(err, GUST_EIO, "ingest: eventfd: %s", strerror(errno));
        goto fail;
    }
    l->wake = loop->watch(loop->impl, l->efd, l);
    loop->read_start(l->wake, on_wake);
    if (pthread_create(&l->connector, NULL, connector, l) != 0) {
        rc = gust_err_set(err, GUST_EIO, "ingest: cannot start the connector thread");
        l->connector = 0;
        goto fail;
    }
    loop->arm(l->tick);
    ask_connection(l);
    *out = l;
    return 0;
fail:
    gust_ingest_link_destroy(l);
    return rc;
}

void gust_ingest_link_destroy(struct gust_ingest_link *l)
{
    if (l == NULL) {
        return;
    }
    drop_socket(l);
    if (l->cur != NULL) {
        retire(l, l->cur);
        l->cur = NULL;
    }
    if (l->connector != 0) {
        pthread_mutex_lock(&l->lock);
        l->stopping = 1;
        pthread_cond_signal(&l->jobs_cond);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->connector, NULL);
    }
    /* The connector drained its jobs; a connection it made (or was to make) that the
     * loop never took is destroyed here. */
    if (l->making != NULL) {
        destroy(l->making);
        l->making = NULL;
    }
    if (l->wake != NULL) {
        l->loop.unwatch(l->wake); /* closes efd */
    } else if (l->efd >= 0) {
        close(l->efd);
    }
    l->loop.timer_free(l->flush);
    l->loop.timer_free(l->tick);
    gust_pending_expire(&l->pending, -1, GUST_EAGAIN, "shutting down");
    gust_pending_dispose(&l->pending);
    for (size_t i = 0; i < l->nurls; i++) {
        free(l->urls[i]);
    }
    for (size_t i = 0; i < 8; i++) {
        free(l->conf_strings[i]);
    }
    free((char *)l->conf.user);
    pthread_cond_destroy(&l->jobs_cond);
    pthread_cond_destroy(&l->detached_cond);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

void gust_ingest_link_on_replies(struct gust_ingest_link *l, gust_ingest_reply_fn fn, void *ud)
{
    l->on_reply = fn;
    l->reply_ud = ud;
}

size_t gust_ingest_link_reply_subject(const struct gust_ingest_link *l, uint64_t id, char *out, size_t size)
{
    int n = snprintf(out, size, "%s%" PRIu64, l->calls, id);
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

int gust_ingest_link_connected(const struct gust_ingest_link *l)
{
    return l->sock != NULL && natsConnection_Status(l->cur->nc) == NATS_CONN_STATUS_CONNECTED;
}

int gust_ingest_link_publish(struct gust_ingest_link *l, const struct gust_pub_msg *pm, gust_publish_done_fn fn,
                             void *ud)
{
    if (!filter_matches(l->stream_subjects, pm->subject)) {
        return GUST_EIO;
    }
    if (!gust_ingest_link_connected(l)) {
        return GUST_EAGAIN;
    }
    natsConnection *nc = l->cur->nc;
    if (pm->len > (size_t)natsConnection_GetMaxPayload(nc)) {
        return GUST_EINVAL;
    }
    int queued = natsConnection_Buffered(nc);
    if (queued > 0 && (size_t)queued > l->max_queued) {
        return GUST_EAGAIN;
    }
    uint64_t id = gust_pending_add(&l->pending, gust_clock_mono_ms() + l->timeout_ms, fn, ud, NULL);
    if (id == 0) {
        return GUST_EAGAIN;
    }
    gust_pending_set_tag(&l->pending, id, gust_pending_tag(pm->subject));
    char reply[128];
    memcpy(reply, l->inbox, l->inbox_len);
    snprintf(reply + l->inbox_len, sizeof(reply) - l->inbox_len, "%" PRIu64, id);
    natsStatus s =
        gust_nats_publish(nc, pm->subject, reply, pm->data, pm->len, pm->msg_id, pm->headers, pm->nheaders);
    if (s != NATS_OK) {
        /* Not sent (the connection went meanwhile): the caller hears it through fn. */
        gust_pending_complete(&l->pending, id, GUST_EIO, 0, natsStatus_GetText(s));
    }
    return 0;
}
