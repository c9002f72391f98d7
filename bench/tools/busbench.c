/* gust-bench-bus URL TEST ARGS...: the bus's own ceilings, measured with nats.c against a
 * nats-server, without gust. Each TEST checks what was delivered (counts, unique
 * sequence numbers, the server's own view of streams and consumers) before it prints
 * one JSON object; a failed check prints the reason on stderr and exits 1.
 *
 *   core SIZE N            one publisher, one subscriber (each its own connection), core
 *                          NATS; the subscriber counts every message
 *   jspub SIZE N NAME [WINDOW [IDS]]
 *                          JetStream async publish into a fresh file stream NAME with
 *                          WINDOW PubAcks awaited at once (default 4096); waits for every
 *                          PubAck. IDS 1: each message carries a distinct Nats-Msg-Id, as
 *                          a detect unit's alerts do (the server then checks each against
 *                          its duplicate window)
 *   fetch BATCH N NAME [SIZE]
 *                          stores N messages of SIZE bytes (default 400), then a durable
 *                          pull consumer fetches them in batches and acks each; the
 *                          consumer must end with all acked once
 *   relay BATCH N NAME [SIZE]
 *                          stores N messages on NAME.in, then per batch: fetch, publish each
 *                          to NAME.out async, wait for every PubAck, ack the batch (what a
 *                          gust unit does with no script); a subscriber counts the arrivals
 *   staterelay BATCH N NAME KEYS [SIZE]
 *                          relay with a flow's durable state (bench/flow-hop.sh's state
 *                          variant): per batch, before its publishes, one compare-and-set
 *                          write per key the batch touches (message number modulo KEYS) into
 *                          a KV bucket NAME (history 1, file), all sent at once and waited
 *                          for; the value an envelope of the size gust writes. The JetStream
 *                          work of the state hop without gust: its rate over relay's is the
 *                          floor of the state / flow ratio
 *   path BATCH N NAME SIZE RATE [WINDOW]
 *                          the JetStream work of gust's end-to-end path, all at once: a
 *                          publisher stores N messages on NAME.in (RATE a second, 0: as
 *                          fast as WINDOW PubAcks awaited at once allow, default 4096); a hop reads them as a gust unit does,
 *                          publishes each to NAME.out and acks once all are stored; a sink
 *                          reads NAME.out and acks. Rate, and latency from publish to the
 *                          sink's read; both consumers must end with all acked once.
 *                          PATH_SINK_DELAY_MS=N starts the sink N ms late (a sink behind);
 *                          PATH_MSG_IDS=1 gives every publish a Nats-Msg-Id, as gust's
 *   bridge BATCH N NAME SIZE WINDOW
 *                          the JetStream work of a broker bridge (bench/brokers.sh: a source
 *                          plugin storing what it reads, a sink unit writing it out): path
 *                          without the hop, the sink reading NAME.in as the publisher stores
 *                          it with WINDOW PubAcks awaited at once
 *   reqrep N SIZE ASAP     N sequential requests to a responder in this process; latency
 *                          percentiles. ASAP 1: both connections write each message at once
 *                          (send_asap), 0: nats.c's default buffered writes
 *   flood PUBS N SIZE      PUBS publishers (threads, own connections) each dump N messages
 *                          at once; one subscriber drains; per-message latency from the
 *                          send time in the payload, and the drain time
 *
 * Payloads start with the message's number in decimal, so the receiver can check each
 * arrives exactly once. JetStream streams are file-backed, like gust's, and deleted at
 * the end. */
#include <inttypes.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_S 60 /* the longest any check waits for deliveries */

static const char *url;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int fail(const char *what, natsStatus s)
{
    const char *last = nats_GetLastError(NULL);
    fprintf(stderr, "gust-bench-bus: %s: %s\n", what, last != NULL && last[0] != '\0' ? last : natsStatus_GetText(s));
    return 1;
}

/* A payload buffer: filler after the first 20 bytes, which number() writes. */
static char *payload_new(int size)
{
    char *buf = malloc((size_t)size);
    for (int i = 0; buf != NULL && i < size; i++) {
        buf[i] = (char)('a' + i % 26);
    }
    return buf;
}

/* Writes the number n in the first 20 bytes of buf (size >= 20). */
static void number(char *buf, uint64_t n)
{
    char head[24];
    snprintf(head, sizeof(head), "%020" PRIu64, n);
    memcpy(buf, head, 20);
}

