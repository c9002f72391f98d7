#include "bus.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "../common/log.h"
#include "bus_int.h"
#include "embedded.h"
#include "nats_msg.h"
#include "nats_opts.h"
#include "nats_url.h"
#include "puback.h"
#include "reply.h"
#include "retention.h"
#include "retire.h"
#include "streams.h"

/* A connection and the subscription its PubAcks come back on. */
struct link {
    natsConnection *nc;
    natsSubscription *replies;
    char inbox[96]; /* "<inbox>.": a publish's reply subject is this plus its id */
    size_t inbox_len;
};

struct gust_bus {
    struct gust_outlet outlet; /* first: the outlet's ops find the bus from it */
    struct gust_bus_conf conf; /* its strings and urls are the bus's own copies: the
                                  configuration it came from goes at the next reload */
    char **owned;              /* those copies */
    size_t nowned;
    struct gust_nats_child *child;
    char url[64];
    /* Two connections: `main` batches its writes (nats.c's flusher gathers them for up
     * to 1 ms), which is what units and sources want, and takes their PubAcks; `now`
     * writes each message at once, for the units' pull requests (one per batch), which
     * the next message waits for. (Ingest has a connection of its own on the event
     * loop: ingest_link.c.) */
    struct link main;
    struct link now;
    /* JetStream's API (streams, consumers, account info, the DLQ routes) on `now`: each
     * call is a request someone waits for, and on `main` it would first wait for the
     * flusher; at start, with a few calls per unit, that is most of the cold start. */
    jsCtx *js;
    struct gust_pending pending;

    /* housekeeping: expires publishes, (re)creates streams, checks JetStream */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stopping;
    int streams_ready;
    atomic_int js_ok;
    atomic_int_fast64_t js_answered; /* gust_clock_mono_ms() of JetStream's last answer to a check */
    atomic_int closing; /* our own close: not worth a warning */
    struct gust_retention *retention; /* bounded storage: purges, sizes, backlogs */
    int closed;         /* closed callbacks that ran: after both, none can touch us */
};

static const struct gust_outlet_ops outlet_ops;

static void on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    struct gust_bus *bus = closure;
    const char *subj = natsMsg_GetSubject(msg);
    const char *dot = strrchr(subj, '.');
    uint64_t id = dot != NULL ? strtoull(dot + 1, NULL, 10) : 0;
    struct gust_puback ack = {0};
    char why[256] = "";
    int status;
    if (natsMsg_IsNoResponders(msg)) {
        status = GUST_EIO;
        snprintf(why, sizeof(why), "no stream takes this subject");
    } else {
        status = gust_puback_parse(natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg), &ack, why, sizeof(why));
        if (ack.full && (ack.stream[0] == '\0' || strcmp(ack.stream, bus->conf.stream) == 0)) {
            gust_retention_note_full(); /* the event stream's bound: /healthz names store_full */
        } else if (ack.for_good) {
            status = GUST_PUBLISH_REFUSED;
        }
    }
    gust_pending_complete(&bus->pending, id, status, ack.seq, why);
    gust_nats_msg_free(msg); /* natsMsg_Destroy would wake nats.c's collector thread per PubAck */
}

static void on_disconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    struct gust_bus *bus = closure;
    atomic_store(&bus->js_ok, 0);
    if (!atomic_load(&bus->closing)) {
        gust_warn("bus: disconnected from %s", bus->url);
    }
    /* Whatever was in flight may or may not be stored: fail it now so callers answer
     * (or retry) at once instead of waiting for the timeout. */
    gust_pending_expire(&bus->pending, -1, GUST_EAGAIN, "bus disconnected");
}

/* url as the log shows it: without the credentials it may hold. */
static void url_for_log(const char *url, char *out, size_t size)
{
    struct gust_nats_url u;
    if (gust_nats_url_parse(url, &u) == NULL) {
        snprintf(out, size, "%s", u.text);
        gust_nats_url_free(&u);
    } else {
        snprintf(out, size, "?");
    }
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    struct gust_bus *bus = closure;
    char url[256] = "", shown[256];
    natsConnection_GetConnectedUrl(nc, url, sizeof(url));
    url_for_log(url, shown, sizeof(shown));
    gust_info("bus: connected to %s", shown);
    pthread_mutex_lock(&bus->lock);
    pthread_cond_signal(&bus->wake);
    pthread_mutex_unlock(&bus->lock);
}


