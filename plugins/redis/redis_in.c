/* redis_in: a Redis stream read with a consumer group, published to the bus before the
 * entry is acknowledged (XACK only after JetStream's PubAck).
 *
 *   source rin { use redis_in; url redis://127.0.0.1:6379; stream s_in; group gust; subject ev.redis; }
 *
 * One thread per instance, one blocking connection, a window of at most max_inflight
 * entries published and not yet acked (one slot each), round after round:
 *   1. XACK, in one command, the entries whose PubAck came back since the last round
 *      (XACK is per entry, not cumulative: no order to keep, unlike a Kafka offset);
 *   2. read up to `batch` entries, no more than the free slots: first our own pending
 *      entries (XREADGROUP from id 0, what a previous run of this consumer read and never
 *      acked), then new ones (`>`, blocking 500 ms at most so a stop is noticed), and
 *      every claim_idle/2 the entries other consumers left pending longer than claim_idle
 *      (XAUTOCLAIM: a dead process's);
 *   3. publish each with Nats-Msg-Id "<stream>:<entry id>" (and headers Redis-Stream and
 *      Redis-Entry-Id) and go on reading without waiting for the PubAcks: waiting for a
 *      whole batch's PubAcks before the next read left Redis and the bus idle in turn
 *      (bench/NOTES.md, "Broker bridges"). An entry stored and not yet acked when gust
 *      died is read again, and JetStream stores it once.
 * A publish that fails leaves its entry pending; the source pauses and re-reads its
 * pending entries. A re-read from id 0 (after a failure or a reconnect) starts with the
 * window empty, every outcome back and the stored entries acked, so that it does not
 * publish again what is still in flight.
 * The group is created when missing (XGROUP CREATE ... MKSTREAM from the first entry, or
 * `$` with `start latest`). Every process reads its share of the group: in a cluster the
 * source runs everywhere (`competing on`), no lease needed. */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gust/source.h"
#include "redis.h"

struct redis_in_keys {
    struct redis_keys common;
    const char *stream, *group, *consumer, *subject, *start, *non_json;
    int64_t claim_idle, batch, max_inflight;
};

#define KEY(f, T, def, flags, help) GUST_KEY(struct redis_in_keys, f, T, def, flags, help)
const struct gust_schema_key redis_in_schema[] = {
    REDIS_COMMON_KEYS(struct redis_in_keys),
    KEY(stream, STR, NULL, GUST_K_REQUIRED, "the stream to read"),
    KEY(group, STR, NULL, GUST_K_REQUIRED, "consumer group (created from the first entry when missing)"),
    KEY(consumer, STR, NULL, 0, "consumer name in the group (default: <host name>:<pid>)"),
    KEY(subject, SUBJECT, NULL, GUST_K_REQUIRED, "publish every entry to this subject"),
    GUST_KEY_ENUM(struct redis_in_keys, start, "earliest", 0, "earliest|latest",
                  "where a new group starts: the first entry (0) or new entries only ($)"),
    GUST_KEY_ENUM(struct redis_in_keys, non_json, "reject", 0, "reject|wrap|pass",
                  "payload that is not one JSON object: reject (counted, logged, acked), wrap "
                  "({\"payload_base64\",\"stream\",\"id\"}) or pass (unchanged)"),
    GUST_KEY_RANGE(struct redis_in_keys, claim_idle, DURATION, "30s", 0, 1000, 86400000,
                   "entries another consumer left pending this long are claimed (XAUTOCLAIM)"),
    GUST_KEY_RANGE(struct redis_in_keys, batch, INT, "256", 0, 1, 10000, "entries read at once, at most"),
    GUST_KEY_RANGE(struct redis_in_keys, max_inflight, INT, "1024", 0, 1, 100000,
                   "entries published and not yet acked, at most (reading waits past it)"),
    GUST_KEY_END,
};

