#include "kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_int.h"

/* Most writes one gust_kv_write_all has in flight; beyond, a send waits for room. */
#define WRITE_MAX_PENDING 4096

struct gust_kv {
    struct gust_bus *bus;
    natsConnection *nc;
    jsCtx *js;
    int64_t wait_ms;
    kvStore *store;
    char stream[140]; /* "KV_<bucket>": the stream behind the bucket */
    char prefix[140]; /* "$KV.<bucket>.": a key's subject is prefix + key */
    size_t prefix_len;
    /* The writes of the gust_kv_write_all running, in key order: the PubAck callback
     * (on a NATS thread) finds its write by subject. */
    struct gust_kv_write **order;
    size_t nbatch;
    size_t cap_order;
};

static struct gust_kv_write *write_of(struct gust_kv *kv, const char *subject)
{
    if (subject == NULL || strncmp(subject, kv->prefix, kv->prefix_len) != 0) {
        return NULL;
    }
    const char *key = subject + kv->prefix_len;
    size_t lo = 0, hi = kv->nbatch;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        struct gust_kv_write *w = kv->order[mid];
        int c = strcmp(key, w->key);
        if (c == 0) {
            return w;
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

/* A NATS thread: the PubAck (or the failure, or the timeout) of one write. The library
 * hands the message back to be destroyed here. */
static void on_write_done(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    struct gust_kv *kv = closure;
    struct gust_kv_write *w = write_of(kv, natsMsg_GetSubject(msg));
    if (w != NULL) {
        if (pa != NULL) {
            w->rc = 0;
            w->revision = pa->Sequence;
        } else {
            /* The server refusing the expected revision is the condition failing; a
             * timeout or a lost connection is not knowing. */
            w->rc = pae->ErrCode == JSStreamWrongLastSequenceErr ? GUST_EAGAIN : GUST_EIO;
            snprintf(w->why, sizeof(w->why), "%s", pae->ErrText != NULL ? pae->ErrText : "failed");
        }
    }
    natsMsg_Destroy(msg);
}

static int fail(natsStatus s, char *why, size_t why_size)
{
    snprintf(why, why_size, "%s", gust_bus__reason(s));
    return s == NATS_NOT_FOUND ? GUST_ENOTFOUND : GUST_EIO;
}

/* A write with a condition: the server answering with an error (NATS_ERR: "wrong last
 * sequence") is the condition failing; anything else (a timeout, no connection) is
 * not knowing. */
static int fail_cas(natsStatus s, char *why, size_t why_size)
{
    int rc = fail(s, why, why_size);
    return s == NATS_ERR ? GUST_EAGAIN : rc;
}

/* Binds bucket, or makes it when `create`. */
static int open_bucket(struct gust_bus *bus, const char *bucket, int create, int replicas, int64_t wait_ms,
                       struct gust_kv **out, char *why, size_t why_size)
{
    struct gust_kv *kv = calloc(1, sizeof(*kv));
    if (kv == NULL) {
        snprintf(why, why_size, "out of memory");
        return GUST_ENOMEM;
    }
    snprintf(kv->stream, sizeof(kv->stream), "KV_%s", bucket);
    snprintf(kv->prefix, sizeof(kv->prefix), "$KV.%s.", bucket);
    kv->prefix_len = strlen(kv->prefix);
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = wait_ms;
    o.PublishAsync.AckHandler = on_write_done;
    o.PublishAsync.AckHandlerClosure = kv;
    o.PublishAsync.MaxPending = WRITE_MAX_PENDING;
    o.PublishAsync.StallWait = wait_ms;
    kv->bus = bus;
    kv->wait_ms = wait_ms;
    kv->nc = gust_bus__conn(bus);
    natsStatus s = natsConnection_JetStream(&kv->js, kv->nc, &o);
    if (s == NATS_OK) {
        s = js_KeyValue(&kv->store, kv->js, bucket);
        if (s == NATS_NOT_FOUND && !create) {
            snprintf(why, why_size, "no bucket %s", bucket);
            gust_kv_close(kv);
            return GUST_ENOTFOUND;
        }
        if (s != NATS_OK) {
            kvConfig kc;
            kvConfig_Init(&kc);
            kc.Bucket = bucket;
            kc.History = 1;
            kc.StorageType = js_FileStorage;
            kc.Replicas = replicas;
            s = js_CreateKeyValue(&kv->store, kv->js, &kc);
        }
    }
    if (s != NATS_OK) {
        int rc = fail(s, why, why_size);
        gust_kv_close(kv);
        return rc == GUST_ENOTFOUND ? GUST_EIO : rc;
    }
    *out = kv;
    return 0;
}

int gust_kv_open(struct gust_bus *bus, const char *bucket, int replicas, int64_t wait_ms, struct gust_kv **out,
                 char *why, size_t why_size)
{
    return open_bucket(bus, bucket, 1, replicas, wait_ms, out, why, why_size);
}

int gust_kv_open_existing(struct gust_bus *bus, const char *bucket, int64_t wait_ms, struct gust_kv **out, char *why,
                          size_t why_size)
{
    return open_bucket(bus, bucket, 0, 1, wait_ms, out, why, why_size);
}

void gust_kv_close(struct gust_kv *kv)
{
    if (kv == NULL) {
        return;
    }
    kvStore_Destroy(kv->store);
    jsCtx_Destroy(kv->js);
    free(kv->order);
    free(kv);
}

int gust_kv_get(struct gust_kv *kv, const char *key, char *value, size_t size, uint64_t *rev, char *why,
                size_t why_size)
{
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, kv->store, key);
    if (s != NATS_OK) {
        return fail(s, why, why_size);
    }
    const char *v = kvEntry_Value(e);
    int len = kvEntry_ValueLen(e);
    snprintf(value, size, "%.*s", v != NULL && len > 0 ? len : 0, v != NULL ? v : "");
    *rev = kvEntry_Revision(e);
    kvEntry_Destroy(e);
    return 0;
}

int gust_kv_create(struct gust_kv *kv, const char *key, const void *value, size_t len, uint64_t *rev, char *why,
                   size_t why_size)
{
    natsStatus s = kvStore_Create(rev, kv->store, key, value, (int)len);
    return s == NATS_OK ? 0 : fail_cas(s, why, why_size);
}

int gust_kv_update(struct gust_kv *kv, const char *key, const void *value, size_t len, uint64_t expected,
                   uint64_t *rev, char *why, size_t why_size)
{
    natsStatus s = kvStore_Update(rev, kv->store, key, value, (int)len, expected);
    return s == NATS_OK ? 0 : fail_cas(s, why, why_size);
}

int gust_kv_put(struct gust_kv *kv, const char *key, const void *value, size_t len, uint64_t *rev, char *why,
                size_t why_size)
{
    natsStatus s = kvStore_Put(rev, kv->store, key, value, (int)len);
    return s == NATS_OK ? 0 : fail(s, why, why_size);
}

int gust_kv_delete(struct gust_kv *kv, const char *key)
{
    return kvStore_Delete(kv->store, key) == NATS_OK ? 0 : GUST_EIO;
}

/* The key's last message, read from the bucket's stream rather than with kvStore_Get,
 * which hides deletions: a deleted key's next write must name the deletion's
 * revision (kvStore_Create looks it up with a second request when a create fails). */
int gust_kv_read(struct gust_kv *kv, const char *key, char **value, size_t *len, uint64_t *rev, char *why,
                 size_t why_size)
{
    *value = NULL;
    *len = 0;
    *rev = 0;
    char subject[1200];
    if ((size_t)snprintf(subject, sizeof(subject), "%s%s", kv->prefix, key) >= sizeof(subject)) {
        snprintf(why, why_size, "key too long");
        return GUST_EINVAL;
    }
    /* On the connection that writes at once: on the buffered one a request would wait
     * for the flusher first. */
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = kv->wait_ms;
    natsStatus s = js_GetLastMsg(&m, gust_bus__js(kv->bus), kv->stream, subject, &o, &jerr);
    if (s == NATS_NOT_FOUND) {
        return 0;
    }
    if (s != NATS_OK) {
        return fail(s, why, why_size);
    }
    *rev = natsMsg_GetSequence(m);
    const char *op = NULL;
    int deleted = natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && op != NULL &&
                  (strcmp(op, "DEL") == 0 || strcmp(op, "PURGE") == 0);
    if (!deleted) {
        int n = natsMsg_GetDataLength(m);
        *value = malloc((size_t)n + 1);
        if (*value == NULL) {
            natsMsg_Destroy(m);
            snprintf(why, why_size, "out of memory");
            return GUST_ENOMEM;
        }
        memcpy(*value, natsMsg_GetData(m), (size_t)n);
        (*value)[n] = '\0';
        *len = (size_t)n;
    }
    natsMsg_Destroy(m);
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp((*(struct gust_kv_write *const *)a)->key, (*(struct gust_kv_write *const *)b)->key);
}

size_t gust_kv_write_all(struct gust_kv *kv, struct gust_kv_write *w, size_t n, int64_t wait_ms)
{
    if (n == 0) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        w[i].rc = GUST_EIO;
        w[i].revision = 0;
        snprintf(w[i].why, sizeof(w[i].why), "no answer within %lld ms", (long long)wait_ms);
    }
    if (n > kv->cap_order) {
        struct gust_kv_write **o = realloc(kv->order, n * sizeof(*o));
        if (o == NULL) {
            for (size_t i = 0; i < n; i++) {
                snprintf(w[i].why, sizeof(w[i].why), "out of memory");
            }
            return n;
        }
        kv->order = o;
        kv->cap_order = n;
    }
    for (size_t i = 0; i < n; i++) {
        kv->order[i] = &w[i];
    }
    qsort(kv->order, n, sizeof(*kv->order), by_key);
    kv->nbatch = n;
    for (size_t i = 0; i < n; i++) {
        char subject[1200];
        natsMsg *m = NULL;
        natsStatus s = NATS_INVALID_ARG;
        if ((size_t)snprintf(subject, sizeof(subject), "%s%s", kv->prefix, w[i].key) < sizeof(subject)) {
            s = natsMsg_Create(&m, subject, NULL, w[i].value, (int)w[i].len);
        }
        if (s == NATS_OK) {
            jsPubOptions po;
            jsPubOptions_Init(&po);
            if (w[i].cas && w[i].expected == 0) {
                po.ExpectNoMessage = true;
            } else if (w[i].cas) {
                po.ExpectLastSubjectSeq = w[i].expected;
            }
            s = js_PublishMsgAsync(kv->js, &m, &po);
        }
        if (s != NATS_OK) {
            /* Not sent (the library gave the message back): over the server's
             * max_payload it never can be. */
            w[i].rc = s == NATS_MAX_PAYLOAD ? GUST_EINVAL : GUST_EIO;
            snprintf(w[i].why, sizeof(w[i].why), "%s", gust_bus__reason(s));
            natsMsg_Destroy(m);
        }
    }
    /* Out now rather than when the library's flusher next runs; the PING's round trip
     * overlaps the PubAcks waited for anyway (as the consumer core's barrier does). */
    natsConnection_FlushTimeout(kv->nc, wait_ms);
    jsPubOptions co;
    jsPubOptions_Init(&co);
    co.MaxWait = wait_ms;
    if (js_PublishAsyncComplete(kv->js, &co) != NATS_OK) {
        /* What is still pending is taken back (its rc stays "no answer"), so that no
         * late answer reaches a batch that is over. (A timeout per write would cost
         * the library a timer entry for each.) */
        natsMsgList pending = {0};
        if (js_PublishAsyncGetPendingList(&pending, kv->js) == NATS_OK) {
            natsMsgList_Destroy(&pending);
        }
        /* An answer being handled as they were taken back still counts: wait for it. */
        co.MaxWait = 1000;
        js_PublishAsyncComplete(kv->js, &co);
    }
    kv->nbatch = 0;
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        failed += w[i].rc != 0;
    }
    return failed;
}

int gust_kv_keys(struct gust_kv *kv, void (*fn)(void *ud, const char *key), void *ud, char *why, size_t why_size)
{
    kvKeysList keys = {0};
    natsStatus s = kvStore_Keys(&keys, kv->store, NULL);
    if (s == NATS_NOT_FOUND) { /* an empty bucket */
        return 0;
    }
    if (s != NATS_OK) {
        return fail(s, why, why_size);
    }
    for (int i = 0; i < keys.Count; i++) {
        fn(ud, keys.Keys[i]);
    }
    kvKeysList_Destroy(&keys);
    return 0;
}