static uint64_t number_of(const char *data, int len)
{
    if (len < 20) {
        return UINT64_MAX;
    }
    char head[21];
    memcpy(head, data, 20);
    head[20] = '\0';
    return strtoull(head, NULL, 10);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* "p50":..,"p90":..,"p99":..,"max":.. in milliseconds, from n samples in ns (sorted here). */
static void print_percentiles(uint64_t *ns, size_t n)
{
    qsort(ns, n, sizeof(*ns), cmp_u64);
    double q[] = {0.50, 0.90, 0.99};
    const char *name[] = {"p50", "p90", "p99"};
    printf("{");
    for (int i = 0; i < 3; i++) {
        size_t k = (size_t)(q[i] * (double)n);
        printf("\"%s\":%.3f,", name[i], (double)ns[k < n ? k : n - 1] / 1e6);
    }
    printf("\"max\":%.3f}", n > 0 ? (double)ns[n - 1] / 1e6 : 0.0);
}

static natsStatus bus_connect(natsConnection **nc, int send_asap)
{
    natsOptions *o = NULL;
    natsStatus s = natsOptions_Create(&o);
    if (s == NATS_OK) s = natsOptions_SetURL(o, url);
    if (s == NATS_OK) s = natsOptions_SetSendAsap(o, send_asap != 0);
    if (s == NATS_OK) s = natsOptions_SetMaxPendingMsgs(o, 1 << 20); /* reconnect buffer only */
    if (s == NATS_OK) s = natsConnection_Connect(nc, o);
    natsOptions_Destroy(o);
    return s;
}

/* ---- the counting subscriber of core, relay and flood ---- */

struct counter {
    uint64_t want;
    uint8_t *seen;               /* indexed by message number, 1..want */
    atomic_uint_fast64_t unique; /* written by the one delivery thread */
    uint64_t received, duplicates, bad;
    uint64_t first_ns, last_ns;
    uint64_t *latency_ns; /* flood: one per message */
    size_t nlatency;
};

/* Core and relay: the number is 1..want. Flood: "<number> <send ns>". */
static void on_count(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    struct counter *c = closure;
    uint64_t now = mono_ns();
    const char *d = natsMsg_GetData(m);
    int len = natsMsg_GetDataLength(m);
    uint64_t n = number_of(d, len);
    if (c->received++ == 0) {
        c->first_ns = now;
    }
    c->last_ns = now;
    if (n < 1 || n > c->want) {
        c->bad++;
    } else if (c->seen[n]) {
        c->duplicates++;
    } else {
        c->seen[n] = 1;
        if (c->latency_ns != NULL && len >= 41) {
            char t[21];
            memcpy(t, d + 21, 20);
            t[20] = '\0';
            uint64_t sent = strtoull(t, NULL, 10);
            c->latency_ns[c->nlatency++] = now > sent ? now - sent : 0;
        }
        atomic_fetch_add(&c->unique, 1);
    }
    natsMsg_Destroy(m);
}

static int counter_init(struct counter *c, uint64_t want)
{
    memset(c, 0, sizeof(*c));
    c->want = want;
    c->seen = calloc(want + 1, 1);
    return c->seen != NULL ? 0 : -1;
}

/* Waits until every message arrived or WAIT_S passed; 0 when all arrived. */
static int counter_wait(struct counter *c)
{
    uint64_t until = mono_ns() + (uint64_t)WAIT_S * 1000000000u;
    while (atomic_load(&c->unique) < c->want && mono_ns() < until) {
        sleep_ms(1);
    }
    return atomic_load(&c->unique) == c->want ? 0 : -1;
}

static natsStatus subscribe_counter(natsConnection *nc, natsSubscription **sub, const char *subject,
                                    struct counter *c)
{
    natsStatus s = natsConnection_Subscribe(sub, nc, subject, on_count, c);
    /* No client-side limit: a dropped message would be our loss, not the bus's. */
    if (s == NATS_OK) s = natsSubscription_SetPendingLimits(*sub, -1, -1);
    /* The server has the subscription before anything is published. */
    if (s == NATS_OK) s = natsConnection_Flush(nc);
    return s;
}

/* ---- core ---- */

static int run_core(int size, uint64_t n)
{
    natsConnection *pub = NULL, *subc = NULL;
    natsSubscription *sub = NULL;
    struct counter c;
    char *buf = payload_new(size);
    if (buf == NULL || counter_init(&c, n) != 0) {
        return fail("core", NATS_NO_MEMORY);
    }
    natsStatus s = bus_connect(&subc, 0);
    if (s == NATS_OK) s = bus_connect(&pub, 0);
    if (s == NATS_OK) s = subscribe_counter(subc, &sub, "bus.core", &c);
    if (s != NATS_OK) {
        return fail("core: connect/subscribe", s);
    }
    uint64_t t0 = mono_ns();
    for (uint64_t i = 1; i <= n && s == NATS_OK; i++) {
        number(buf, i);
        s = natsConnection_Publish(pub, "bus.core", buf, size);
    }
    if (s == NATS_OK) s = natsConnection_FlushTimeout(pub, WAIT_S * 1000);
    uint64_t t1 = mono_ns();
    if (s != NATS_OK) {
        return fail("core: publish", s);
    }
    int complete = counter_wait(&c) == 0;
    double secs = (double)(c.last_ns - t0) / 1e9;
    printf("{\"size\":%d,\"messages\":%" PRIu64 ",\"received\":%" PRIu64 ",\"unique\":%" PRIu64
           ",\"duplicates\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"publish_seconds\":%.3f,\"seconds\":%.3f,"
           "\"rate\":%.0f,\"mb_per_s\":%.1f,\"ok\":%s}\n",
           size, n, c.received, (uint64_t)atomic_load(&c.unique), c.duplicates, c.bad, (double)(t1 - t0) / 1e9,
           secs, secs > 0 ? (double)n / secs : 0.0, secs > 0 ? (double)n * size / secs / 1e6 : 0.0,
           complete && c.duplicates == 0 && c.bad == 0 ? "true" : "false");
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(pub);
    natsConnection_Destroy(subc);
    free(buf);
    free(c.seen);
    if (!complete || c.duplicates > 0 || c.bad > 0) {
        fprintf(stderr, "gust-bench-bus: core: %" PRIu64 " of %" PRIu64 " arrived\n",
                (uint64_t)atomic_load(&c.unique), n);
        return 1;
    }
    return 0;
}

/* ---- JetStream helpers ---- */

static atomic_long refused;

static void on_pub_error(jsCtx *js, jsPubAckErr *pae, void *closure)
{
    (void)js;
    (void)closure;
    if (atomic_fetch_add(&refused, 1) == 0) {
        fprintf(stderr, "gust-bench-bus: publish refused: %s\n",
                pae->ErrText != NULL ? pae->ErrText : natsStatus_GetText(pae->Err));
    }
}

static natsStatus js_open_window(natsConnection *nc, jsCtx **js, int64_t window)
{
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = window;
    /* A full window waits for PubAcks rather than failing after the default 200 ms: on
     * a loaded machine the server can fall that far behind without losing anything. */
    jo.PublishAsync.StallWait = WAIT_S * 1000;
    jo.PublishAsync.ErrHandler = on_pub_error;
    return natsConnection_JetStream(js, nc, &jo);
}

static natsStatus js_open(natsConnection *nc, jsCtx **js)
{
    return js_open_window(nc, js, 4096); /* what gust-bench-pub uses */
}

/* A fresh file stream NAME on the subjects NAME.> (deleted first if it exists). */
static natsStatus stream_create(jsCtx *js, const char *name)
{
    char subject[128];
    snprintf(subject, sizeof(subject), "%s.>", name);
    const char *subjects[] = {subject};
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Retention = js_LimitsPolicy;
    jsErrCode jerr = 0;
    js_DeleteStream(js, name, NULL, &jerr);
    jsStreamInfo *si = NULL;
    natsStatus s = js_AddStream(&si, js, &sc, NULL, &jerr);
    jsStreamInfo_Destroy(si);
    return s;
}

static int64_t stream_msgs(jsCtx *js, const char *name)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    if (js_GetStreamInfo(&si, js, name, NULL, &jerr) != NATS_OK) {
        return -1;
    }
    int64_t n = (int64_t)si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

/* An async JetStream publish, with id as its Nats-Msg-Id unless id is NULL. */
static natsStatus publish_id(jsCtx *js, const char *subject, const void *data, int len, const char *id)
{
    jsPubOptions o;
    jsPubOptions_Init(&o);
    o.MsgId = id;
    return js_PublishAsync(js, subject, data, len, id != NULL ? &o : NULL);
}

/* Publishes n messages numbered 1.. to subject, each with a Nats-Msg-Id when ids;
 * waits for every PubAck. */
static natsStatus publish_all_ids(jsCtx *js, const char *subject, int size, uint64_t n, int ids)
{
    char *buf = payload_new(size);
    if (buf == NULL) {
        return NATS_NO_MEMORY;
    }
    natsStatus s = NATS_OK;
    char id[64];
    for (uint64_t i = 1; i <= n && s == NATS_OK; i++) {
        number(buf, i);
        /* Shaped like an alert's: <unit>:<digest>:<slice>:<input seq>:<index>. */
        if (ids) {
            snprintf(id, sizeof(id), "seq:0123456789ab:0:%" PRIu64 ":%" PRIu64, i / 8, i % 8);
        }
        s = publish_id(js, subject, buf, size, ids ? id : NULL);
    }
    if (s == NATS_OK) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = WAIT_S * 1000;
        s = js_PublishAsyncComplete(js, &po);
    }
    free(buf);
    return s != NATS_OK ? s : atomic_load(&refused) > 0 ? NATS_ERR : NATS_OK;
}