/* Not an outcome the host gives (0, 1 or a GUST_E*: GUST_EAGAIN is one, for a publish
 * the lost bus connection took with it). */
#define SLOT_OUT INT_MIN

/* One entry of the window, from its read until its XACK. */
struct slot {
    char id[48];
    /* SLOT_OUT while its publish is out; then 0 or GUST_PUBLISH_DUPLICATE (1): stored
     * (or not to be published: rejected, trimmed), else failed. Written by a bus thread. */
    atomic_int status;
    int used; /* the thread's own */
    struct redis_in *owner;
};

struct redis_in {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    struct redis_in_keys k;
    struct redis_conf conf;
    struct redis_conn conn;
    struct gust_publisher *pub;
    char consumer[300];
    int non_json;

    pthread_t thread;
    int running;
    atomic_int stopping;

    /* The thread's own. */
    int group_ready;
    int pending_pass; /* reading our own pending entries (from pending_cursor) */
    char pending_cursor[48];
    char claim_cursor[48];
    int64_t next_claim, pause_until;
    struct slot *slots;
    size_t nslots;
    size_t *free_ix; /* a stack of the unused slots */
    size_t nfree;
    const char **ack_argv;
    /* XACKs written to the connection's buffer whose replies are not read yet: they go
     * out in the same write as the next command (command()), and how many entries
     * they ack. */
    size_t ack_cmds, ack_ids;
    /* Outcomes counted as they come (on_stored), for a thread waiting on a full window:
     * it is woken only once the count reaches wake_at (UINT64_MAX: nobody waits), not
     * for each one. settled_at: the count when settle() last looked. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    atomic_uint_fast64_t outcomes, wake_at;
    uint64_t settled_at;
    struct gust_buf json;
    char msg_id[300]; /* "<stream>:", then each entry's id (stream: 200 bytes at most) */
    size_t msg_id_at;
    atomic_uint_fast64_t read, acked, rejected, claimed, failed;
};

int redis_in_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    const struct gust_host_api *h = redis_host;
    struct redis_in *in = calloc(1, sizeof(*in));
    char hostname[256];
    int rc;

    if (!in) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    in->inst = inst;
    in->cfg = cfg;
    pthread_mutex_init(&in->lock, NULL);
    pthread_cond_init(&in->cond, NULL);
    atomic_store(&in->wake_at, UINT64_MAX);
    if ((rc = gust_sdk_bind(h, cfg, redis_in_schema, &in->k, err)) != 0 ||
        (rc = redis_conf_load(&in->conf, &in->k.common, cfg, err)) != 0) {
        redis_in_destroy(in);
        return rc;
    }
    if (!in->k.stream[0] || strlen(in->k.stream) > 200) {
        redis_in_destroy(in);
        return gust_err_set(err, GUST_ECONFIG, "%s: stream: must be 1 to 200 bytes",
                            h->cfg_where(cfg, "stream"));
    }
    if (!in->k.group[0]) {
        redis_in_destroy(in);
        return gust_err_set(err, GUST_ECONFIG, "%s: group: must not be empty", h->cfg_where(cfg, "group"));
    }
    if (in->k.consumer) {
        if (!in->k.consumer[0] || strlen(in->k.consumer) >= sizeof(in->consumer)) {
            redis_in_destroy(in);
            return gust_err_set(err, GUST_ECONFIG, "%s: consumer: must be 1 to 299 bytes",
                                h->cfg_where(cfg, "consumer"));
        }
        snprintf(in->consumer, sizeof(in->consumer), "%s", in->k.consumer);
    } else {
        /* One per process: a restarted process is a new consumer, and what the dead one
         * left pending is claimed back after claim_idle (set `consumer` to a fixed name
         * to re-read it at once instead). */
        if (gethostname(hostname, sizeof(hostname)) != 0) {
            snprintf(hostname, sizeof(hostname), "gust");
        }
        hostname[sizeof(hostname) - 1] = '\0';
        snprintf(in->consumer, sizeof(in->consumer), "%s:%ld", hostname, (long)getpid());
    }
    in->msg_id_at = (size_t)snprintf(in->msg_id, sizeof(in->msg_id), "%s:", in->k.stream);
    in->non_json = strcmp(in->k.non_json, "wrap") == 0   ? REDIS_NJ_WRAP
                   : strcmp(in->k.non_json, "pass") == 0 ? REDIS_NJ_PASS
                                                         : REDIS_NJ_REJECT;
    size_t n = (size_t)in->k.max_inflight;
    in->nslots = n;
    in->slots = calloc(n, sizeof(*in->slots));
    in->free_ix = calloc(n, sizeof(*in->free_ix));
    in->ack_argv = calloc(n + 3, sizeof(*in->ack_argv));
    if (!in->slots || !in->free_ix || !in->ack_argv) {
        redis_in_destroy(in);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        in->free_ix[i] = n - 1 - i;
        in->slots[i].owner = in;
    }
    in->nfree = n;
    redis_conn_init(&in->conn, inst, &in->conf);
    *ctx = in;
    return 0;
}

