#include "kv.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_int.h"
#include "retire.h"
#include "gust/sdk.h" /* gust_u64_dec */

struct gust_kv {
    struct gust_bus *bus;
    natsConnection *nc;
    jsCtx *js;
    int64_t wait_ms;
    kvStore *store;
    char stream[140]; /* "KV_<bucket>": the stream behind the bucket */
    char prefix[140]; /* "$KV.<bucket>.": a key's subject is prefix + key */
    size_t prefix_len;
    struct write_slot *slots; /* gust_kv_write_all's, kept between calls */
    size_t cap_slots;
};

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
    free(kv->slots);
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

/* One gust_kv_write_all: how many of its writes are still unanswered. */
struct write_group {
    pthread_mutex_t lock;
    pthread_cond_t done;
    size_t left;
};

/* What a write's PubAck callback needs: its write and its group. */
struct write_slot {
    struct write_group *g;
    struct gust_kv_write *w;
};

/* The bus's thread: a write's PubAck (or its failure, or its expiry after the bus's
 * publish_timeout). JetStream refuses a write whose expected revision is not the key's
 * last with "wrong last sequence" (error 10071): the condition failing; the bus hands
 * on the description only, as puback.c reads the store being full. */
static void on_write_done(void *ud, int status, uint64_t seq, const char *error)
{
    struct write_slot *slot = ud;
    struct gust_kv_write *w = slot->w;
    if (status == 0) {
        w->rc = 0;
        w->revision = seq;
    } else {
        w->rc = status == GUST_PUBLISH_REFUSED                                  ? GUST_EINVAL
                : error != NULL && strstr(error, "wrong last sequence") != NULL ? GUST_EAGAIN
                                                                                : GUST_EIO;
        snprintf(w->why, sizeof(w->why), "%s", error != NULL && error[0] != '\0' ? error : "failed");
    }
    struct write_group *g = slot->g;
    pthread_mutex_lock(&g->lock);
    if (--g->left == 0) {
        pthread_cond_signal(&g->done);
    }
    pthread_mutex_unlock(&g->lock);
}

/* Each write is a publish on the bus's own path (host/bus/bus.c): its header written
 * once into the message, its PubAck read by hand on the bus's reply subscription. Through
 * nats.c's JetStream context each cost a header map, a reply inbox and an entry in its
 * table of pending publishes, the PubAck's JSON parsed into allocations, and the message
 * freed on the library's collector thread. */
size_t gust_kv_write_all(struct gust_kv *kv, struct gust_kv_write *w, size_t n, int64_t wait_ms)
{
    if (n == 0) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        w[i].rc = GUST_EIO;
        w[i].revision = 0;
        w[i].why[0] = '\0';
    }
    if (n > kv->cap_slots) {
        struct write_slot *v = realloc(kv->slots, n * sizeof(*v));
        if (v == NULL) {
            for (size_t i = 0; i < n; i++) {
                snprintf(w[i].why, sizeof(w[i].why), "out of memory");
            }
            return n;
        }
        kv->slots = v;
        kv->cap_slots = n;
    }
    struct write_group g = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER, .left = n};
    size_t sent = 0;
    for (size_t i = 0; i < n; i++) {
        char subject[1200], expected[24];
        size_t klen = strlen(w[i].key);
        if (kv->prefix_len + klen >= sizeof(subject)) {
            w[i].rc = GUST_EINVAL;
            snprintf(w[i].why, sizeof(w[i].why), "key too long");
            continue;
        }
        memcpy(subject, kv->prefix, kv->prefix_len);
        memcpy(subject + kv->prefix_len, w[i].key, klen + 1);
        /* 0: the key must have no message yet (what nats.c's ExpectNoMessage sends). */
        struct gust_header cond = {.name = "Nats-Expected-Last-Subject-Sequence", .value = expected};
        expected[gust_u64_dec(w[i].cas ? w[i].expected : 0, expected)] = '\0';
        struct gust_pub p = {.subject = subject,
                             .data = w[i].value,
                             .len = w[i].len,
                             .headers = w[i].cas ? &cond : NULL,
                             .nheaders = w[i].cas ? 1 : 0};
        kv->slots[sent] = (struct write_slot){.g = &g, .w = &w[i]};
        if (gust_bus_publish_msg(kv->bus, &p, on_write_done, &kv->slots[sent], NULL) != 0) {
            snprintf(w[i].why, sizeof(w[i].why), "not sent: the bus is not connected or too many publishes wait");
            continue;
        }
        sent++;
    }
    /* Out now rather than when the library's flusher next runs; the PING's round trip
     * overlaps the PubAcks waited for anyway (as the consumer core's barrier does). */
    natsConnection_FlushTimeout(kv->nc, wait_ms);
    /* Every publish the bus took completes: answered, failed, or expired by the bus's
     * pending ring after publish_timeout (which the bucket's wait is). */
    pthread_mutex_lock(&g.lock);
    g.left -= n - sent;
    while (g.left > 0) {
        pthread_cond_wait(&g.done, &g.lock);
    }
    pthread_mutex_unlock(&g.lock);
    pthread_cond_destroy(&g.done);
    pthread_mutex_destroy(&g.lock);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        failed += w[i].rc != 0;
    }
    return failed;
}

int gust_kv_each(struct gust_kv *kv, const char *keys,
                 void (*fn)(void *ud, const char *key, const char *value, size_t len, uint64_t rev), void *ud,
                 char *why, size_t why_size)
{
    kvWatcher *w = NULL;
    kvWatchOptions o;
    kvWatchOptions_Init(&o);
    natsStatus s = kvStore_Watch(&w, kv->store, keys, &o);
    if (s != NATS_OK) {
        return fail(s, why, why_size);
    }
    int64_t deadline = gust_clock_mono_ms() + kv->wait_ms;
    int rc = GUST_EIO;
    snprintf(why, why_size, "not every key within %lld ms", (long long)kv->wait_ms);
    for (int64_t left = kv->wait_ms; left > 0; left = deadline - gust_clock_mono_ms()) {
        kvEntry *e = NULL;
        s = kvWatcher_Next(&e, w, left);
        if (s != NATS_OK) {
            rc = fail(s, why, why_size);
            break;
        }
        if (e == NULL) { /* the watcher's marker: every key's last value came */
            rc = 0;
            break;
        }
        int put = kvEntry_Operation(e) == kvOp_Put;
        fn(ud, kvEntry_Key(e), put ? kvEntry_Value(e) : NULL, put ? (size_t)kvEntry_ValueLen(e) : 0,
           kvEntry_Revision(e));
        kvEntry_Destroy(e);
    }
    gust_retire_watcher(kv->nc, w);
    return rc;
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