static natsStatus publish_all(jsCtx *js, const char *subject, int size, uint64_t n)
{
    return publish_all_ids(js, subject, size, n, 0);
}

/* ---- jspub ---- */

static int run_jspub(int size, uint64_t n, const char *name, int64_t window, int ids)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    char subject[128];
    snprintf(subject, sizeof(subject), "%s.x", name);
    natsStatus s = bus_connect(&nc, 0);
    if (s == NATS_OK) s = js_open_window(nc, &js, window);
    if (s == NATS_OK) s = stream_create(js, name);
    if (s != NATS_OK) {
        return fail("jspub: stream", s);
    }
    uint64_t t0 = mono_ns();
    s = publish_all_ids(js, subject, size, n, ids);
    double secs = (double)(mono_ns() - t0) / 1e9;
    int64_t stored = stream_msgs(js, name);
    int ok = s == NATS_OK && stored == (int64_t)n;
    printf("{\"size\":%d,\"messages\":%" PRIu64 ",\"window\":%" PRId64 ",\"ids\":%s,\"stored\":%" PRId64
           ",\"refused\":%ld,\"seconds\":%.3f,\"rate\":%.0f,\"ok\":%s}\n",
           size, n, window, ids ? "true" : "false", stored, atomic_load(&refused), secs, (double)n / secs,
           ok ? "true" : "false");
    jsErrCode jerr = 0;
    js_DeleteStream(js, name, NULL, &jerr);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    if (!ok) {
        fprintf(stderr, "gust-bench-bus: jspub: %s, %" PRId64 " of %" PRIu64 " stored\n", natsStatus_GetText(s),
                stored, n);
    }
    return ok ? 0 : 1;
}

/* ---- fetch and relay: a durable pull consumer like a gust unit's ---- */

static natsStatus pull_subscribe(jsCtx *js, natsSubscription **sub, const char *stream, const char *filter,
                                 int batch)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.MaxDeliver = -1;
    so.Config.MaxAckPending = batch * 8 > 1000 ? batch * 8 : 1000; /* as gust's consumer */
    jsErrCode jerr = 0;
    return js_PullSubscribe(sub, js, filter, "bench", NULL, &so, &jerr);
}

/* Waits for the server to count every message acked: 0 when the consumer has delivered
 * n, acked n, with none pending and none redelivered (so each was acked once). */
static int consumer_acked(jsCtx *js, const char *stream, const char *durable, uint64_t n, char *why, size_t whylen)
{
    uint64_t until = mono_ns() + 10ull * 1000000000u;
    for (;;) {
        jsConsumerInfo *ci = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_GetConsumerInfo(&ci, js, stream, durable, NULL, &jerr);
        if (s != NATS_OK) {
            snprintf(why, whylen, "consumer info: %s", natsStatus_GetText(s));
            return -1;
        }
        /* Consumer sequences: the stream's also count what the relay stored on .out. */
        int done = ci->AckFloor.Consumer == n && ci->NumAckPending == 0 && ci->Delivered.Consumer == n &&
                   ci->NumRedelivered == 0 && ci->NumPending == 0;
        snprintf(why, whylen, "delivered %" PRIu64 ", ack floor %" PRIu64 ", ack pending %" PRId64
                 ", redelivered %" PRId64 ", pending %" PRIu64,
                 ci->Delivered.Consumer, ci->AckFloor.Consumer, ci->NumAckPending, ci->NumRedelivered,
                 ci->NumPending);
        jsConsumerInfo_Destroy(ci);
        if (done) {
            return 0;
        }
        if (mono_ns() > until) {
            return -1;
        }
        sleep_ms(10);
    }
}

/* Each fetched message's stream sequence must be new and within 1..n. */
static int check_seq(natsMsg *m, uint8_t *seen, uint64_t n)
{
    jsMsgMetaData *meta = NULL;
    if (natsMsg_GetMetaData(&meta, m) != NATS_OK) {
        return -1;
    }
    uint64_t seq = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    if (seq < 1 || seq > n || seen[seq]) {
        return -1;
    }
    seen[seq] = 1;
    return 0;
}

/* ---- staterelay: the compare-and-set writes of a flow's durable state ---- */

struct kvside {
    jsCtx *js;
    kvStore *kv;
    char prefix[160]; /* "$KV.<bucket>.k" */
    size_t prefix_len;
    int keys;
    uint64_t *rev;    /* per key: its last revision (0: never written) */
    uint64_t *count;  /* per key: the value written */
    uint64_t *stamp;  /* per key: the batch that last touched it */
    atomic_long written, conflicts;
};

static struct kvside *kvside_of; /* the PubAck handler's */

static void on_kv_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    (void)closure;
    struct kvside *k = kvside_of;
    const char *subj = natsMsg_GetSubject(msg);
    long idx = strtol(subj + k->prefix_len, NULL, 10);
    if (pa != NULL && idx >= 0 && idx < k->keys) {
        k->rev[idx] = pa->Sequence;
        atomic_fetch_add(&k->written, 1);
    } else {
        if (atomic_fetch_add(&k->conflicts, 1) == 0) {
            fprintf(stderr, "gust-bench-bus: state write refused: %s\n",
                    pae != NULL && pae->ErrText != NULL ? pae->ErrText : "?");
        }
    }
    natsMsg_Destroy(msg);
}

static natsStatus kvside_open(struct kvside *k, natsConnection *nc, const char *name, int keys)
{
    memset(k, 0, sizeof(*k));
    kvside_of = k;
    k->keys = keys;
    k->rev = calloc((size_t)keys, sizeof(*k->rev));
    k->count = calloc((size_t)keys, sizeof(*k->count));
    k->stamp = calloc((size_t)keys, sizeof(*k->stamp));
    if (k->rev == NULL || k->count == NULL || k->stamp == NULL) {
        return NATS_NO_MEMORY;
    }
    snprintf(k->prefix, sizeof(k->prefix), "$KV.%s.k", name);
    k->prefix_len = strlen(k->prefix);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 4096; /* as gust's kv.c */
    jo.PublishAsync.StallWait = WAIT_S * 1000;
    jo.PublishAsync.AckHandler = on_kv_ack;
    natsStatus s = natsConnection_JetStream(&k->js, nc, &jo);
    if (s == NATS_OK) {
        char stream[160];
        snprintf(stream, sizeof(stream), "KV_%s", name);
        jsErrCode jerr = 0;
        js_DeleteStream(k->js, stream, NULL, &jerr);
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = name;
        kc.History = 1;
        kc.StorageType = js_FileStorage;
        s = js_CreateKeyValue(&k->kv, k->js, &kc);
    }
    return s;
}