/* A bus thread: records the outcome (settle() acts on it) and wakes the thread if it
 * waits for room in the window and this is the outcome it waits for: a wake-up per
 * outcome was a futex call and a context switch per entry. */
static void on_stored(void *ud, int status, uint64_t seq, const char *error)
{
    struct slot *s = ud;
    struct redis_in *in = s->owner;
    (void)seq;
    (void)error;
    atomic_store(&s->status, status);
    if (atomic_fetch_add(&in->outcomes, 1) + 1 == atomic_load(&in->wake_at)) {
        /* Under the lock: the thread is then either waiting or past its check. */
        pthread_mutex_lock(&in->lock);
        pthread_cond_signal(&in->cond);
        pthread_mutex_unlock(&in->lock);
    }
}

/* Waits up to ms until `need` outcomes came after settle() last looked. */
static void wait_outcomes(struct redis_in *in, size_t need, int64_t ms)
{
    uint64_t target = in->settled_at + need;
    struct timespec until;
    gust_clock_deadline(ms, &until);
    pthread_mutex_lock(&in->lock);
    atomic_store(&in->wake_at, target);
    while (atomic_load(&in->outcomes) < target && !atomic_load(&in->stopping) &&
           pthread_cond_timedwait(&in->cond, &in->lock, &until) == 0) {
    }
    atomic_store(&in->wake_at, UINT64_MAX);
    pthread_mutex_unlock(&in->lock);
}

/* The connection is gone with whatever was written on it: XACKs not answered leave
 * their entries pending, read again after the reconnect (and stored once). */
static void dropped(struct redis_in *in, const char *why)
{
    in->ack_cmds = 0;
    in->ack_ids = 0;
    redis_conn_drop(&in->conn, why);
}

/* An error reply: logged once per reason through the connection, which backs off. */
static void refused(struct redis_in *in, const char *cmd, redisReply *r)
{
    char why[300];
    snprintf(why, sizeof(why), "%s refused: %s", cmd, r->str);
    freeReplyObject(r);
    dropped(in, why);
}

/* Reads the replies of the XACKs written before (sending them first if they still wait
 * in the buffer). 0, or -1 when the connection went. */
static int ack_replies(struct redis_in *in)
{
    redisContext *ctx = in->conn.ctx;
    while (in->ack_cmds > 0) {
        redisReply *r = NULL;
        if (redisGetReply(ctx, (void **)&r) != REDIS_OK || !r) {
            char why[200];
            snprintf(why, sizeof(why), "XACK: %s", ctx->errstr[0] ? ctx->errstr : "no reply");
            dropped(in, why);
            return -1;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            refused(in, "XACK", r);
            return -1;
        }
        freeReplyObject(r);
        in->ack_cmds--;
    }
    atomic_fetch_add(&in->acked, in->ack_ids);
    in->ack_ids = 0;
    return 0;
}

