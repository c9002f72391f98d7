/* The consumer core against a fake bus (no servers): a feed of messages in memory that
 * redelivers what is nak'd, an outlet that stores what is published (or fails it, or
 * holds the PubAcks until flushed), and a handler scripted per message. What it checks:
 *  - the barrier: no input is settled before every publish of its batch completed;
 *  - message ids: <unit>:<seq>:<index> per emit, <unit>:<seq>:dlq per dead letter, the
 *    same on a redelivery;
 *  - retries: a rejected message is nak'd with a growing delay and dead-lettered after
 *    max_deliver rejections; a far end that is unavailable (WAIT) or a publish that
 *    fails does not count as a rejection;
 *  - a failed PubAck: the input is nak'd, redelivered, and its emits published again;
 *  - ordered units: a failed publish is sent again until stored; the handler hears of
 *    a batch only once it is stored;
 *  - a stop between batches: the batch in hand finishes, nothing after it is taken;
 *  - replies to calls: sent for a message that succeeded, after its batch's PubAcks and
 *    before its ack, to its own reply_to; none for one that failed;
 *  - a feed that cannot be opened yet: the unit is `starting`, counts its retries and
 *    keeps the last error with its time, then runs once the feed opens. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"

#include "../../host/unit/consumer.h"

/* ---- the fake feed ---------------------------------------------------------------- */

#define MAXMSG 64

struct fmsg {
    char subject[32];
    char data[64];
    char reply_to[32]; /* "" when not a call */
    uint64_t seq;
    uint32_t attempt;
    int pending; /* to be delivered (again) */
    int settled; /* acked */
    int64_t last_delay;
    uint32_t naks;
};

struct log_entry {
    char what[96];
};

/* One log of what happened, in order, across feed, outlet and handler. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct log_entry logv[4096];
static size_t nlog;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    pthread_mutex_lock(&log_lock);
    if (nlog < sizeof(logv) / sizeof(logv[0])) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(logv[nlog++].what, sizeof(logv[0].what), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&log_lock);
}

struct ffeed {
    struct gust_feed feed;
    struct fmsg m[MAXMSG];
    size_t n;
    pthread_mutex_t lock;
    size_t batches;
    int (*on_next)(struct ffeed *f); /* test hook, before a batch is handed out */
    int says_pending;                /* each delivery says how many are left after it */
    size_t sizes[MAXMSG];            /* the messages handed out by each batch */
};

static int ffeed_next(struct gust_feed *gf, struct gust_in *in, size_t max, int with, char *why,
                      size_t why_size)
{
    (void)why, (void)why_size;
    struct ffeed *f = (struct ffeed *)gf;
    if (f->on_next != NULL) {
        f->on_next(f);
    }
    pthread_mutex_lock(&f->lock);
    size_t k = 0, left = 0;
    for (size_t i = 0; i < f->n; i++) {
        left += f->m[i].pending;
    }
    for (size_t i = 0; i < f->n && k < max; i++) {
        struct fmsg *m = &f->m[i];
        if (!m->pending) {
            continue;
        }
        m->pending = 0;
        m->attempt++;
        in[k].msg = (struct gust_msg){.subject = m->subject, .data = m->data, .len = strlen(m->data),
                                      .stream_seq = m->seq, .attempt = m->attempt};
        in[k].tick = NULL;
        in[k].traceparent = in[k].tracestate = NULL;
        in[k].pending = f->says_pending ? left - (k + 1) : 0;
        in[k].reply_to = (with & GUST_FEED_REPLY_TO) && m->reply_to[0] != '\0' ? m->reply_to : NULL;
        in[k++].ref = m;
    }
    if (k > 0) {
        f->sizes[f->batches++ % MAXMSG] = k;
    }
    pthread_mutex_unlock(&f->lock);
    if (k == 0) {
        struct timespec ts = {0, 2 * 1000000};
        nanosleep(&ts, NULL);
    }
    return (int)k;
}