/* One write per key the batch touches (its last message's), all at once, then waits for
 * every PubAck, as gust's commit does before the batch's emits. */
static natsStatus kvside_commit(struct kvside *k, natsConnection *nc, natsMsgList *list, uint64_t batch_no)
{
    int *last = malloc(sizeof(int) * (size_t)(list->Count > 0 ? list->Count : 1));
    if (last == NULL) {
        return NATS_NO_MEMORY;
    }
    int nlast = 0;
    for (int i = list->Count - 1; i >= 0; i--) {
        uint64_t idx = number_of(natsMsg_GetData(list->Msgs[i]), natsMsg_GetDataLength(list->Msgs[i])) % (uint64_t)k->keys;
        if (k->stamp[idx] != batch_no) {
            k->stamp[idx] = batch_no;
            last[nlast++] = (int)idx;
        }
        k->count[idx]++;
    }
    natsStatus s = NATS_OK;
    for (int j = 0; j < nlast && s == NATS_OK; j++) {
        int idx = last[j];
        char subject[200], value[160];
        snprintf(subject, sizeof(subject), "%s%d", k->prefix, idx);
        int len = snprintf(value, sizeof(value), "{\"v\":%" PRIu64 ",\"x\":0,\"a\":[[%" PRIu64 ",%" PRIu64 "]]}",
                           k->count[idx], batch_no * 256 + 1, batch_no * 256 + 256);
        natsMsg *m = NULL;
        s = natsMsg_Create(&m, subject, NULL, value, len);
        if (s == NATS_OK) {
            jsPubOptions po;
            jsPubOptions_Init(&po);
            if (k->rev[idx] == 0) {
                po.ExpectNoMessage = true;
            } else {
                po.ExpectLastSubjectSeq = k->rev[idx];
            }
            s = js_PublishMsgAsync(k->js, &m, &po);
        }
    }
    free(last);
    if (s == NATS_OK) s = natsConnection_FlushTimeout(nc, 1000);
    jsPubOptions co;
    jsPubOptions_Init(&co);
    co.MaxWait = WAIT_S * 1000;
    if (s == NATS_OK) s = js_PublishAsyncComplete(k->js, &co);
    return s != NATS_OK ? s : atomic_load(&k->conflicts) > 0 ? NATS_ERR : NATS_OK;
}

static void kvside_close(struct kvside *k, const char *name)
{
    if (k->js != NULL) {
        jsErrCode jerr = 0;
        char stream[160];
        snprintf(stream, sizeof(stream), "KV_%s", name);
        kvStore_Destroy(k->kv);
        js_DeleteStream(k->js, stream, NULL, &jerr);
        jsCtx_Destroy(k->js);
    }
    free(k->rev);
    free(k->count);
    free(k->stamp);
}

static int run_fetch(int batch, uint64_t n, const char *name, int size, int relay, int keys)
{
    natsConnection *nc = NULL, *cc = NULL;
    natsSubscription *sub = NULL, *counted = NULL;
    jsCtx *js = NULL;
    struct counter c;
    char in[128], out[128], why[256] = "";
    snprintf(in, sizeof(in), "%s.in", name);
    snprintf(out, sizeof(out), "%s.out", name);
    uint8_t *seen = calloc(n + 1, 1);
    if (seen == NULL || counter_init(&c, n) != 0) {
        return fail("fetch", NATS_NO_MEMORY);
    }
    natsStatus s = bus_connect(&nc, 0);
    if (s == NATS_OK) s = js_open(nc, &js);
    if (s == NATS_OK) s = stream_create(js, name);
    if (s != NATS_OK) {
        return fail("fetch: stream", s);
    }
    uint64_t p0 = mono_ns();
    s = publish_all(js, in, size, n);
    double store_secs = (double)(mono_ns() - p0) / 1e9;
    if (s != NATS_OK) {
        return fail("fetch: storing the input", s);
    }
    struct kvside kv = {0};
    char bucket[140];
    snprintf(bucket, sizeof(bucket), "%sKV", name);
    if (relay) {
        s = bus_connect(&cc, 0);
        if (s == NATS_OK) s = subscribe_counter(cc, &counted, out, &c);
    }
    if (s == NATS_OK && keys > 0) s = kvside_open(&kv, nc, bucket, keys);
    if (s == NATS_OK) s = pull_subscribe(js, &sub, name, in, batch);
    if (s != NATS_OK) {
        return fail("fetch: consumer", s);
    }

    uint64_t got = 0, fetches = 0, bad = 0, fetch_ns = 0, barrier_ns = 0;
    uint64_t t0 = mono_ns(), idle_since = t0;
    natsMsgList list = {0};
    while (got < n && bad == 0) {
        uint64_t f0 = mono_ns();
        jsErrCode jerr = 0;
        s = natsSubscription_Fetch(&list, sub, batch, 1000, &jerr);
        fetch_ns += mono_ns() - f0;
        fetches++;
        if (s == NATS_TIMEOUT) {
            if (mono_ns() - idle_since > (uint64_t)WAIT_S * 1000000000u) {
                break;
            }
            continue;
        }
        if (s != NATS_OK) {
            return fail("fetch", s);
        }
        idle_since = mono_ns();
        for (int i = 0; i < list.Count; i++) {
            bad += check_seq(list.Msgs[i], seen, n) != 0;
        }
        if (relay) {
            /* Publish before ack: the batch is acked only once all of it is stored. */
            uint64_t b0 = mono_ns();
            if (keys > 0) {
                s = kvside_commit(&kv, nc, &list, fetches);
                if (s != NATS_OK) {
                    return fail("staterelay: state writes", s);
                }
            }
            for (int i = 0; i < list.Count && s == NATS_OK; i++) {
                s = js_PublishAsync(js, out, natsMsg_GetData(list.Msgs[i]), natsMsg_GetDataLength(list.Msgs[i]),
                                    NULL);
            }
            /* As gust's consumer: send the publishes now, not at the flusher's next turn. */
            if (s == NATS_OK) s = natsConnection_FlushTimeout(nc, 1000);
            jsPubOptions po;
            jsPubOptions_Init(&po);
            po.MaxWait = WAIT_S * 1000;
            if (s == NATS_OK) s = js_PublishAsyncComplete(js, &po);
            barrier_ns += mono_ns() - b0;
            if (s != NATS_OK || atomic_load(&refused) > 0) {
                return fail("relay: publish", s != NATS_OK ? s : NATS_ERR);
            }
        }
        for (int i = 0; i < list.Count; i++) {
            natsMsg_Ack(list.Msgs[i], NULL);
        }
        got += (uint64_t)list.Count;
        natsMsgList_Destroy(&list);
    }
    s = natsConnection_FlushTimeout(nc, WAIT_S * 1000);
    uint64_t t1 = mono_ns();
    int arrived = relay ? counter_wait(&c) == 0 : 1;
    uint64_t end = relay && c.last_ns > t1 ? c.last_ns : t1;
    int acked = s == NATS_OK && consumer_acked(js, name, "bench", n, why, sizeof(why)) == 0;
    int64_t stored = stream_msgs(js, name);
    uint64_t counted_sum = 0;
    for (int i = 0; i < keys; i++) {
        counted_sum += kv.count[i];
    }
    int ok = got == n && bad == 0 && arrived && acked && stored == (int64_t)(relay ? 2 * n : n) &&
             c.duplicates == 0 && c.bad == 0 && (keys == 0 || (counted_sum == n && atomic_load(&kv.conflicts) == 0));
    double secs = (double)(end - t0) / 1e9;
    printf("{\"batch\":%d,\"size\":%d,\"messages\":%" PRIu64 ",\"fetched\":%" PRIu64 ",\"bad_sequences\":%" PRIu64
           ",\"fetches\":%" PRIu64 ",\"all_acked\":%s,\"stream_msgs\":%" PRId64,
           batch, size, n, got, bad, fetches, acked ? "true" : "false", stored);
    if (relay) {
        printf(",\"arrived_unique\":%" PRIu64 ",\"arrived_duplicates\":%" PRIu64 ",\"fetch_seconds\":%.3f"
               ",\"barrier_seconds\":%.3f",
               (uint64_t)atomic_load(&c.unique), c.duplicates, (double)fetch_ns / 1e9, (double)barrier_ns / 1e9);
    }
    if (keys > 0) {
        printf(",\"keys\":%d,\"state_writes\":%ld", keys, (long)atomic_load(&kv.written));
    }
    printf(",\"store_seconds\":%.3f,\"seconds\":%.3f,\"rate\":%.0f,\"ok\":%s}\n", store_secs, secs,
           secs > 0 ? (double)n / secs : 0.0, ok ? "true" : "false");
    if (!ok) {
        fprintf(stderr, "gust-bench-bus: %s: fetched %" PRIu64 " of %" PRIu64 " (%" PRIu64
                " bad), arrived %" PRIu64 ", stream holds %" PRId64 "; %s\n",
                relay ? "relay" : "fetch", got, n, bad, (uint64_t)atomic_load(&c.unique), stored, why);
    }
    natsSubscription_Destroy(sub);
    natsSubscription_Destroy(counted);
    kvside_close(&kv, bucket);
    jsErrCode jerr = 0;
    js_DeleteStream(js, name, NULL, &jerr);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsConnection_Destroy(cc);
    free(seen);
    free(c.seen);
    return ok ? 0 : 1;
}