/* One command and its reply (NULL when the connection went). The XACKs settle() left in
 * the buffer leave in the same write: a round trip less per read. */
static redisReply *command(struct redis_in *in, int argc, const char **argv)
{
    redisContext *ctx = in->conn.ctx;
    redisReply *r = NULL;
    char why[200];
    if (redisAppendCommandArgv(ctx, argc, argv, NULL) != REDIS_OK) {
        snprintf(why, sizeof(why), "%s: %s", argv[0], ctx->errstr);
        dropped(in, why);
        return NULL;
    }
    if (ack_replies(in) != 0) {
        return NULL;
    }
    if (redisGetReply(ctx, (void **)&r) != REDIS_OK || !r) {
        snprintf(why, sizeof(why), "%s: %s", argv[0], ctx->errstr[0] ? ctx->errstr : "no reply");
        dropped(in, why);
        return NULL;
    }
    return r;
}

static int ensure_group(struct redis_in *in)
{
    const char *from = strcmp(in->k.start, "latest") == 0 ? "$" : "0";
    const char *argv[] = {"XGROUP", "CREATE", in->k.stream, in->k.group, from, "MKSTREAM"};
    redisReply *r = command(in, 6, argv);
    if (!r) {
        return -1;
    }
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9) != 0) {
        refused(in, "XGROUP CREATE", r);
        return -1;
    }
    if (r->type != REDIS_REPLY_ERROR) {
        redis_host->log(in->inst, GUST_LOG_INFO, "created consumer group %s on stream %s (from %s)",
                        in->k.group, in->k.stream,
                        strcmp(in->k.start, "latest") == 0 ? "new entries" : "the first entry");
    }
    freeReplyObject(r);
    in->group_ready = 1;
    in->pending_pass = 1;
    snprintf(in->pending_cursor, sizeof(in->pending_cursor), "0");
    return 0;
}

static void note_rejected(struct redis_in *in, const char *id)
{
    uint64_t n = atomic_fetch_add(&in->rejected, 1) + 1;
    if (n == 1 || n % 1000 == 0) {
        redis_host->log(in->inst, GUST_LOG_WARN,
                        "entry %s of %s is not one JSON object: rejected and acked (non_json reject; %" PRIu64
                        " so far)",
                        id, in->k.stream, n);
    }
}

/* An entry id into a buffer of size (ids are short: "<ms>-<seq>", at most 41 bytes). */
static void copy_id(char *out, size_t size, const char *id)
{
    size_t n = strlen(id);
    n = n < size ? n : size - 1;
    memcpy(out, id, n);
    out[n] = '\0';
}

/* Takes a free slot for entry id, with its outcome already known (status) or due. */
static struct slot *take_slot(struct redis_in *in, const char *id, int status)
{
    struct slot *s = &in->slots[in->free_ix[--in->nfree]];
    copy_id(s->id, sizeof(s->id), id);
    atomic_store(&s->status, status);
    s->used = 1;
    return s;
}

/* XACKs, in one command, every entry of the window whose outcome says stored and frees
 * the slots whose outcome is back; a failed publish leaves its entry pending, to be read
 * again from id 0 after a pause. The XACK is only written to the connection's buffer:
 * it leaves with the next command, or now with `now`. Returns -1 when the connection
 * went (what was not acked is read again after the reconnect, and stored once thanks to
 * the msg id). */