static void on_closed(natsConnection *nc, void *closure)
{
    (void)nc;
    struct gust_bus *bus = closure;
    pthread_mutex_lock(&bus->lock);
    bus->closed++;
    pthread_cond_broadcast(&bus->wake);
    pthread_mutex_unlock(&bus->lock);
}

static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus s, void *closure)
{
    (void)sub;
    struct gust_bus *bus = closure;
    const char *text = NULL;
    natsConnection_GetLastError(nc, &text);
    char subject[256];
    if (s == NATS_NOT_PERMITTED && gust_refused_subject(text, subject, sizeof(subject)) == 0) {
        /* No PubAck will come: what waits for one on that subject is refused for good
         * now rather than timed out (an outcome unknown). */
        char why[320];
        snprintf(why, sizeof(why), "refused: not permitted to publish to %s", subject);
        gust_warn("bus: %s", why);
        gust_pending_fail_tag(&bus->pending, gust_pending_tag(subject), GUST_PUBLISH_REFUSED, why);
        return;
    }
    gust_warn("bus: %s", natsStatus_GetText(s));
}

static void *housekeeping(void *arg)
{
    struct gust_bus *bus = arg;
    int64_t next_check = 0;
    pthread_mutex_lock(&bus->lock);
    while (!bus->stopping) {
        pthread_mutex_unlock(&bus->lock);
        int64_t now = gust_clock_mono_ms();
        gust_pending_expire(&bus->pending, now, GUST_ETIMEOUT, "no PubAck in time");
        if (now >= next_check) {
            /* JetStream calls block; they are fine here, never on an event loop. */
            int connected = natsConnection_Status(bus->now.nc) == NATS_CONN_STATUS_CONNECTED;
            int ok = 0;
            if (connected && !bus->streams_ready) {
                struct gust_err err;
                if (gust_streams_ensure(bus->js, &bus->conf, &err) == 0) {
                    bus->streams_ready = 1;
                } else {
                    gust_error("bus: %s", err.msg);
                }
            }
            if (connected && bus->streams_ready) {
                /* A frozen server keeps the connection up for a while: it is its silence
                 * that tells, so the check waits less than the usual request. */
                jsOptions jo;
                jsOptions_Init(&jo);
                jo.Wait = GUST_BUS_CHECK_WAIT_MS;
                jsAccountInfo *ai = NULL;
                ok = js_GetAccountInfo(&ai, bus->js, &jo, NULL) == NATS_OK;
                jsAccountInfo_Destroy(ai);
                if (ok) {
                    atomic_store(&bus->js_answered, gust_clock_mono_ms());
                }
            }
            if (ok != atomic_exchange(&bus->js_ok, ok)) {
                gust_info("bus: jetstream %s", ok ? "available" : "unavailable");
            }
            next_check = gust_clock_mono_ms() + (ok ? 1000 : 250);
        }
        struct timespec until;
        gust_clock_deadline(50, &until);
        pthread_mutex_lock(&bus->lock);
        if (!bus->stopping) {
            int rc = pthread_cond_timedwait(&bus->wake, &bus->lock, &until);
            if (rc == 0) {
                next_check = 0; /* woken by a reconnect: check at once */
            }
        }
    }
    pthread_mutex_unlock(&bus->lock);
    return NULL;
}