/* ---- path: the JetStream work of gust's end-to-end path, without gust ---- */

/* One pull consumer read the way a gust unit reads it (host/unit/pull.c): one request of
 * BATCH kept open for 500 ms on a connection that writes at once, whatever has arrived
 * taken at once; publishes and acks on a second, buffered connection. */
struct puller {
    natsConnection *now, *nc; /* requests and deliveries; publishes and acks */
    jsCtx *js;                /* nc's: the hop publishes with it */
    natsSubscription *inbox;
    char next[192], inbox_subject[128];
    int batch;
    size_t owed;
    uint64_t deadline_ns;
};

#define PULL_EXPIRES_MS 500

static natsStatus puller_open(struct puller *p, jsCtx *admin, const char *stream, const char *durable,
                              const char *filter, int batch)
{
    memset(p, 0, sizeof(*p));
    p->batch = batch;
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = durable;
    cc.FilterSubject = filter;
    cc.AckPolicy = js_AckExplicit;
    cc.MaxDeliver = -1;
    cc.MaxAckPending = batch * 8 > 1000 ? batch * 8 : 1000; /* as gust's consumer */
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddConsumer(&ci, admin, stream, &cc, NULL, &jerr);
    jsConsumerInfo_Destroy(ci);
    snprintf(p->next, sizeof(p->next), "$JS.API.CONSUMER.MSG.NEXT.%s.%s", stream, durable);
    snprintf(p->inbox_subject, sizeof(p->inbox_subject), "_PATH.%s.%s", stream, durable);
    if (s == NATS_OK) s = bus_connect(&p->now, 1);
    if (s == NATS_OK) s = bus_connect(&p->nc, 0);
    if (s == NATS_OK) s = js_open(p->nc, &p->js);
    if (s == NATS_OK) s = natsConnection_SubscribeSync(&p->inbox, p->now, p->inbox_subject);
    if (s == NATS_OK) s = natsSubscription_SetPendingLimits(p->inbox, -1, -1);
    return s;
}

static void puller_close(struct puller *p)
{
    natsSubscription_Destroy(p->inbox);
    jsCtx_Destroy(p->js);
    natsConnection_Destroy(p->nc);
    natsConnection_Destroy(p->now);
}

/* Up to batch messages into msgs: waits for the first (until the request expires), then
 * takes what has already arrived. 0 when the request ended empty. */
static int puller_next(struct puller *p, natsMsg **msgs)
{
    if (p->owed == 0 || mono_ns() >= p->deadline_ns) {
        char body[96];
        int n = snprintf(body, sizeof(body), "{\"batch\":%d,\"expires\":%d}", p->batch, PULL_EXPIRES_MS * 1000000);
        natsConnection_PublishRequest(p->now, p->next, p->inbox_subject, body, n);
        p->owed = (size_t)p->batch;
        p->deadline_ns = mono_ns() + (PULL_EXPIRES_MS + 50) * 1000000ull;
    }
    int n = 0;
    while (n < p->batch) {
        int64_t wait = 0;
        if (n == 0) {
            uint64_t now = mono_ns();
            wait = now < p->deadline_ns ? (int64_t)((p->deadline_ns - now) / 1000000) + 1 : 1;
        }
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, p->inbox, wait) != NATS_OK) {
            break;
        }
        if (natsMsg_GetDataLength(m) == 0 && natsMsg_GetReply(m) == NULL) {
            natsMsg_Destroy(m); /* a status (404, 408, 409): the request is over */
            p->owed = 0;
            break;
        }
        msgs[n++] = m;
        p->owed -= p->owed > 0;
    }
    return n;
}