static int settle(struct redis_in *in, int now)
{
    size_t nack = 0, failed = 0;

    in->settled_at = atomic_load(&in->outcomes);
    in->ack_argv[0] = "XACK";
    in->ack_argv[1] = in->k.stream;
    in->ack_argv[2] = in->k.group;
    for (size_t i = 0; i < in->nslots; i++) {
        struct slot *s = &in->slots[i];
        int st = s->used ? atomic_load(&s->status) : SLOT_OUT;
        if (st == SLOT_OUT) {
            continue;
        }
        if (st == 0 || st == 1) {
            in->ack_argv[3 + nack++] = s->id; /* the slot is not reused before the XACK is written */
        } else {
            failed++;
        }
        s->used = 0;
        in->free_ix[in->nfree++] = i;
    }
    if (failed > 0) {
        atomic_fetch_add(&in->failed, failed);
        in->pending_pass = 1;
        snprintf(in->pending_cursor, sizeof(in->pending_cursor), "0");
        in->pause_until = gust_clock_mono_ms() + 1000;
    }
    if (!in->conn.ctx) {
        return -1;
    }
    if (nack > 0) {
        redisContext *ctx = in->conn.ctx;
        if (redisAppendCommandArgv(ctx, (int)(3 + nack), in->ack_argv, NULL) != REDIS_OK) {
            char why[200];
            snprintf(why, sizeof(why), "XACK: %s", ctx->errstr);
            dropped(in, why);
            return -1;
        }
        in->ack_cmds++;
        in->ack_ids += nack;
    }
    return now ? ack_replies(in) : 0;
}

/* Waits for every outcome of the window (the host answers each publish within
 * publish_timeout, so this ends), then settles. */
static int drain(struct redis_in *in)
{
    while (in->nfree < in->nslots && gust_publisher_wait(in->pub, 1000) > 0) {
    }
    return settle(in, 1);
}

/* Publishes the entries of one reply's list (each [id, [field, value, ...]]), each in a
 * slot of the window, without waiting for their PubAcks. Returns how many entries there
 * were (the caller asked for no more than the free slots). */
static int handle_entries(struct redis_in *in, const redisReply *list, char *last_id, size_t last_sz)
{
    size_t n = list->elements < in->nfree ? list->elements : in->nfree;
    const char *names[64], *values[64];
    size_t nlens[64], vlens[64];

    for (size_t i = 0; i < n; i++) {
        const redisReply *e = list->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || e->element[0]->type != REDIS_REPLY_STRING) {
            continue;
        }
        const char *id = e->element[0]->str;
        copy_id(last_id, last_sz, id);
        const redisReply *f = e->element[1];
        if (f->type != REDIS_REPLY_ARRAY) {
            /* A pending entry trimmed away meanwhile: nothing left to publish, only to ack. */
            take_slot(in, id, 0);
            continue;
        }
        struct slot *s = take_slot(in, id, SLOT_OUT);
        struct redis_entry ent = {
            .id = s->id, .names = names, .values = values, .name_lens = nlens, .value_lens = vlens};
        size_t nf = f->elements / 2;
        const redisReply *const *el = (const redisReply *const *)f->element;
        if (nf > 64) {
            nf = 64; /* more fields than that: the first 64 (the whole-entry object only) */
        }
        for (size_t j = 0; j < nf; j++) {
            names[j] = el[2 * j]->str ? el[2 * j]->str : "";
            nlens[j] = el[2 * j]->str ? el[2 * j]->len : 0;
            values[j] = el[2 * j + 1]->str ? el[2 * j + 1]->str : "";
            vlens[j] = el[2 * j + 1]->str ? el[2 * j + 1]->len : 0;
        }
        ent.nfields = nf;
        atomic_fetch_add(&in->read, 1);
        int rc = redis_entry_json(&ent, in->k.common.field, in->k.stream, in->non_json, &in->json);
        if (rc == 1) {
            note_rejected(in, s->id);
            atomic_store(&s->status, 0); /* acked without a publish */
            continue;
        }
        if (rc != 0) {
            atomic_store(&s->status, rc);
            continue;
        }
        memcpy(in->msg_id + in->msg_id_at, s->id, strlen(s->id) + 1); /* "<stream>:<entry id>" */
        /* Where it came from, for flows (meta.headers) and for reading it back in Redis. */
        const struct gust_header hdr[] = {{"Redis-Stream", in->k.stream}, {"Redis-Entry-Id", s->id}};
        const struct gust_pub_msg m = {.subject = in->k.subject,
                                       .data = in->json.data,
                                       .len = in->json.len,
                                       .msg_id = in->msg_id,
                                       .headers = hdr,
                                       .nheaders = 2};
        rc = gust_publisher_send_msg(in->pub, &m, INT64_MAX, on_stored, s);
        if (rc != 0) {
            atomic_store(&s->status, rc); /* never handed over: done is not called */
        }
    }
    return (int)n;
}

