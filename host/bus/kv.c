#include "kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_int.h"

struct gust_kv {
    jsCtx *js;
    kvStore *store;
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

int gust_kv_open(struct gust_bus *bus, const char *bucket, int replicas, int64_t wait_ms, struct gust_kv **out,
                 char *why, size_t why_size)
{
    struct gust_kv *kv = calloc(1, sizeof(*kv));
    if (kv == NULL) {
        snprintf(why, why_size, "out of memory");
        return GUST_ENOMEM;
    }
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = wait_ms;
    natsStatus s = natsConnection_JetStream(&kv->js, gust_bus__conn(bus), &o);
    if (s == NATS_OK) {
        s = js_KeyValue(&kv->store, kv->js, bucket);
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

void gust_kv_close(struct gust_kv *kv)
{
    if (kv == NULL) {
        return;
    }
    kvStore_Destroy(kv->store);
    jsCtx_Destroy(kv->js);
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