/* As gust's units: acks on the buffered connection, sent by its flusher. */
static void puller_ack(struct puller *p, natsMsg **msgs, int n)
{
    for (int i = 0; i < n; i++) {
        natsConnection_PublishString(p->nc, natsMsg_GetReply(msgs[i]), "+ACK");
        natsMsg_Destroy(msgs[i]);
    }
}

struct path {
    char in[128], out[128];
    int size, batch;
    uint64_t n, rate; /* rate 0: as fast as the publish window allows */
    int window;       /* PubAcks the publisher may wait for at once */
    int ids;          /* each publish carries a Nats-Msg-Id, as gust's do */
    int sink_delay_ms; /* the sink starts this late */
    natsStatus s;
    struct puller hop, sink;
    atomic_uint_fast64_t delivered; /* unique numbers the sink has acked */
    uint8_t *seen;
    uint64_t duplicates, bad, t0, last_ns, *latency_ns;
};

/* The ingest's part: "<number> <send ns>" + filler, async JetStream publishes to NAME.in,
 * paced to rate when it is set. */
static void *path_publish(void *arg)
{
    struct path *pa = arg;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    char *buf = payload_new(pa->size);
    natsStatus s = buf != NULL ? bus_connect(&nc, 0) : NATS_NO_MEMORY;
    if (s == NATS_OK) s = js_open_window(nc, &js, pa->window);
    for (uint64_t i = 1; i <= pa->n && s == NATS_OK; i++) {
        if (pa->rate > 0) {
            uint64_t due = pa->t0 + (i - 1) * 1000000000ull / pa->rate, now = mono_ns();
            if (due > now) {
                struct timespec ts = {(time_t)((due - now) / 1000000000u), (long)((due - now) % 1000000000u)};
                nanosleep(&ts, NULL);
            }
        }
        number(buf, i);
        char t[24];
        snprintf(t, sizeof(t), " %020" PRIu64, mono_ns());
        memcpy(buf + 20, t, 21);
        char id[64];
        if (pa->ids) {
            snprintf(id, sizeof(id), "orders:%" PRIu64, i); /* as ingest's: <source>:<event id> */
        }
        s = publish_id(js, pa->in, buf, pa->size, pa->ids ? id : NULL);
        if (pa->rate > 0 && s == NATS_OK) s = natsConnection_Flush(nc); /* as ingest: each leaves at once */
    }
    if (s == NATS_OK) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = WAIT_S * 1000;
        s = js_PublishAsyncComplete(js, &po);
    }
    if (s == NATS_OK && atomic_load(&refused) > 0) s = NATS_ERR;
    if (s != NATS_OK) pa->s = s;
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    free(buf);
    return NULL;
}

/* Whether a reader should stop: another part failed, or nothing came for WAIT_S. */
static int path_give_up(struct path *pa, uint64_t *idle_since, int got)
{
    uint64_t now = mono_ns();
    if (got > 0) {
        *idle_since = now;
    }
    return pa->s != NATS_OK || now - *idle_since > (uint64_t)WAIT_S * 1000000000u;
}

/* The flow's part: publish each message to NAME.out, wait for every PubAck, ack the batch. */
static void *path_hop(void *arg)
{
    struct path *pa = arg;
    natsMsg **msgs = calloc((size_t)pa->batch, sizeof(*msgs));
    uint64_t moved = 0, idle_since = mono_ns();
    while (msgs != NULL && moved < pa->n) {
        int got = puller_next(&pa->hop, msgs);
        if (path_give_up(pa, &idle_since, got)) {
            break;
        }
        natsStatus s = NATS_OK;
        for (int i = 0; i < got && s == NATS_OK; i++) {
            const char *data = natsMsg_GetData(msgs[i]);
            int len = natsMsg_GetDataLength(msgs[i]);
            char id[64];
            if (pa->ids) { /* as a flow's emit: <unit>:<input>:<emit index> (its number here) */
                snprintf(id, sizeof(id), "flow_orders:%" PRIu64 ":0", number_of(data, len));
            }
            s = publish_id(pa->hop.js, pa->out, data, len, pa->ids ? id : NULL);
        }
        if (s == NATS_OK && got > 0) s = natsConnection_FlushTimeout(pa->hop.nc, 1000);
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = WAIT_S * 1000;
        if (s == NATS_OK && got > 0) s = js_PublishAsyncComplete(pa->hop.js, &po);
        if (s != NATS_OK || atomic_load(&refused) > 0) {
            pa->s = s != NATS_OK ? s : NATS_ERR;
            break;
        }
        puller_ack(&pa->hop, msgs, got);
        moved += (uint64_t)got;
    }
    free(msgs);
    return NULL;
}

/* The sink's part: check each number once, latency from the send time, ack. With
 * PATH_SINK_DELAY_MS set it starts that late, as a sink that fell behind. */