/* with_replies: subscribe to the link's inbox, for confirmed publishes. */
static int connect_link(struct gust_bus *bus, struct link *l, const char *name, int send_asap, int with_replies,
                        struct gust_err *err)
{
    natsOptions *opts = NULL;
    natsStatus s = natsOptions_Create(&opts);
    const char *urls[64];
    size_t n = gust_bus_urls(bus, urls, 64);
    if (bus->child == NULL) {
        char shown[sizeof(bus->url) - 4];
        url_for_log(urls[0], shown, sizeof(shown));
        snprintf(bus->url, sizeof(bus->url), "%s%s", shown, n > 1 ? ",..." : "");
    }
    if (s == NATS_OK) s = natsOptions_SetServers(opts, urls, (int)n);
    if (s == NATS_OK) s = natsOptions_SetName(opts, name);
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK) s = natsOptions_SetRetryOnFailedConnect(opts, true, on_reconnected, bus);
    if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(opts, on_disconnected, bus);
    if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, on_reconnected, bus);
    if (s == NATS_OK) s = natsOptions_SetClosedCB(opts, on_closed, bus);
    if (s == NATS_OK) s = natsOptions_SetErrorHandler(opts, on_async_error, bus);
    if (s == NATS_OK) s = natsOptions_SetMaxPendingMsgs(opts, 1 << 20);
    if (s == NATS_OK) s = natsOptions_SetSendAsap(opts, send_asap != 0);
    int rc = s == NATS_OK ? gust_nats_opts_fill(opts, &bus->conf.link, name, err) : 0;
    if (rc != 0) {
        natsOptions_Destroy(opts);
        return rc;
    }
    if (s == NATS_OK) {
        s = natsConnection_Connect(&l->nc, opts);
        if (s == NATS_NOT_YET_CONNECTED) {
            gust_warn("bus: %s not reachable yet; retrying in the background", bus->url);
            s = NATS_OK;
        }
    }
    if (s == NATS_OK && with_replies) {
        char *inbox = NULL;
        s = natsInbox_Create(&inbox);
        if (s == NATS_OK) {
            l->inbox_len = (size_t)snprintf(l->inbox, sizeof(l->inbox), "%s.", inbox);
            char wildcard[128];
            snprintf(wildcard, sizeof(wildcard), "%s*", l->inbox);
            natsInbox_Destroy(inbox);
            s = natsConnection_Subscribe(&l->replies, l->nc, wildcard, on_reply, bus);
        }
    }
    if (s == NATS_OK && with_replies) s = natsSubscription_SetPendingLimits(l->replies, -1, -1);
    natsOptions_Destroy(opts);
    if (s != NATS_OK) {
        return gust_err_set(err, GUST_EIO, "nats %s: %s", bus->url, natsStatus_GetText(s));
    }
    return 0;
}

static int connect_bus(struct gust_bus *bus, struct gust_err *err)
{
    int rc = connect_link(bus, &bus->main, "gust", bus->conf.send_asap, 1, err);
    if (rc == 0) {
        rc = connect_link(bus, &bus->now, "gust-now", 1, 0, err);
    }
    if (rc == 0 && natsConnection_JetStream(&bus->js, bus->now.nc, NULL) != NATS_OK) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    return rc;
}

/* A copy of s that the bus frees; NULL stays NULL. */
static const char *own(struct gust_bus *bus, const char *s, int *oom)
{
    if (s == NULL) {
        return NULL;
    }
    char *copy = strdup(s);
    if (copy == NULL) {
        *oom = 1;
        return NULL;
    }
    bus->owned[bus->nowned++] = copy;
    return copy;
}

static int copy_conf(struct gust_bus *bus, const struct gust_bus_conf *conf)
{
    bus->conf = *conf;
    struct gust_nats_link_conf *link = &bus->conf.link;
    const char **link_strings[] = {&link->tls_ca,    &link->tls_cert,   &link->tls_key,
                                   &link->creds,     &link->nkey_seed,  &link->token_file,
                                   &link->user,      &link->password_file, &link->password_env};
    const size_t nlink = sizeof(link_strings) / sizeof(link_strings[0]);
    bus->owned = calloc(conf->nurls + 10 + nlink, sizeof(*bus->owned));
    const char **urls = calloc(conf->nurls + 1, sizeof(*urls));
    if (bus->owned == NULL || urls == NULL) {
        free(urls);
        return GUST_ENOMEM;
    }
    int oom = 0;
    for (size_t i = 0; i < conf->nurls; i++) {
        urls[i] = own(bus, conf->urls[i], &oom);
    }
    bus->conf.urls = urls;
    bus->conf.server_bin = own(bus, conf->server_bin, &oom);
    bus->conf.state_dir = own(bus, conf->state_dir, &oom);
    bus->conf.stream = own(bus, conf->stream, &oom);
    bus->conf.subjects = own(bus, conf->subjects, &oom);
    bus->conf.dlq_stream = own(bus, conf->dlq_stream, &oom);
    bus->conf.dlq_subjects = own(bus, conf->dlq_subjects, &oom);
    bus->conf.state_stream = own(bus, conf->state_stream, &oom);
    bus->conf.state_subjects = own(bus, conf->state_subjects, &oom);
    bus->conf.lease_bucket = own(bus, conf->lease_bucket, &oom);
    bus->conf.flow_state_bucket = own(bus, conf->flow_state_bucket, &oom);
    for (size_t i = 0; i < nlink; i++) {
        *link_strings[i] = own(bus, *link_strings[i], &oom);
    }
    return oom ? GUST_ENOMEM : 0;
}