/* The entries of an XREADGROUP reply ([[stream, [entries]]] or nil). */
static const redisReply *read_entries(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1) {
        return NULL;
    }
    const redisReply *s = r->element[0];
    if (s->type != REDIS_REPLY_ARRAY || s->elements < 2 || s->element[1]->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }
    return s->element[1];
}

/* After a full claim scan: consumers of the group other than this one with nothing
 * pending, idle longer than claim_idle, are removed (XGROUP DELCONSUMER), so the
 * <host>:<pid> names of processes gone do not pile up. A live one removed by mistake
 * costs nothing: its next XREADGROUP makes it again. */
static void forget_dead_consumers(struct redis_in *in)
{
    const char *argv[] = {"XINFO", "CONSUMERS", in->k.stream, in->k.group};
    redisReply *r = command(in, 4, argv);
    if (!r) {
        return;
    }
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *c = r->element[i];
        const char *name = NULL;
        long long pending = -1, idle = -1;
        for (size_t j = 0; c->type == REDIS_REPLY_ARRAY && j + 1 < c->elements; j += 2) {
            const char *k = c->element[j]->str;
            const redisReply *v = c->element[j + 1];
            if (!k) {
                continue;
            }
            if (strcmp(k, "name") == 0 && v->type == REDIS_REPLY_STRING) {
                name = v->str;
            } else if (strcmp(k, "pending") == 0 && v->type == REDIS_REPLY_INTEGER) {
                pending = v->integer;
            } else if (strcmp(k, "idle") == 0 && v->type == REDIS_REPLY_INTEGER) {
                idle = v->integer;
            }
        }
        if (!name || pending != 0 || idle <= in->k.claim_idle || strcmp(name, in->consumer) == 0) {
            continue;
        }
        const char *del[] = {"XGROUP", "DELCONSUMER", in->k.stream, in->k.group, name};
        redisReply *d = command(in, 5, del);
        if (!d) {
            break;
        }
        if (d->type != REDIS_REPLY_ERROR) {
            redis_host->log(in->inst, GUST_LOG_INFO,
                            "removed consumer %s from group %s: idle %lld ms, nothing pending", name,
                            in->k.group, idle);
        }
        freeReplyObject(d);
    }
    freeReplyObject(r);
}

