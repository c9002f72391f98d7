#include "retention.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "bus_int.h"

#define PASS_MS 250
#define FULL_HOLD_MS 2000 /* a refusal says "full" for this long */
#define SAMPLES 1024      /* (time, last sequence) pairs: where `keep` ago was */
#define CALL_WAIT_MS 1000 /* each JetStream call: a frozen server holds a stop no longer */

enum { EVENTS, DLQ, STATE, LEASES, FLOW_STATE, NSTREAMS };
#define OTHERS_EVERY 4 /* passes: the other streams' sizes are for /metrics only */
/* A consumer done with all the stream held (nothing pending nor unacked, and no message
 * on its filter past what it was handed) stays so until the stream grows, so a pass
 * that finds the stream's last sequence where it was reuses what it read of it. Reading
 * every consumer each pass cost two JetStream calls a unit four times a second: with
 * 50 idle flows, 400 calls a second that kept gust and nats-server busy. Read again
 * after this long anyway, and whenever a consumer was made, changed or deleted since
 * (a reload may make one again under the same name). */
#define REREAD_MS 10000

struct stream_stat {
    char name[80];
    atomic_uint_fast64_t bytes, msgs;
    atomic_int_fast64_t max_bytes; /* -1: none */
    atomic_int known;
};

struct backlog {
    char name[160];
    int64_t pending;
    /* What the pass that read it found: */
    uint64_t needs;    /* the lowest sequence it still needs */
    uint64_t last_seq; /* the stream's last sequence then */
    uint64_t changes;  /* consumer_changes then */
    int64_t read_ms;
    int done; /* done with everything up to last_seq: reusable while the stream stays */
};

struct gust_retention {
    struct gust_bus *bus;
    pthread_t thread;
    pthread_mutex_t lock; /* stop, readers, backlog */
    pthread_cond_t wake;
    int stopping;
    gust_bus_readers_fn readers_fn;
    void *readers_ud;
    struct gust_bus_readers readers; /* the thread's own */
    struct backlog *backlog;         /* under lock: the last pass's (its thread reads it without) */
    size_t nbacklog;
    struct stream_stat stat[NSTREAMS];
    atomic_uint_fast64_t purges; /* purge requests that succeeded */
    /* The thread's: samples of the event stream's last sequence over time. */
    int64_t sample_ms[SAMPLES];
    uint64_t sample_seq[SAMPLES];
    size_t nsamples, first;
    int warned;
    uint64_t passes;
};

static atomic_int_fast64_t refused_full_at; /* monotonic ms of the last refusal, 0 none */
static atomic_uint_fast64_t consumer_changes;

void gust_retention_note_consumer_change(void)
{
    atomic_fetch_add(&consumer_changes, 1);
}

void gust_retention_note_full(void)
{
    atomic_store(&refused_full_at, gust_clock_mono_ms());
}

/* The JetStream name of stream k ("KV_<bucket>" for a bucket), or NULL. */
static const char *stream_name(struct gust_retention *r, int k)
{
    const struct gust_bus_conf *c = gust_bus_config(r->bus);
    struct stream_stat *st = &r->stat[k];
    if (st->name[0] == '\0') {
        const char *bucket = k == LEASES ? c->lease_bucket : k == FLOW_STATE ? c->flow_state_bucket : NULL;
        const char *name = k == EVENTS ? c->stream : k == DLQ ? c->dlq_stream : k == STATE ? c->state_stream : NULL;
        if (bucket != NULL) {
            snprintf(st->name, sizeof(st->name), "KV_%s", bucket);
        } else if (name != NULL) {
            snprintf(st->name, sizeof(st->name), "%s", name);
        }
    }
    return st->name[0] != '\0' ? st->name : NULL;
}

static jsOptions *call_opts(jsOptions *o)
{
    jsOptions_Init(o);
    o->Wait = CALL_WAIT_MS;
    return o;
}