static void ffeed_settle(struct gust_feed *gf, struct gust_in *in, int64_t delay_ms)
{
    struct ffeed *f = (struct ffeed *)gf;
    struct fmsg *m = in->ref;
    pthread_mutex_lock(&f->lock);
    if (delay_ms < 0) {
        m->settled = 1;
        logf_("ack %llu", (unsigned long long)m->seq);
    } else {
        m->pending = 1; /* redelivered next time, whatever the delay */
        m->last_delay = delay_ms;
        m->naks++;
        logf_("nak %llu %lld", (unsigned long long)m->seq, (long long)delay_ms);
    }
    pthread_mutex_unlock(&f->lock);
}

static void ffeed_release(struct gust_feed *gf, struct gust_in *in, size_t n)
{
    (void)gf, (void)in, (void)n;
}

static void ffeed_close(struct gust_feed *gf)
{
    (void)gf;
}

static const struct gust_feed_ops ffeed_ops = {
    .next = ffeed_next, .settle = ffeed_settle, .release = ffeed_release, .close = ffeed_close};

static void ffeed_init(struct ffeed *f, size_t n)
{
    memset(f, 0, sizeof(*f));
    f->feed.ops = &ffeed_ops;
    pthread_mutex_init(&f->lock, NULL);
    f->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(f->m[i].subject, sizeof(f->m[i].subject), "ev.in");
        snprintf(f->m[i].data, sizeof(f->m[i].data), "{\"i\":%zu}", i);
        f->m[i].seq = 100 + i;
        f->m[i].pending = 1;
    }
}

static int all_settled(struct ffeed *f)
{
    pthread_mutex_lock(&f->lock);
    int yes = 1;
    for (size_t i = 0; i < f->n; i++) {
        yes &= f->m[i].settled;
    }
    pthread_mutex_unlock(&f->lock);
    return yes;
}

/* ---- the fake outlet -------------------------------------------------------------- */

struct pending_ack {
    gust_publish_done_fn done;
    void *ud;
    int status;
};

struct foutlet {
    struct gust_outlet outlet;
    pthread_mutex_t lock;
    int hold;            /* keep PubAcks until flush */
    struct pending_ack held[256];
    size_t nheld;
    int fail_next;       /* how many of the next publishes fail (their PubAck) */
    char stored[512][GUST_MSG_ID_MAX + 40]; /* "<subject> <msg id>" of what was stored */
    size_t nstored;
};

static int fout_publish(struct gust_outlet *o, const struct gust_pub *p, gust_publish_done_fn done, void *ud)
{
    struct foutlet *f = (struct foutlet *)o;
    pthread_mutex_lock(&f->lock);
    int status = 0;
    if (f->fail_next > 0) {
        f->fail_next--;
        status = GUST_EIO;
    } else if (f->nstored < 512) {
        snprintf(f->stored[f->nstored++], sizeof(f->stored[0]), "%s %s", p->subject, p->msg_id ? p->msg_id : "-");
    }
    logf_("pub %s %s", p->msg_id ? p->msg_id : "-", status ? "fails" : "ok");
    if (f->hold) {
        f->held[f->nheld++] = (struct pending_ack){done, ud, status};
        pthread_mutex_unlock(&f->lock);
        return 0;
    }
    pthread_mutex_unlock(&f->lock);
    logf_("done");
    done(ud, status, 1, status ? "refused" : NULL);
    return 0;
}

static void fout_flush(struct gust_outlet *o)
{
    struct foutlet *f = (struct foutlet *)o;
    pthread_mutex_lock(&f->lock);
    size_t n = f->nheld;
    struct pending_ack held[256];
    memcpy(held, f->held, n * sizeof(*held));
    f->nheld = 0;
    pthread_mutex_unlock(&f->lock);
    for (size_t i = 0; i < n; i++) {
        logf_("done");
        held[i].done(held[i].ud, held[i].status, 1, held[i].status ? "refused" : NULL);
    }
}

static int fout_connected(struct gust_outlet *o)
{
    (void)o;
    return 1;
}

static int fout_reply(struct gust_outlet *o, const char *inbox, int status, const void *data, size_t len,
                      char *why, size_t why_size)
{
    (void)o, (void)why, (void)why_size;
    logf_("reply %s %d %.*s", inbox, status, (int)len, (const char *)data);
    return 0;
}

static const struct gust_outlet_ops fout_ops = {fout_publish, fout_flush, fout_connected, fout_reply};