static void *path_sink(void *arg)
{
    struct path *pa = arg;
    if (pa->sink_delay_ms > 0) {
        struct timespec ts = {pa->sink_delay_ms / 1000, (long)(pa->sink_delay_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    natsMsg **msgs = calloc((size_t)pa->batch, sizeof(*msgs));
    uint64_t idle_since = mono_ns();
    while (msgs != NULL && atomic_load(&pa->delivered) < pa->n) {
        int got = puller_next(&pa->sink, msgs);
        if (path_give_up(pa, &idle_since, got)) {
            break;
        }
        uint64_t now = mono_ns();
        for (int i = 0; i < got; i++) {
            const char *d = natsMsg_GetData(msgs[i]);
            int len = natsMsg_GetDataLength(msgs[i]);
            uint64_t k = number_of(d, len);
            if (k < 1 || k > pa->n || len < 41) {
                pa->bad++;
            } else if (pa->seen[k]) {
                pa->duplicates++;
            } else {
                pa->seen[k] = 1;
                uint64_t sent = strtoull(d + 21, NULL, 10);
                pa->latency_ns[atomic_load(&pa->delivered)] = now > sent ? now - sent : 0;
                atomic_fetch_add(&pa->delivered, 1);
            }
        }
        puller_ack(&pa->sink, msgs, got);
        pa->last_ns = now;
    }
    free(msgs);
    return NULL;
}

static int run_path(int batch, uint64_t n, const char *name, int size, uint64_t rate, int window, int hop)
{
    const char *ids = getenv("PATH_MSG_IDS"), *delay = getenv("PATH_SINK_DELAY_MS");
    struct path pa = {.size = size, .batch = batch, .n = n, .rate = rate, .window = window, .s = NATS_OK,
                      .ids = ids != NULL && atoi(ids) > 0, .sink_delay_ms = delay != NULL ? atoi(delay) : 0};
    snprintf(pa.in, sizeof(pa.in), "%s.in", name);
    snprintf(pa.out, sizeof(pa.out), "%s.out", name);
    pa.seen = calloc(n + 1, 1);
    pa.latency_ns = calloc(n, sizeof(uint64_t));
    if (pa.seen == NULL || pa.latency_ns == NULL || size < 41) {
        fprintf(stderr, "gust-bench-bus: path: out of memory or SIZE < 41\n");
        return 1;
    }
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    natsStatus s = bus_connect(&nc, 0);
    if (s == NATS_OK) s = js_open(nc, &js);
    if (s == NATS_OK) s = stream_create(js, name);
    if (s == NATS_OK && hop) s = puller_open(&pa.hop, js, name, "hop", pa.in, batch);
    if (s == NATS_OK) s = puller_open(&pa.sink, js, name, "sink", hop ? pa.out : pa.in, batch);
    if (s != NATS_OK) {
        return fail("path: stream and consumers", s);
    }
    pthread_t pub, hop_thread, sink;
    pa.t0 = mono_ns();
    pthread_create(&sink, NULL, path_sink, &pa);
    if (hop) {
        pthread_create(&hop_thread, NULL, path_hop, &pa);
    }
    pthread_create(&pub, NULL, path_publish, &pa);
    pthread_join(pub, NULL);
    if (hop) {
        pthread_join(hop_thread, NULL);
    }
    pthread_join(sink, NULL);
    uint64_t delivered = atomic_load(&pa.delivered);
    char why_hop[256] = "", why_sink[256] = "";
    /* Consumer sequences count only their filter's messages: n each. */
    int acked = pa.s == NATS_OK && (!hop || consumer_acked(js, name, "hop", n, why_hop, sizeof(why_hop)) == 0) &&
                consumer_acked(js, name, "sink", n, why_sink, sizeof(why_sink)) == 0;
    int64_t stored = stream_msgs(js, name);
    int ok = delivered == n && pa.duplicates == 0 && pa.bad == 0 && acked && stored == (int64_t)((hop ? 2 : 1) * n);
    double secs = (double)(pa.last_ns - pa.t0) / 1e9;
    printf("{\"batch\":%d,\"size\":%d,\"messages\":%" PRIu64 ",\"rate_target\":%" PRIu64 ",\"window\":%d,\"delivered_unique\":%" PRIu64
           ",\"duplicates\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"all_acked\":%s,\"stream_msgs\":%" PRId64
           ",\"msg_ids\":%s,\"seconds\":%.3f,\"rate\":%.0f,\"latency_ms\":",
           batch, size, n, rate, window, delivered, pa.duplicates, pa.bad, acked ? "true" : "false", stored,
           pa.ids ? "true" : "false", secs, secs > 0 ? (double)n / secs : 0.0);
    print_percentiles(pa.latency_ns, delivered > 0 ? delivered : 1);
    printf(",\"ok\":%s}\n", ok ? "true" : "false");
    if (!ok) {
        fprintf(stderr, "gust-bench-bus: %s: %s, %" PRIu64 " of %" PRIu64 " delivered, stream holds %" PRId64
                "; hop: %s; sink: %s\n", hop ? "path" : "bridge", natsStatus_GetText(pa.s), delivered, n, stored,
                why_hop, why_sink);
    }
    if (hop) {
        puller_close(&pa.hop);
    }
    puller_close(&pa.sink);
    jsErrCode jerr = 0;
    js_DeleteStream(js, name, NULL, &jerr);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    free(pa.seen);
    free(pa.latency_ns);
    return ok ? 0 : 1;
}

/* ---- reqrep ---- */

static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)sub;
    (void)closure;
    if (natsMsg_GetReply(m) != NULL) {
        natsConnection_Publish(nc, natsMsg_GetReply(m), natsMsg_GetData(m), natsMsg_GetDataLength(m));
    }
    natsMsg_Destroy(m);
}

static int run_reqrep(uint64_t n, int size, int asap)
{
    natsConnection *req = NULL, *resp = NULL;
    natsSubscription *sub = NULL;
    uint64_t *lat = calloc(n, sizeof(*lat));
    char *buf = payload_new(size);
    if (lat == NULL || buf == NULL) {
        return fail("reqrep", NATS_NO_MEMORY);
    }
    natsStatus s = bus_connect(&resp, asap);
    if (s == NATS_OK) s = bus_connect(&req, asap);
    if (s == NATS_OK) s = natsConnection_Subscribe(&sub, resp, "bus.req", on_request, NULL);
    if (s == NATS_OK) s = natsConnection_Flush(resp);
    if (s != NATS_OK) {
        return fail("reqrep: connect", s);
    }
    /* Warm up: the first request sets up the requester's reply subscription. */
    for (int i = 0; i < 50 && s == NATS_OK; i++) {
        natsMsg *r = NULL;
        number(buf, 0);
        s = natsConnection_Request(&r, req, "bus.req", buf, size, 5000);
        natsMsg_Destroy(r);
    }
    uint64_t wrong = 0, t0 = mono_ns();
    for (uint64_t i = 1; i <= n && s == NATS_OK; i++) {
        natsMsg *r = NULL;
        number(buf, i);
        uint64_t a = mono_ns();
        s = natsConnection_Request(&r, req, "bus.req", buf, size, 5000);
        lat[i - 1] = mono_ns() - a;
        if (s == NATS_OK && number_of(natsMsg_GetData(r), natsMsg_GetDataLength(r)) != i) {
            wrong++;
        }
        natsMsg_Destroy(r);
    }
    double secs = (double)(mono_ns() - t0) / 1e9;
    if (s != NATS_OK || wrong > 0) {
        fprintf(stderr, "gust-bench-bus: reqrep: %s, %" PRIu64 " wrong replies\n", natsStatus_GetText(s), wrong);
        return 1;
    }
    printf("{\"requests\":%" PRIu64 ",\"size\":%d,\"send_asap\":%s,\"wrong_replies\":0,\"seconds\":%.3f,"
           "\"rate\":%.0f,\"latency_ms\":",
           n, size, asap ? "true" : "false", secs, (double)n / secs);
    print_percentiles(lat, n);
    printf(",\"ok\":true}\n");
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(req);
    natsConnection_Destroy(resp);
    free(lat);
    free(buf);
    return 0;
}

/* ---- flood ---- */

struct publisher {
    natsConnection *nc;
    int index, size;
    uint64_t n;
    pthread_barrier_t *start;
    uint64_t t0, t1;
    natsStatus s;
};

/* Payload: "<global number, 20 digits> <send ns, 20 digits>" then filler. */
static void *publish_burst(void *arg)
{
    struct publisher *p = arg;
    char *buf = payload_new(p->size);
    pthread_barrier_wait(p->start);
    p->t0 = mono_ns();
    p->s = buf != NULL ? NATS_OK : NATS_NO_MEMORY;
    for (uint64_t i = 1; i <= p->n && p->s == NATS_OK; i++) {
        number(buf, (uint64_t)p->index * p->n + i);
        char t[24];
        snprintf(t, sizeof(t), " %020" PRIu64, mono_ns());
        memcpy(buf + 20, t, 21);
        p->s = natsConnection_Publish(p->nc, "bus.flood", buf, p->size);
    }
    if (p->s == NATS_OK) p->s = natsConnection_FlushTimeout(p->nc, WAIT_S * 1000);
    p->t1 = mono_ns();
    free(buf);
    return NULL;
}

static int run_flood(int pubs, uint64_t n, int size)
{
    uint64_t total = (uint64_t)pubs * n;
    struct counter c;
    struct publisher *p = calloc((size_t)pubs, sizeof(*p));
    pthread_t *th = calloc((size_t)pubs, sizeof(*th));
    if (p == NULL || th == NULL || size < 41 || counter_init(&c, total) != 0 ||
        (c.latency_ns = calloc(total, sizeof(uint64_t))) == NULL) {
        fprintf(stderr, "gust-bench-bus: flood: out of memory or SIZE < 41\n");
        return 1;
    }
    natsConnection *subc = NULL;
    natsSubscription *sub = NULL;
    natsStatus s = bus_connect(&subc, 0);
    if (s == NATS_OK) s = subscribe_counter(subc, &sub, "bus.flood", &c);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)pubs + 1);
    for (int i = 0; i < pubs && s == NATS_OK; i++) {
        p[i] = (struct publisher){.index = i, .size = size, .n = n, .start = &start};
        s = bus_connect(&p[i].nc, 0);
    }
    if (s != NATS_OK) {
        return fail("flood: connect", s);
    }
    for (int i = 0; i < pubs; i++) {
        pthread_create(&th[i], NULL, publish_burst, &p[i]);
    }
    pthread_barrier_wait(&start);
    uint64_t burst_end = 0, t0 = UINT64_MAX;
    for (int i = 0; i < pubs; i++) {
        pthread_join(th[i], NULL);
        s = s == NATS_OK ? p[i].s : s;
        t0 = p[i].t0 < t0 ? p[i].t0 : t0;
        burst_end = p[i].t1 > burst_end ? p[i].t1 : burst_end;
    }
    int complete = s == NATS_OK && counter_wait(&c) == 0;
    int ok = complete && c.duplicates == 0 && c.bad == 0;
    double drain = (double)(c.last_ns - t0) / 1e9;
    printf("{\"publishers\":%d,\"per_publisher\":%" PRIu64 ",\"size\":%d,\"messages\":%" PRIu64
           ",\"received\":%" PRIu64 ",\"unique\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"bad\":%" PRIu64
           ",\"burst_seconds\":%.3f,\"drain_seconds\":%.3f,\"rate\":%.0f,\"latency_ms\":",
           pubs, n, size, total, c.received, (uint64_t)atomic_load(&c.unique), c.duplicates, c.bad,
           (double)(burst_end - t0) / 1e9, drain, drain > 0 ? (double)total / drain : 0.0);
    print_percentiles(c.latency_ns, c.nlatency > 0 ? c.nlatency : 1);
    printf(",\"ok\":%s}\n", ok ? "true" : "false");
    if (!ok) {
        fprintf(stderr, "gust-bench-bus: flood: %s, %" PRIu64 " of %" PRIu64 " arrived\n", natsStatus_GetText(s),
                (uint64_t)atomic_load(&c.unique), total);
    }
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(subc);
    for (int i = 0; i < pubs; i++) {
        natsConnection_Destroy(p[i].nc);
    }
    pthread_barrier_destroy(&start);
    free(p);
    free(th);
    free(c.seen);
    free(c.latency_ns);
    return ok ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: gust-bench-bus URL core SIZE N | jspub SIZE N NAME [WINDOW [IDS]] |\n"
                    "       fetch BATCH N NAME [SIZE] | relay BATCH N NAME [SIZE] |\n"
                    "       staterelay BATCH N NAME KEYS [SIZE] |\n"
                    "       path BATCH N NAME SIZE RATE [WINDOW] |\n"
                    "       bridge BATCH N NAME SIZE WINDOW | reqrep N SIZE ASAP | flood PUBS N SIZE\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        return usage();
    }
    url = argv[1];
    const char *test = argv[2];
    long a = atol(argv[3]), b = atol(argv[4]);
    if (a < 1 || b < 1) {
        return usage();
    }
    int rc;
    if (strcmp(test, "core") == 0 && a >= 20) {
        rc = run_core((int)a, (uint64_t)b);
    } else if (strcmp(test, "jspub") == 0 && argc > 5 && a >= 20) {
        int64_t window = argc > 6 ? atoll(argv[6]) : 4096;
        rc = window > 0 ? run_jspub((int)a, (uint64_t)b, argv[5], window, argc > 7 && atoi(argv[7]) != 0) : usage();
    } else if ((strcmp(test, "fetch") == 0 || strcmp(test, "relay") == 0) && argc > 5) {
        int size = argc > 6 ? atoi(argv[6]) : 400;
        rc = size >= 20 ? run_fetch((int)a, (uint64_t)b, argv[5], size, test[0] == 'r', 0) : usage();
    } else if (strcmp(test, "staterelay") == 0 && argc > 6 && atoi(argv[6]) > 0) {
        int size = argc > 7 ? atoi(argv[7]) : 400;
        rc = size >= 20 ? run_fetch((int)a, (uint64_t)b, argv[5], size, 1, atoi(argv[6])) : usage();
    } else if (strcmp(test, "path") == 0 && argc > 7) {
        int window = argc > 8 ? atoi(argv[8]) : 4096;
        rc = window > 0 ? run_path((int)a, (uint64_t)b, argv[5], atoi(argv[6]), strtoull(argv[7], NULL, 10), window, 1)
                        : usage();
    } else if (strcmp(test, "bridge") == 0 && argc > 7 && atoi(argv[7]) > 0) {
        rc = run_path((int)a, (uint64_t)b, argv[5], atoi(argv[6]), 0, atoi(argv[7]), 0);
    } else if (strcmp(test, "reqrep") == 0 && argc > 5 && b >= 20) {
        rc = run_reqrep((uint64_t)a, (int)b, atoi(argv[5]));
    } else if (strcmp(test, "flood") == 0 && argc > 5) {
        rc = run_flood((int)a, (uint64_t)b, atoi(argv[5]));
    } else {
        return usage();
    }
    nats_Close();
    return rc;
}