/* The stream's state into its stat; 0, or -1 when JetStream did not answer. */
static int read_stream(struct gust_retention *r, int k, jsStreamState *state)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    const char *name = stream_name(r, k);
    if (name == NULL || js_GetStreamInfo(&si, gust_bus__js(r->bus), name, call_opts(&(jsOptions){0}), &jerr) != NATS_OK) {
        return -1;
    }
    *state = si->State;
    state->Subjects = NULL;
    state->Deleted = NULL;
    state->Lost = NULL;
    struct stream_stat *st = &r->stat[k];
    atomic_store(&st->bytes, si->State.Bytes);
    atomic_store(&st->msgs, si->State.Msgs);
    atomic_store(&st->max_bytes, si->Config->MaxBytes > 0 ? si->Config->MaxBytes : -1);
    atomic_store(&st->known, 1);
    jsStreamInfo_Destroy(si);
    return 0;
}

/* Remembers that the stream ended at last_seq now, at most SAMPLES over 2 x keep. */
static void sample(struct gust_retention *r, int64_t now, uint64_t last_seq, int64_t keep_ms)
{
    int64_t every = keep_ms / (SAMPLES / 2);
    every = every < PASS_MS ? PASS_MS : every;
    if (r->nsamples > 0 && now - r->sample_ms[(r->first + r->nsamples - 1) % SAMPLES] < every) {
        return;
    }
    if (r->nsamples == SAMPLES) {
        r->first = (r->first + 1) % SAMPLES;
        r->nsamples--;
    }
    size_t at = (r->first + r->nsamples++) % SAMPLES;
    r->sample_ms[at] = now;
    r->sample_seq[at] = last_seq;
}

/* The stream's last sequence keep_ms ago (0: not known that long): what ended then is
 * older than keep. */
static uint64_t seq_kept_since(const struct gust_retention *r, int64_t now, int64_t keep_ms)
{
    uint64_t seq = 0;
    for (size_t i = 0; i < r->nsamples; i++) {
        size_t at = (r->first + i) % SAMPLES;
        if (r->sample_ms[at] > now - keep_ms) {
            break;
        }
        seq = r->sample_seq[at];
    }
    return seq;
}

/* Each configured durable consumer: its backlog (published for /metrics), and the
 * lowest sequence it still needs into *floor. 0, or -1 when one could not be read (then
 * nothing is removed this pass). */
/* The sequence of the last message on filter in the stream: 0 with *seq set (0: none),
 * or -1 when it cannot be known. */
static int last_on(struct gust_retention *r, const char *filter, uint64_t *seq)
{
    if (filter == NULL || filter[0] == '\0') {
        return -1;
    }
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetLastMsg(&m, gust_bus__js(r->bus), gust_bus_config(r->bus)->stream, filter,
                                 call_opts(&(jsOptions){0}), &jerr);
    if (s == NATS_NOT_FOUND) {
        *seq = 0;
        return 0;
    }
    if (s != NATS_OK) {
        return -1;
    }
    *seq = natsMsg_GetSequence(m);
    natsMsg_Destroy(m);
    return 0;
}

/* What the last pass knew of consumer i (by index, else by name), or NULL. */
static const struct backlog *last_read(const struct gust_retention *r, size_t i)
{
    const char *name = r->readers.names[i];
    if (i < r->nbacklog && strcmp(r->backlog[i].name, name) == 0) {
        return &r->backlog[i];
    }
    for (size_t k = 0; k < r->nbacklog; k++) {
        if (strcmp(r->backlog[k].name, name) == 0) {
            return &r->backlog[k];
        }
    }
    return NULL;
}

/* Consumer i as the last pass read it, when that still holds (REREAD_MS), else NULL. */
static const struct backlog *still(const struct gust_retention *r, size_t i, uint64_t pass_last_seq,
                                   uint64_t changes, int64_t now)
{
    const struct backlog *b = last_read(r, i);
    return b != NULL && b->done && b->last_seq == pass_last_seq && b->changes == changes &&
                   now - b->read_ms < REREAD_MS
               ? b
               : NULL;
}

/* purge_upto: what this pass would purge were no consumer behind it (0: nothing), so
 * that a busy unit's consumer is read only when its last known floor holds that back. */
