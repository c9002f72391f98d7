#include "bucket.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bus/bus.h"

natsStatus gust_bucket_open(struct gust_bus *bus, const char *bucket, int replicas, int64_t wait_ms, jsCtx **js,
                            kvStore **kv)
{
    natsStatus s = NATS_OK;
    if (*js == NULL) {
        jsOptions o;
        jsOptions_Init(&o);
        o.Wait = wait_ms;
        s = natsConnection_JetStream(js, gust_bus_conn(bus), &o);
    }
    if (s == NATS_OK) {
        s = js_KeyValue(kv, *js, bucket);
        if (s != NATS_OK) {
            kvConfig kc;
            kvConfig_Init(&kc);
            kc.Bucket = bucket;
            kc.History = 1;
            kc.StorageType = js_FileStorage;
            kc.Replicas = replicas;
            s = js_CreateKeyValue(kv, *js, &kc);
        }
    }
    if (s != NATS_OK) {
        *kv = NULL;
    }
    return s;
}

/* The string or number of "name" in json, into out ("" when absent). */
static void field(const char *json, const char *name, char *out, size_t size)
{
    char pattern[32];
    snprintf(pattern, sizeof(pattern), "\"%s\":", name);
    const char *p = strstr(json, pattern);
    out[0] = '\0';
    if (p == NULL) {
        return;
    }
    p += strlen(pattern);
    if (*p == '"') {
        const char *end = strchr(++p, '"');
        if (end != NULL) {
            snprintf(out, size, "%.*s", (int)(end - p), p);
        }
    } else {
        snprintf(out, size, "%.*s", (int)strspn(p, "0123456789"), p);
    }
}

int64_t gust_entry_read(kvEntry *e, char *holder, size_t hsize, char *config, size_t csize)
{
    const char *v = kvEntry_Value(e);
    int len = kvEntry_ValueLen(e);
    char text[400], expires[24];
    snprintf(text, sizeof(text), "%.*s", v != NULL && len > 0 ? len : 0, v != NULL ? v : "");
    field(text, "holder", holder, hsize);
    if (config != NULL) {
        field(text, "config", config, csize);
    }
    field(text, "expires_ms", expires, sizeof(expires));
    return strtoll(expires, NULL, 10);
}

const char *gust_nats_reason(natsStatus s)
{
    const char *last = nats_GetLastError(NULL);
    return last != NULL && last[0] != '\0' ? last : natsStatus_GetText(s);
}

int64_t gust_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gust_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    until.tv_sec += ms / 1000 + until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(cond, lock, &until);
}