static void read_round(struct redis_in *in)
{
    char count[24], idle[24], last[48] = "";
    int64_t now = gust_clock_mono_ms();

    if (settle(in, 0) != 0) {
        return;
    }
    if (now < in->pause_until) {
        ack_replies(in);
        return;
    }
    if (in->pending_pass && strcmp(in->pending_cursor, "0") == 0 && in->nfree < in->nslots) {
        /* A re-read of our pending list would return what is still in flight too. */
        if (drain(in) != 0 || now < in->pause_until) {
            return;
        }
    }
    /* The window is full: wait for room for a whole batch, so that a slow bus does not
     * turn the reads and XACKs into one entry each. */
    size_t room = (size_t)in->k.batch < in->nslots ? (size_t)in->k.batch : in->nslots;
    if (in->nfree < room) {
        if (ack_replies(in) == 0) { /* not left waiting in the buffer meanwhile */
            wait_outcomes(in, room - in->nfree, 100);
        }
        return;
    }
    snprintf(count, sizeof(count), "%zu", room);

    if (!in->pending_pass && now >= in->next_claim) {
        snprintf(idle, sizeof(idle), "%" PRId64, in->k.claim_idle);
        const char *argv[] = {"XAUTOCLAIM", in->k.stream, in->k.group,
                              in->consumer, idle,         in->claim_cursor[0] ? in->claim_cursor : "0-0",
                              "COUNT",      count};
        redisReply *r = command(in, 8, argv);
        if (!r) {
            return;
        }
        /* Whatever comes back, the next look is not before the next period: a reply of
         * another shape must not turn into a claim on every round. */
        in->next_claim = now + (in->k.claim_idle / 2 > 1000 ? in->k.claim_idle / 2 : 1000);
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ERR unknown command", 19) == 0) {
            redis_host->log(in->inst, GUST_LOG_WARN,
                            "this Redis has no XAUTOCLAIM (6.2 and later have it): entries a dead consumer "
                            "left pending are not claimed");
            in->next_claim = INT64_MAX;
            freeReplyObject(r);
            return;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            refused(in, "XAUTOCLAIM", r);
            return;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 && r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_ARRAY) {
            snprintf(in->claim_cursor, sizeof(in->claim_cursor), "%s", r->element[0]->str);
            if (r->element[1]->elements > 0) {
                atomic_fetch_add(&in->claimed, r->element[1]->elements);
                redis_host->log(in->inst, GUST_LOG_INFO,
                                "claimed %zu entries left pending over %" PRId64 " ms",
                                r->element[1]->elements, in->k.claim_idle);
            }
            int got = handle_entries(in, r->element[1], last, sizeof(last));
            /* More of the pending list to scan: go on at the next round. */
            if (got >= 0 && strcmp(in->claim_cursor, "0-0") != 0) {
                in->next_claim = now;
            } else if (got >= 0 && in->conn.ctx) {
                forget_dead_consumers(in);
            }
        }
        freeReplyObject(r);
        return;
    }
    /* Our pending list (from pending_cursor, no BLOCK: it answers at once), or new
     * entries, blocking 500 ms at most so a stop is noticed; not blocking while entries
     * are in flight, so that their XACK does not wait for the next entry. */
    const char *argv[11];
    int argc = 0;
    argv[argc++] = "XREADGROUP";
    argv[argc++] = "GROUP";
    argv[argc++] = in->k.group;
    argv[argc++] = in->consumer;
    argv[argc++] = "COUNT";
    argv[argc++] = count;
    int inflight = in->nfree < in->nslots;
    if (!in->pending_pass && !inflight) {
        argv[argc++] = "BLOCK";
        argv[argc++] = "500";
    }
    argv[argc++] = "STREAMS";
    argv[argc++] = in->k.stream;
    argv[argc++] = in->pending_pass ? in->pending_cursor : ">";
    redisReply *r = command(in, argc, argv);
    if (!r) {
        return;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        if (strncmp(r->str, "NOGROUP", 7) == 0) {
            in->group_ready = 0; /* the stream or group was deleted: create it again */
        }
        refused(in, "XREADGROUP", r);
        return;
    }
    const redisReply *list = read_entries(r);
    int pending = in->pending_pass;
    int got = list ? handle_entries(in, list, last, sizeof(last)) : 0;
    if (!pending && got == 0 && inflight) {
        drain(in); /* nothing new: the stream is idle, ack what is in flight */
    }
    if (pending && in->pending_pass && got >= 0) {
        if (got == 0) {
            in->pending_pass = 0; /* our pending list is read: on to new entries */
        } else if (last[0]) {
            snprintf(in->pending_cursor, sizeof(in->pending_cursor), "%s", last);
        }
    }
    freeReplyObject(r);
}