/* Sets up the streams before serving, so the first ingest finds them. A NATS cluster
 * that has just formed answers "JetStream unavailable" until it has elected its leader,
 * and a server may not answer at all for a while: tried again with backoff, for ever
 * when the caller can cancel the start (conf->cancel), else for 30 s. Each try waits
 * GUST_BUS_CHECK_WAIT_MS at most for an answer, so that a cancel is seen at once. */
static int first_streams(struct gust_bus *bus, const struct gust_bus_conf *conf, struct gust_err *err)
{
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = GUST_BUS_CHECK_WAIT_MS;
    jsCtx *quick = NULL;
    if (natsConnection_JetStream(&quick, bus->now.nc, &jo) != NATS_OK) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    int64_t give_up = conf->cancel != NULL ? INT64_MAX : gust_clock_mono_ms() + 30000;
    int64_t delay = 250;
    int rc;
    for (int attempt = 1; (rc = gust_streams_ensure(quick, conf, err)) != 0; attempt++) {
        if (rc == GUST_ECONFIG || gust_clock_mono_ms() >= give_up || (conf->cancel != NULL && atomic_load(conf->cancel))) {
            break;
        }
        if (attempt <= 3 || attempt % 10 == 0) {
            gust_warn("bus: %s; trying again in %.2f s (attempt %d)", err->msg, delay / 1e3, attempt + 1);
        }
        for (int64_t waited = 0; waited < delay; waited += 50) {
            if (conf->cancel != NULL && atomic_load(conf->cancel)) {
                break;
            }
            usleep(50 * 1000);
        }
        /* Capped low: a cluster electing its leader answers within seconds. */
        delay = delay * 2 < 1000 ? delay * 2 : 1000;
    }
    if (rc != 0 && conf->cancel != NULL && atomic_load(conf->cancel)) {
        rc = gust_err_set(err, GUST_EAGAIN, "bus: start cancelled");
    }
    jsCtx_Destroy(quick);
    return rc;
}