static int read_consumers(struct gust_retention *r, uint64_t pass_last_seq, uint64_t purge_upto, uint64_t *floor)
{
    const struct gust_bus_readers *rd = &r->readers;
    struct backlog *bl = calloc(rd->n > 0 ? rd->n : 1, sizeof(*bl));
    if (bl == NULL) {
        return -1;
    }
    int rc = 0;
    /* Before any info is read: a consumer made again while this pass reads it is read
     * again by the next. */
    uint64_t changes = atomic_load(&consumer_changes);
    int64_t now = gust_clock_mono_ms();
    const char *stream = gust_bus_config(r->bus)->stream;
    for (size_t i = 0; i < rd->n; i++) {
        const struct backlog *was = still(r, i, pass_last_seq, changes, now);
        if (was != NULL) {
            bl[i] = *was;
            *floor = was->needs < *floor ? was->needs : *floor;
            continue;
        }
        /* Nor is a consumer read while its unit is busy taking messages, unless a purge
         * waits for its floor. nats-server 2.9.10 answers a consumer's info by counting
         * what the consumer has pending; when the consumer is in the first half of the
         * last file block holding its subject, that count leaves the consumer's cached
         * figure unset (filestore.go filteredPendingLocked sets no "last" when it scans
         * the messages before the position). From then on the server counts again, from
         * the block's start, for each message it delivers, until the consumer reaches the
         * block's second half: a consumer behind falls further behind meanwhile (run.sh
         * ran at a quarter of its speed in 5 of 6 fresh runs, bench/NOTES.md). A busy
         * unit's backlog comes from its own reads instead (the count JetStream puts in
         * each delivery's ack subject), its floor from the last read: a floor only rises,
         * so an old one purges less, never more. */
        if (rd->busy_behind[i] >= 0) {
            const struct backlog *prior = last_read(r, i);
            int known_floor = prior != NULL && prior->pending >= 0 && prior->needs > 0 && prior->changes == changes;
            if (purge_upto == 0 || (known_floor && prior->needs >= purge_upto)) {
                if (known_floor) {
                    bl[i] = *prior;
                    bl[i].done = 0;
                    *floor = prior->needs < *floor ? prior->needs : *floor;
                } else {
                    snprintf(bl[i].name, sizeof(bl[i].name), "%s", rd->names[i]);
                    bl[i].changes = changes;
                    rc = -1; /* its floor is not known: nothing is purged this pass */
                }
                bl[i].pending = rd->busy_behind[i];
                continue;
            }
        }
        jsConsumerInfo *ci = NULL;
        jsErrCode jerr = 0;
        snprintf(bl[i].name, sizeof(bl[i].name), "%s", rd->names[i]);
        bl[i].pending = -1;
        if (js_GetConsumerInfo(&ci, gust_bus__js(r->bus), stream, rd->names[i], call_opts(&(jsOptions){0}),
                               &jerr) != NATS_OK) {
            rc = -1; /* not made yet, or JetStream away: it may need anything */
            continue;
        }
        bl[i].pending = (int64_t)ci->NumPending + ci->NumAckPending;
        /* Below its ack floor it takes nothing again. Caught up (nothing pending nor
         * unacked), it is done with all it was handed; and with all the stream held when
         * this pass began (pass_last_seq, read before this info) if no message on its
         * filter lies beyond what it was handed. That last check asks the stream itself
         * (its last message on the filter), not num_pending, which nats-server 2.9 may
         * count a little after storing a message (two runs of e2e_storage under heavy load
         * left events undelivered when it was trusted). */
        uint64_t needs = ci->AckFloor.Stream + 1;
        if (ci->NumPending == 0 && ci->NumAckPending == 0) {
            uint64_t done = ci->Delivered.Stream, last = 0;
            const char *filter = ci->Config != NULL ? ci->Config->FilterSubject : NULL;
            if (last_on(r, filter, &last) == 0 && last <= ci->Delivered.Stream) {
                bl[i].done = 1;
                done = pass_last_seq > done ? pass_last_seq : done;
            }
            needs = done + 1 > needs ? done + 1 : needs;
        }
        bl[i].needs = needs;
        bl[i].last_seq = pass_last_seq;
        bl[i].changes = changes;
        bl[i].read_ms = now;
        *floor = needs < *floor ? needs : *floor;
        jsConsumerInfo_Destroy(ci);
    }
    pthread_mutex_lock(&r->lock);
    free(r->backlog);
    r->backlog = bl;
    r->nbacklog = rd->n;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* Removes the messages below seq, whatever their subject. Never with a subject filter:
 * nats-server 2.9 then moves every consumer's ack floor to the first message left on
 * that subject, filter or not, and the others lose what they had yet to take or were
 * to take again (seen here: events accepted and never delivered). So a consumer that
 * is behind (a sink down) holds back the events of every subject above its floor. */
static int purge(struct gust_retention *r, uint64_t seq)
{
    const struct gust_bus_conf *conf = gust_bus_config(r->bus);
    jsOptions o;
    call_opts(&o);
    o.Stream.Purge.Sequence = seq;
    jsErrCode jerr = 0;
    natsStatus s = js_PurgeStream(gust_bus__js(r->bus), conf->stream, &o, &jerr);
    if (s != NATS_OK) {
        if (!r->warned++) {
            gust_warn("bus: cannot remove consumed events below seq %" PRIu64 " of %s: %s (jetstream error %d)", seq,
                      conf->stream, gust_bus__reason(s), (int)jerr);
        }
        return -1;
    }
    r->warned = 0;
    atomic_fetch_add(&r->purges, 1);
    return 0;
}

static void pass(struct gust_retention *r)
{
    const struct gust_bus_conf *conf = gust_bus_config(r->bus);
    jsStreamState st;
    if (read_stream(r, EVENTS, &st) != 0) {
        return;
    }
    if (r->passes++ % OTHERS_EVERY == 0) {
        for (int k = DLQ; k < NSTREAMS; k++) {
            read_stream(r, k, &(jsStreamState){0});
        }
    }
    int64_t now = gust_clock_mono_ms();
    if (conf->keep_ms >= 0) {
        sample(r, now, st.LastSeq, conf->keep_ms);
    }
    pthread_mutex_lock(&r->lock);
    gust_bus_readers_fn fn = r->readers_fn;
    void *ud = r->readers_ud;
    pthread_mutex_unlock(&r->lock);
    r->readers.ready = 0;
    r->readers.n = 0;
    r->readers.floor = 0;
    if (fn != NULL) {
        fn(ud, &r->readers); /* under the registry's lock, never ours */
    }
    if (!r->readers.ready) {
        return;
    }
    /* Consumed and older than keep; consumed at all while the stream nears its bound. */
    uint64_t upto = 0;
    if (conf->keep_ms >= 0) {
        int near_full = conf->max_bytes > 0 && st.Bytes >= (uint64_t)conf->max_bytes / 4 * 3;
        upto = near_full ? UINT64_MAX : seq_kept_since(r, now, conf->keep_ms) + 1;
    }
    uint64_t floor = r->readers.floor;
    int known = read_consumers(r, st.LastSeq, upto > 1 ? upto : 0, &floor) == 0;
    if (conf->keep_ms < 0 || !known || floor == 0 || st.Msgs == 0) {
        return;
    }
    upto = floor < upto ? floor : upto;
    /* Never up to the last message: a purge that covers every message the store holds
     * takes nats-server 2.9's shortcut to a whole purge, which drops its lock a moment, so
     * a message stored then is purged too (fixed upstream in "fileStore Compact and
     * StoreMsg race", nats-server PR 8400). Keeping the last one costs a message. */
    if (upto > st.LastSeq) {
        upto = st.LastSeq;
    }
    if (upto > st.FirstSeq) {
        purge(r, upto);
    }
}

static void *run(void *arg)
{
    struct gust_retention *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        pthread_mutex_unlock(&r->lock);
        if (gust_bus_healthy(r->bus)) {
            pass(r);
        }
        struct timespec until;
        gust_clock_deadline(PASS_MS, &until);
        pthread_mutex_lock(&r->lock);
        if (!r->stopping) {
            pthread_cond_timedwait(&r->wake, &r->lock, &until);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int gust_retention_start(struct gust_bus *bus, struct gust_retention **out, struct gust_err *err)
{
    struct gust_retention *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    r->bus = bus;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    if (pthread_create(&r->thread, NULL, run, r) != 0) {
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return gust_err_set(err, GUST_EIO, "cannot start the retention thread");
    }
    *out = r;
    return 0;
}

void gust_retention_stop(struct gust_retention *r)
{
    if (r == NULL) {
        return;
    }
    pthread_mutex_lock(&r->lock);
    r->stopping = 1;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r->backlog);
    free(r);
}

void gust_bus_set_readers(struct gust_bus *bus, gust_bus_readers_fn fn, void *ud)
{
    struct gust_retention *r = gust_bus__retention(bus);
    if (r == NULL) {
        return;
    }
    pthread_mutex_lock(&r->lock);
    r->readers_fn = fn;
    r->readers_ud = ud;
    pthread_mutex_unlock(&r->lock);
}

int gust_bus_store_full(struct gust_bus *bus)
{
    int64_t at = atomic_load(&refused_full_at);
    if (at != 0 && gust_clock_mono_ms() - at < FULL_HOLD_MS) {
        return 1;
    }
    struct gust_retention *r = gust_bus__retention(bus);
    if (r == NULL || !atomic_load(&r->stat[EVENTS].known)) {
        return 0;
    }
    int64_t max = atomic_load(&r->stat[EVENTS].max_bytes);
    return max > 0 && atomic_load(&r->stat[EVENTS].bytes) >= (uint64_t)(max - max / 100);
}

int64_t gust_bus_backlog(struct gust_bus *bus, const char *consumer)
{
    struct gust_retention *r = gust_bus__retention(bus);
    int64_t v = -1;
    if (r == NULL) {
        return v;
    }
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->nbacklog; i++) {
        if (strcmp(r->backlog[i].name, consumer) == 0) {
            v = r->backlog[i].pending;
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return v;
}

void gust_bus_render_metrics(struct gust_bus *bus, struct gust_buf *out)
{
    struct gust_retention *r = gust_bus__retention(bus);
    if (r == NULL) {
        return;
    }
    static const char *const series[][2] = {
        {"gust_stream_bytes", "Bytes stored in the stream."},
        {"gust_stream_messages", "Messages stored in the stream."},
        {"gust_stream_max_bytes", "The stream's bound in bytes (-1: none)."},
    };
    for (int s = 0; s < 3; s++) {
        gust_buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", series[s][0], series[s][1], series[s][0]);
        for (int k = 0; k < NSTREAMS; k++) {
            const struct stream_stat *st = &r->stat[k];
            if (!atomic_load(&st->known)) {
                continue;
            }
            long long v = s == 0   ? (long long)atomic_load(&st->bytes)
                          : s == 1 ? (long long)atomic_load(&st->msgs)
                                   : (long long)atomic_load(&st->max_bytes);
            gust_buf_printf(out, "%s{stream=\"%s\"} %lld\n", series[s][0], r->stat[k].name, v);
        }
    }
    gust_buf_printf(out,
                    "# HELP gust_store_full 1 while the event stream refuses new events (full).\n"
                    "# TYPE gust_store_full gauge\ngust_store_full %d\n"
                    "# HELP gust_stream_purges_total Purges of consumed events from the event stream by gust.\n"
                    "# TYPE gust_stream_purges_total counter\ngust_stream_purges_total %" PRIu64 "\n",
                    gust_bus_store_full(bus), (uint64_t)atomic_load(&r->purges));
}

void gust_bus_render_store_json(struct gust_bus *bus, struct gust_buf *out)
{
    static const char *const roles[NSTREAMS] = {"events", "dlq", "state", "leases", "flow_state"};
    struct gust_retention *r = bus != NULL ? gust_bus__retention(bus) : NULL;
    gust_buf_append(out, "\"streams\":[", 11);
    for (int k = 0, shown = 0; r != NULL && k < NSTREAMS; k++) {
        const struct stream_stat *st = &r->stat[k];
        if (!atomic_load(&st->known)) {
            continue;
        }
        gust_buf_printf(out,
                        "%s{\"role\":\"%s\",\"stream\":\"%s\",\"bytes\":%llu,\"messages\":%llu,\"max_bytes\":%lld}",
                        shown++ > 0 ? "," : "", roles[k], st->name, (unsigned long long)atomic_load(&st->bytes),
                        (unsigned long long)atomic_load(&st->msgs), (long long)atomic_load(&st->max_bytes));
    }
    gust_buf_printf(out, "],\"store_full\":%s", bus != NULL && gust_bus_store_full(bus) ? "true" : "false");
}