static void *in_thread(void *arg)
{
    struct redis_in *in = arg;
    char why[300];

    while (!atomic_load(&in->stopping)) {
        int64_t now = gust_clock_mono_ms();
        if (now < in->pause_until) {
            usleep(50000);
            continue;
        }
        if (redis_conn_ensure(&in->conn, why, sizeof(why)) != 0) {
            int64_t w = redis_conn_wait_ms(&in->conn);
            usleep((useconds_t)((w > 100 || w <= 0 ? 100 : w) * 1000));
            continue;
        }
        if (!in->group_ready && ensure_group(in) != 0) {
            continue;
        }
        read_round(in);
        if (in->conn.ctx && in->ack_cmds > 0) {
            ack_replies(in); /* every round ends with its XACKs answered */
        }
        if (!in->conn.ctx) {
            /* Reconnected later: our pending list first (what was read and not acked). */
            in->pending_pass = 1;
            snprintf(in->pending_cursor, sizeof(in->pending_cursor), "0");
        }
    }
    if (in->conn.ctx) {
        drain(in); /* ack what the bus stored, so that the next run need not read it again */
    }
    return NULL;
}

int redis_in_start(void *ctx, struct gust_err *err)
{
    struct redis_in *in = ctx;
    struct gust_publisher_conf pc = {.api = redis_host, .inst = in->inst, .max_inflight = in->nslots};

    if (!GUST_API_HAS(redis_host, publish_msg)) {
        return gust_err_set(err, GUST_EINVAL,
                            "this host has no publish_msg (ABI 1.4): it needs a newer gust");
    }
    int rc = gust_publisher_create(&in->pub, &pc, err);
    if (rc != 0) {
        return rc;
    }
    redis_host->log(in->inst, GUST_LOG_INFO, "reading stream %s of redis %s as consumer %s of group %s",
                    in->k.stream, in->conf.shown, in->consumer, in->k.group);
    if (pthread_create(&in->thread, NULL, in_thread, in) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start a thread");
    }
    in->running = 1;
    return 0;
}

size_t redis_in_counters(void *ctx, struct gust_plugin_counter *c, size_t max)
{
    struct redis_in *in = ctx;
    const struct gust_plugin_counter all[] = {
        {"connected", (uint64_t)atomic_load(&in->conn.connected)},
        {"read", (uint64_t)atomic_load(&in->read)},
        {"acked", (uint64_t)atomic_load(&in->acked)},
        {"claimed", (uint64_t)atomic_load(&in->claimed)},
        {"rejected", (uint64_t)atomic_load(&in->rejected)},
        {"publish_failed", (uint64_t)atomic_load(&in->failed)},
        {"connects", (uint64_t)atomic_load(&in->conn.connects)},
        {"connection_errors", (uint64_t)atomic_load(&in->conn.errors)},
    };
    return gust_plugin_counters_put(c, max, all, sizeof(all) / sizeof(all[0]));
}

void redis_in_stop(void *ctx)
{
    struct redis_in *in = ctx;
    if (!in->running) {
        return;
    }
    atomic_store(&in->stopping, 1);
    gust_publisher_stop(in->pub);
    pthread_join(in->thread, NULL);
    in->running = 0;
    redis_conn_close(&in->conn);
    redis_host->log(in->inst, GUST_LOG_INFO,
                    "stopped: %" PRIu64 " entries read, %" PRIu64 " acked, %" PRIu64 " claimed, %" PRIu64
                    " rejected (not JSON), %" PRIu64 " publishes failed (left pending)",
                    (uint64_t)atomic_load(&in->read), (uint64_t)atomic_load(&in->acked),
                    (uint64_t)atomic_load(&in->claimed), (uint64_t)atomic_load(&in->rejected),
                    (uint64_t)atomic_load(&in->failed));
}

void redis_in_destroy(void *ctx)
{
    struct redis_in *in = ctx;
    redis_in_stop(in);
    gust_publisher_destroy(in->pub);
    redis_conf_free(&in->conf);
    gust_buf_free(&in->json);
    free(in->slots);
    free(in->free_ix);
    free(in->ack_argv);
    pthread_cond_destroy(&in->cond);
    pthread_mutex_destroy(&in->lock);
    free(in);
}