static void fout_init(struct foutlet *f)
{
    memset(f, 0, sizeof(*f));
    f->outlet.ops = &fout_ops;
    pthread_mutex_init(&f->lock, NULL);
}

static int stored_has(struct foutlet *f, const char *entry)
{
    pthread_mutex_lock(&f->lock);
    int n = 0;
    for (size_t i = 0; i < f->nstored; i++) {
        n += strcmp(f->stored[i], entry) == 0;
    }
    pthread_mutex_unlock(&f->lock);
    return n;
}

/* ---- the scripted handler --------------------------------------------------------- */

struct script {
    int emits;                /* per message */
    uint64_t reject_seq;      /* this one fails (RETRY) every time */
    uint64_t wait_seq;        /* this one gets WAIT its first wait_times attempts */
    uint32_t wait_times;
    int replies;              /* answers every call with its data, status 201 */
    size_t stored_batches;    /* handler.stored calls */
    struct ffeed *feed;
};

static void script_run(void *impl, struct gust_batch *b)
{
    struct script *s = impl;
    for (size_t i = 0; i < b->n; i++) {
        const struct gust_msg *m = &b->msgs[i];
        if (m->stream_seq == s->reject_seq) {
            b->outcome[i] = GUST_OUTCOME_RETRY;
            snprintf(b->error[i], GUST_ERROR_MAX, "rejected");
        } else if (m->stream_seq == s->wait_seq && m->attempt <= s->wait_times) {
            b->outcome[i] = GUST_OUTCOME_WAIT;
            snprintf(b->error[i], GUST_ERROR_MAX, "far end down");
        } else {
            for (int e = 0; e < s->emits; e++) {
                gust_emits_push(&b->emits, "ev.out", m->data, m->len);
            }
        }
        if (s->replies && b->reply_to != NULL && b->reply_to[i] != NULL) {
            gust_replies_push(&b->replies, i, 201, m->data, m->len);
        }
        b->emit_end[i] = b->emits.n;
    }
}

static void script_stored(void *impl, const struct gust_batch *b)
{
    (void)b;
    ((struct script *)impl)->stored_batches++;
}

static struct gust_consumer *start(struct ffeed *feed, struct foutlet *out, struct script *s, int settle, int batch)
{
    struct gust_consumer_conf cc = {.unit = "u", .kind = "flow", .source = "ev.in", .dlq_prefix = "dlq.",
                                    .batch = batch, .max_deliver = 3, .retry_delay_ms = 100,
                                    .retry_max_delay_ms = 1000, .settle = settle};
    struct gust_handler h = {.kind = "flow", .impl = s, .run_batch = script_run, .stored = script_stored,
                             .answers_calls = s->replies};
    struct gust_consumer *c = NULL;
    struct gust_err err;
    if (gust_consumer_create(&cc, &feed->feed, &out->outlet, h, &c, &err) != 0 ||
        gust_consumer_start(c, &err) != 0) {
        fprintf(stderr, "cannot start: %s\n", err.msg);
        exit(2);
    }
    return c;
}