int gust_bus_create(const struct gust_bus_conf *conf, struct gust_bus **out, struct gust_err *err)
{
    struct gust_bus *bus = calloc(1, sizeof(*bus));
    if (bus == NULL || copy_conf(bus, conf) != 0) {
        gust_bus_destroy(bus);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    bus->outlet.ops = &outlet_ops;
    pthread_mutex_init(&bus->lock, NULL);
    pthread_cond_init(&bus->wake, NULL);
    int rc = GUST_ENOMEM;
    if (gust_pending_init(&bus->pending, conf->max_pending) != 0) {
        gust_err_set(err, rc, "out of memory");
        goto fail;
    }
    if (conf->nurls == 0) {
        rc = gust_nats_child_start(conf->server_bin, conf->state_dir, bus->url, sizeof(bus->url),
                                   &bus->child, err);
        if (rc != 0) {
            goto fail;
        }
    }
    rc = connect_bus(bus, err);
    if (rc != 0) {
        goto fail;
    }
    if (natsConnection_Status(bus->now.nc) == NATS_CONN_STATUS_CONNECTED) {
        rc = first_streams(bus, conf, err);
        if (rc != 0) {
            goto fail;
        }
        bus->streams_ready = 1;
        atomic_store(&bus->js_ok, 1);
        atomic_store(&bus->js_answered, gust_clock_mono_ms());
    }
    if (pthread_create(&bus->thread, NULL, housekeeping, bus) != 0) {
        rc = gust_err_set(err, GUST_EIO, "cannot start the bus thread");
        goto fail;
    }
    if ((rc = gust_retention_start(bus, &bus->retention, err)) != 0) {
        goto fail;
    }
    *out = bus;
    return 0;
fail:
    gust_bus_destroy(bus);
    return rc;
}

void gust_bus_destroy(struct gust_bus *bus)
{
    if (bus == NULL) {
        return;
    }
    gust_retention_stop(bus->retention);
    bus->retention = NULL;
    if (bus->thread != 0) {
        pthread_mutex_lock(&bus->lock);
        bus->stopping = 1;
        pthread_cond_signal(&bus->wake);
        pthread_mutex_unlock(&bus->lock);
        pthread_join(bus->thread, NULL);
    }
    if (bus->pending.slots != NULL) {
        gust_pending_expire(&bus->pending, -1, GUST_EAGAIN, "shutting down");
    }
    atomic_store(&bus->closing, 1);
    jsCtx_Destroy(bus->js);
    int links = 0;
    for (struct link *l = &bus->main; l <= &bus->now; l++) {
        if (l->nc != NULL) {
            natsConnection_Close(l->nc);
            links++;
        }
    }
    /* Connection callbacks run on a library thread and hold `bus`: wait for the last of
     * them (closed comes after disconnected) before freeing it. */
    struct timespec until;
    gust_clock_deadline(2000, &until);
    pthread_mutex_lock(&bus->lock);
    while (bus->closed < links && pthread_cond_timedwait(&bus->wake, &bus->lock, &until) == 0) {
    }
    pthread_mutex_unlock(&bus->lock);
    /* The connections' reader threads are joined: nothing can touch a subscription now. */
    natsSubscription_Destroy(bus->main.replies);
    natsSubscription_Destroy(bus->now.replies);
    gust_retire_closed(bus->main.nc);
    gust_retire_closed(bus->now.nc);
    natsConnection_Destroy(bus->main.nc);
    natsConnection_Destroy(bus->now.nc);
    gust_nats_child_stop(bus->child);
    if (bus->pending.slots != NULL) {
        gust_pending_dispose(&bus->pending);
    }
    pthread_cond_destroy(&bus->wake);
    pthread_mutex_destroy(&bus->lock);
    for (size_t i = 0; i < bus->nowned; i++) {
        free(bus->owned[i]);
    }
    free(bus->owned);
    free((void *)bus->conf.urls);
    free(bus);
}

int gust_bus_publish_msg(struct gust_bus *bus, const struct gust_pub *p, gust_publish_done_fn fn, void *ud,
                         atomic_int *inflight)
{
    struct link *l = &bus->main;
    if (natsConnection_Status(l->nc) != NATS_CONN_STATUS_CONNECTED) {
        return GUST_EAGAIN;
    }
    uint64_t id = gust_pending_add(&bus->pending, gust_clock_mono_ms() + bus->conf.publish_timeout_ms, fn, ud, inflight);
    if (id == 0) {
        return GUST_EAGAIN;
    }
    char reply[128];
    memcpy(reply, l->inbox, l->inbox_len);
    snprintf(reply + l->inbox_len, sizeof(reply) - l->inbox_len, "%" PRIu64, id);
    gust_pending_set_tag(&bus->pending, id, gust_pending_tag(p->subject));
    natsStatus s =
        gust_nats_publish(l->nc, p->subject, reply, p->data, p->len, p->msg_id, p->headers, p->nheaders);
    if (s == NATS_MAX_PAYLOAD) {
        char why[160];
        snprintf(why, sizeof(why), "refused: %zu bytes is over the server's max_payload of %" PRId64 " (headers included)",
                 p->len, natsConnection_GetMaxPayload(l->nc));
        gust_pending_complete(&bus->pending, id, GUST_PUBLISH_REFUSED, 0, why);
    } else if (s == NATS_NOT_PERMITTED) {
        gust_pending_complete(&bus->pending, id, GUST_PUBLISH_REFUSED, 0, "refused: not permitted");
    } else if (s != NATS_OK) {
        /* Not sent: complete it here so the slot is freed; report as the caller's error. */
        gust_pending_complete(&bus->pending, id, GUST_EAGAIN, 0, natsStatus_GetText(s));
    }
    return 0;
}

int gust_bus_publish(struct gust_bus *bus, const char *subject, const void *data, size_t len,
                     gust_publish_done_fn fn, void *ud, atomic_int *inflight)
{
    struct gust_pub p = {.subject = subject, .data = data, .len = len};
    return gust_bus_publish_msg(bus, &p, fn, ud, inflight);
}

/* gust_bus_publish_wait's rendezvous with the PubAck. */
struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int finished, status;
    uint64_t seq;
    char why[256];
};

static void wake_waiter(void *ud, int status, uint64_t seq, const char *error)
{
    struct waiter *w = ud;
    pthread_mutex_lock(&w->lock);
    w->finished = 1;
    w->status = status;
    w->seq = seq;
    snprintf(w->why, sizeof(w->why), "%s", error != NULL ? error : "");
    pthread_cond_signal(&w->done);
    pthread_mutex_unlock(&w->lock);
}