static void wait_until(int (*cond)(struct ffeed *), struct ffeed *f)
{
    for (int i = 0; i < 5000 && !cond(f); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void test_barrier_and_ids(void)
{
    nlog = 0;
    struct ffeed feed;
    struct foutlet out;
    struct script s = {.emits = 2};
    ffeed_init(&feed, 5);
    fout_init(&out);
    out.hold = 1; /* PubAcks only come with the flush after the publishes */
    struct gust_consumer *c = start(&feed, &out, &s, GUST_SETTLE_ACK, 8);
    wait_until(all_settled, &feed);
    gust_consumer_destroy(c);
    CHECK(all_settled(&feed));
    /* Every ack after every PubAck of its batch (one batch here). */
    size_t last_done = 0, first_ack = nlog;
    for (size_t i = 0; i < nlog; i++) {
        if (strcmp(logv[i].what, "done") == 0) {
            last_done = i;
        } else if (strncmp(logv[i].what, "ack", 3) == 0 && i < first_ack) {
            first_ack = i;
        }
    }
    CHECK(last_done < first_ack);
    CHECK(stored_has(&out, "ev.out u:100:0") == 1);
    CHECK(stored_has(&out, "ev.out u:100:1") == 1);
    CHECK(stored_has(&out, "ev.out u:104:1") == 1);
    CHECK(out.nstored == 10);
}

static size_t log_find(const char *what)
{
    for (size_t i = 0; i < nlog; i++) {
        if (strcmp(logv[i].what, what) == 0) {
            return i;
        }
    }
    return (size_t)-1;
}

static void test_replies(void)
{
    nlog = 0;
    struct ffeed feed;
    struct foutlet out;
    /* 100 and 101 are calls, 101 is rejected every time, 102 is not a call. */
    struct script s = {.emits = 1, .reject_seq = 101, .replies = 1};
    ffeed_init(&feed, 3);
    snprintf(feed.m[0].reply_to, sizeof(feed.m[0].reply_to), "_INBOX.x.1");
    snprintf(feed.m[1].reply_to, sizeof(feed.m[1].reply_to), "_INBOX.x.2");
    fout_init(&out);
    out.hold = 1;
    struct gust_consumer *c = start(&feed, &out, &s, GUST_SETTLE_ACK, 8);
    wait_until(all_settled, &feed);
    gust_consumer_destroy(c);
    CHECK(all_settled(&feed));
    size_t reply = log_find("reply _INBOX.x.1 201 {\"i\":0}");
    CHECK(reply != (size_t)-1);
    CHECK(reply > log_find("done"));
    CHECK(reply < log_find("ack 100"));
    size_t replies = 0;
    for (size_t i = 0; i < nlog; i++) {
        replies += strncmp(logv[i].what, "reply ", 6) == 0;
    }
    CHECK(replies == 1); /* none for the rejected call (nor its dead letter), none for 102 */
}

static void test_rejections_and_waits(void)
{
    nlog = 0;
    struct ffeed feed;
    struct foutlet out;
    /* seq 101 always rejected: dead after max_deliver (3) rejections; seq 102 waits 5
     * times, then goes through: never dead-lettered for its waits. */
    struct script s = {.emits = 1, .reject_seq = 101, .wait_seq = 102, .wait_times = 5};
    ffeed_init(&feed, 3);
    fout_init(&out);
    struct gust_consumer *c = start(&feed, &out, &s, GUST_SETTLE_ACK, 8);
    wait_until(all_settled, &feed);
    gust_consumer_destroy(c);
    CHECK(all_settled(&feed));
    CHECK(feed.m[1].attempt == 3);               /* two naks, then dead on the third */
    CHECK(feed.m[1].naks == 2);
    CHECK(feed.m[1].last_delay == 200);          /* 100, doubled */
    CHECK(stored_has(&out, "dlq.u u:101:dlq") == 1);
    CHECK(feed.m[2].attempt == 6);               /* 5 waits, then done */
    CHECK(stored_has(&out, "dlq.u u:102:dlq") == 0);
    CHECK(stored_has(&out, "ev.out u:102:0") == 1);
}

static void test_failed_puback(void)
{
    nlog = 0;
    struct ffeed feed;
    struct foutlet out;
    struct script s = {.emits = 1};
    ffeed_init(&feed, 3);
    fout_init(&out);
    out.fail_next = 1; /* the first publish (seq 100's emit) is refused */
    struct gust_consumer *c = start(&feed, &out, &s, GUST_SETTLE_ACK, 8);
    wait_until(all_settled, &feed);
    gust_consumer_destroy(c);
    CHECK(all_settled(&feed));
    CHECK(feed.m[0].naks == 1 && feed.m[0].attempt == 2); /* redelivered once */
    CHECK(feed.m[1].naks == 0 && feed.m[1].attempt == 1);
    CHECK(stored_has(&out, "ev.out u:100:0") == 1);         /* stored on the second try */
}

static void test_ordered_republish(void)
{
    nlog = 0;
    struct ffeed feed;
    struct foutlet out;
    struct script s = {.emits = 1};
    ffeed_init(&feed, 3);
    fout_init(&out);
    out.fail_next = 2; /* the first two publishes are refused: sent again, same ids */
    struct gust_consumer *c = start(&feed, &out, &s, GUST_SETTLE_ORDERED, 8);
    for (int i = 0; i < 5000 && s.stored_batches == 0; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    gust_consumer_destroy(c);
    CHECK(s.stored_batches == 1);
    CHECK(feed.m[0].attempt == 1 && feed.m[0].naks == 0); /* never redelivered */
    CHECK(stored_has(&out, "ev.out u:100:0") == 1);
    CHECK(stored_has(&out, "ev.out u:101:0") == 1);
    CHECK(stored_has(&out, "ev.out u:102:0") == 1);
}

/* A stop asked for while the first batch is handed out: that batch finishes, acked
 * with its emits stored, and nothing more is taken. */
static struct gust_consumer *stopping_unit;
static int stop_on_first(struct ffeed *f)
{
    if (f->batches == 0) {
        gust_consumer_request_stop(stopping_unit);
    }
    return 0;
}

static void test_stop_between_batches(void)
{
    nlog = 0;
    struct ffeed feed;
    struct foutlet out;
    struct script s = {.emits = 1};
    ffeed_init(&feed, 6);
    fout_init(&out);
    feed.on_next = stop_on_first;
    struct gust_consumer_conf cc = {.unit = "u", .kind = "flow", .source = "ev.in", .dlq_prefix = "dlq.",
                                    .batch = 2, .max_deliver = 3, .retry_delay_ms = 100,
                                    .retry_max_delay_ms = 1000, .settle = GUST_SETTLE_ACK};
    struct gust_handler h = {.kind = "flow", .impl = &s, .run_batch = script_run, .stored = script_stored};
    struct gust_err err;
    if (gust_consumer_create(&cc, &feed.feed, &out.outlet, h, &stopping_unit, &err) != 0 ||
        gust_consumer_start(stopping_unit, &err) != 0) {
        exit(2);
    }
    /* The thread stops by itself after the batch (the hook asked it to). */
    for (int i = 0; i < 5000 && strcmp(gust_consumer_state(stopping_unit), "stopped") != 0; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK(strcmp(gust_consumer_state(stopping_unit), "stopped") == 0);
    gust_consumer_stop(stopping_unit);
    CHECK(feed.batches == 1);
    CHECK(feed.m[0].settled && feed.m[1].settled);
    CHECK(!feed.m[2].settled && feed.m[2].attempt == 0);
    CHECK(stored_has(&out, "ev.out u:100:0") == 1 && stored_has(&out, "ev.out u:101:0") == 1);
    gust_consumer_destroy(stopping_unit);
}

/* Opens the fake feed on the fourth try. */
struct opener {
    struct ffeed *feed;
    int tries;
};

static int open_on_fourth(void *ud, struct gust_feed **out, struct gust_err *err)
{
    struct opener *o = ud;
    if (++o->tries < 4) {
        return gust_err_set(err, GUST_ETIMEOUT, "cannot create consumer: Timeout (try %d)", o->tries);
    }
    *out = &o->feed->feed;
    return 0;
}

static void test_feed_opened_later(void)
{
    nlog = 0;
    struct ffeed feed;
    struct foutlet out;
    struct script s = {.emits = 1};
    ffeed_init(&feed, 3);
    fout_init(&out);
    struct opener o = {.feed = &feed};
    struct gust_consumer_conf cc = {.unit = "u", .kind = "flow", .source = "ev.in", .dlq_prefix = "dlq.",
                                    .batch = 4, .max_deliver = 3, .retry_delay_ms = 100,
                                    .retry_max_delay_ms = 1000, .settle = GUST_SETTLE_ACK,
                                    .opener = {.open = open_on_fourth, .ud = &o}};
    struct gust_handler h = {.kind = "flow", .impl = &s, .run_batch = script_run, .stored = script_stored};
    struct gust_consumer *c = NULL;
    struct gust_err err;
    CHECK(gust_consumer_create(&cc, NULL, &out.outlet, h, &c, &err) == 0 && gust_consumer_start(c, &err) == 0);
    for (int i = 0; i < 2000 && gust_consumer_retries(c) < 1; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    char why[256];
    int64_t at = 0;
    int64_t since;
    CHECK(strcmp(gust_consumer_state(c), "starting") == 0);
    CHECK(!gust_consumer_running(c, &since));
    gust_consumer_last_error_at(c, why, sizeof(why), &at);
    CHECK(strstr(why, "cannot create consumer") != NULL && at > 0);
    wait_until(all_settled, &feed);
    CHECK(all_settled(&feed));
    CHECK(strcmp(gust_consumer_state(c), "running") == 0 && gust_consumer_running(c, &since));
    CHECK(gust_consumer_retries(c) == 3 && o.tries == 4);
    gust_consumer_last_error_at(c, why, sizeof(why), &at);
    CHECK(strstr(why, "(try 3)") != NULL && at > 0); /* kept, with its time */
    CHECK(gust_consumer_stuck_ms(c) == 0);
    gust_consumer_destroy(c);
}

/* A handler that stays in its batch until released: past its timeout per message plus
 * GUST_STUCK_MARGIN_MS the unit counts as stuck (/healthz unit_stuck), and no longer
 * once the batch is done. The flow layer keeps a script from doing this (its timeout
 * reaches every call); this is the net under what it might miss, a plugin's deliver
 * included. */
static atomic_int release_handler;
static void hold_run(void *impl, struct gust_batch *b)
{
    (void)impl;
    while (!atomic_load(&release_handler)) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < b->n; i++) {
        b->outcome[i] = GUST_OUTCOME_OK;
        b->emit_end[i] = b->emits.n;
    }
}

static void test_stuck_handler(void)
{
    nlog = 0;
    struct ffeed feed;
    struct foutlet out;
    ffeed_init(&feed, 1);
    fout_init(&out);
    struct gust_consumer_conf cc = {.unit = "u", .kind = "flow", .source = "ev.in", .dlq_prefix = "dlq.",
                                    .batch = 1, .max_deliver = 3, .retry_delay_ms = 100,
                                    .retry_max_delay_ms = 1000, .settle = GUST_SETTLE_ACK,
                                    .handler_timeout_ms = 100};
    struct gust_handler h = {.kind = "flow", .impl = NULL, .run_batch = hold_run};
    struct gust_consumer *c = NULL;
    struct gust_err err;
    atomic_store(&release_handler, 0);
    CHECK(gust_consumer_create(&cc, &feed.feed, &out.outlet, h, &c, &err) == 0 && gust_consumer_start(c, &err) == 0);
    for (int i = 0; i < 1000 && gust_consumer_stuck_ms(c) == 0; i++) { /* up to 10 s */
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    CHECK(gust_consumer_stuck_ms(c) > 0);
    atomic_store(&release_handler, 1);
    wait_until(all_settled, &feed);
    CHECK(all_settled(&feed));
    CHECK(gust_consumer_stuck_ms(c) == 0);
    gust_consumer_destroy(c);
}

/* An ordered unit more than a batch behind reads four batches at once, and its batch
 * again once it is within one; a durable unit (acks) always reads its batch. */
static size_t batches_read(int settle, int says_pending, size_t *sizes)
{
    struct ffeed feed;
    struct foutlet out;
    struct script s = {.emits = 1};
    ffeed_init(&feed, 40);
    feed.says_pending = says_pending;
    fout_init(&out);
    struct gust_consumer *c = start(&feed, &out, &s, settle, 4);
    wait_until(all_settled, &feed);
    gust_consumer_destroy(c);
    CHECK(all_settled(&feed));
    CHECK(out.nstored == 40);
    memcpy(sizes, feed.sizes, sizeof(feed.sizes));
    return feed.batches;
}

static void test_catch_up_batches(void)
{
    size_t sizes[MAXMSG];
    CHECK(batches_read(GUST_SETTLE_ORDERED, 1, sizes) == 4);
    CHECK(sizes[0] == 4 && sizes[1] == 16 && sizes[2] == 16 && sizes[3] == 4);
    CHECK(batches_read(GUST_SETTLE_ORDERED, 0, sizes) == 10); /* a feed that cannot say */
    CHECK(batches_read(GUST_SETTLE_ACK, 1, sizes) == 10);
}

int main(void)
{
    test_barrier_and_ids();
    test_replies();
    test_rejections_and_waits();
    test_failed_puback();
    test_ordered_republish();
    test_stop_between_batches();
    test_feed_opened_later();
    test_stuck_handler();
    test_catch_up_batches();
    return check_result("consumer core");
}