int gust_bus_publish_wait(struct gust_bus *bus, const struct gust_pub *p, uint64_t *seq, char *why,
                          size_t why_size)
{
    struct waiter w = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};
    int rc = gust_bus_publish_msg(bus, p, wake_waiter, &w, NULL);
    if (rc != 0) {
        snprintf(why, why_size, "bus not connected or too many publishes pending");
        return rc;
    }
    natsConnection_Flush(bus->main.nc);
    pthread_mutex_lock(&w.lock);
    while (!w.finished) { /* the pending ring times it out: this ends */
        pthread_cond_wait(&w.done, &w.lock);
    }
    pthread_mutex_unlock(&w.lock);
    if (seq != NULL) {
        *seq = w.seq;
    }
    if (w.status != 0) {
        snprintf(why, why_size, "%s", w.why);
    }
    return w.status;
}

static int outlet_publish(struct gust_outlet *o, const struct gust_pub *p, gust_publish_done_fn done, void *ud)
{
    return gust_bus_publish_msg((struct gust_bus *)o, p, done, ud, NULL);
}

/* Sends the buffered publishes now rather than when the library's flusher next runs
 * (up to 1 ms later): at low rates that wait would be most of the latency. The
 * flush's PING round trip overlaps the PubAcks the caller waits for anyway. */
static void outlet_flush(struct gust_outlet *o)
{
    natsConnection_FlushTimeout(((struct gust_bus *)o)->main.nc, 1000);
}

static int outlet_connected(struct gust_outlet *o)
{
    return gust_bus_connected((struct gust_bus *)o);
}

static int outlet_reply(struct gust_outlet *o, const char *inbox, int status, const void *data, size_t len, char *why,
                        size_t why_size)
{
    return gust_bus_reply((struct gust_bus *)o, inbox, status, data, len, why, why_size);
}

static const struct gust_outlet_ops outlet_ops = {outlet_publish, outlet_flush, outlet_connected, outlet_reply};

struct gust_outlet *gust_bus_outlet(struct gust_bus *bus)
{
    return &bus->outlet;
}

size_t gust_bus_urls(const struct gust_bus *bus, const char **urls, size_t max)
{
    if (bus->child != NULL) {
        urls[0] = bus->url;
        return 1;
    }
    size_t n = bus->conf.nurls < max ? bus->conf.nurls : max;
    memcpy(urls, bus->conf.urls, n * sizeof(*urls));
    return n;
}

const struct gust_bus_conf *gust_bus_config(const struct gust_bus *bus)
{
    return &bus->conf;
}

int gust_bus_healthy(struct gust_bus *bus)
{
    return gust_bus_connected(bus) && atomic_load(&bus->js_ok);
}

int gust_bus_answering(struct gust_bus *bus, char *why, size_t size)
{
    if (!gust_bus_connected(bus)) {
        snprintf(why, size, "bus disconnected from %s", bus->url);
        return 0;
    }
    int64_t answered = atomic_load(&bus->js_answered);
    int64_t silent = gust_clock_mono_ms() - answered;
    if (answered == 0) {
        snprintf(why, size, "jetstream has not answered yet (streams not set up)");
        return 0;
    }
    /* Not one slow answer (a loaded machine) but a silence: no flapping. */
    if (silent > GUST_BUS_SILENT_MS) {
        snprintf(why, size, "jetstream has not answered a check for %.1f s", silent / 1e3);
        return 0;
    }
    return 1;
}

int gust_bus_connected(struct gust_bus *bus)
{
    return natsConnection_Status(bus->main.nc) == NATS_CONN_STATUS_CONNECTED;
}


void gust_bus_drain(struct gust_bus *bus, int64_t timeout_ms)
{
    int64_t until = gust_clock_mono_ms() + timeout_ms;
    natsConnection_FlushTimeout(bus->main.nc, timeout_ms);
    while (gust_pending_live(&bus->pending) > 0 && gust_clock_mono_ms() < until) {
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

natsConnection *gust_bus__conn(struct gust_bus *bus)
{
    return bus->main.nc;
}

struct gust_retention *gust_bus__retention(struct gust_bus *bus)
{
    return bus->retention;
}

jsCtx *gust_bus__js(struct gust_bus *bus)
{
    return bus->js;
}

natsConnection *gust_bus__conn_now(struct gust_bus *bus)
{
    return bus->now.nc;
}

const char *gust_bus__reason(natsStatus s)
{
    const char *last = nats_GetLastError(NULL);
    return last != NULL && last[0] != '\0' ? last : natsStatus_GetText(s);
}

void gust_bus_library_close(void)
{
    nats_Close();
}
