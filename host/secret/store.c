/* The process's secret store: every reference, its value and its state, behind one lock.
 * Fetches run outside the lock (a Vault that does not answer never holds up a render);
 * a value replaced or forgotten is zeroed before it is freed. */
#define _GNU_SOURCE /* explicit_bzero */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/file.h"
#include "../common/log.h"
#include "secret.h"
#include "secret_int.h"

struct entry {
    char *ref;
    struct gust_buf value; /* valid when resolved */
    int resolved;
    int64_t resolved_at; /* wall ms of the last successful fetch, 0: never */
    int64_t checked_at;  /* wall ms of the last fetch */
    char error[300];
};

struct blocked {
    char unit[128];
    char ref[256];
    char why[300];
};

static struct {
    pthread_mutex_t lock;
    /* Held by a whole round of fetches, and to replace the store: a fetch reads the
     * store without the lock above. Taken before it, never after. */
    pthread_mutex_t fetch_lock;
    pthread_cond_t wake;
    struct secret_store store;
    struct entry *v;
    size_t n, cap;
    struct blocked *blocked;
    size_t nblocked;
    int64_t refresh_ms;
    pthread_t thread;
    int started, stopping;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .fetch_lock = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER};

static void entry_wipe(struct entry *e)
{
    secret_buf_wipe(&e->value);
    e->resolved = 0;
}

static struct entry *find(const char *ref, size_t len)
{
    for (size_t i = 0; i < S.n; i++) {
        if (strlen(S.v[i].ref) == len && memcmp(S.v[i].ref, ref, len) == 0) {
            return &S.v[i];
        }
    }
    return NULL;
}

static struct entry *add(const char *ref, size_t len)
{
    if (S.n == S.cap) {
        size_t cap = S.cap ? S.cap * 2 : 16;
        struct entry *v = realloc(S.v, cap * sizeof(*v));
        if (v == NULL) {
            return NULL;
        }
        S.v = v;
        S.cap = cap;
    }
    struct entry *e = &S.v[S.n];
    *e = (struct entry){.ref = strndup(ref, len)};
    if (e->ref == NULL) {
        return NULL;
    }
    S.n++;
    return e;
}

static void store_clear(struct secret_store *s)
{
    free(s->file);
    free(s->vault_host);
    free(s->vault_mount);
    secret_str_wipe(s->token);
    free(s->token_error);
    gust_tls_destroy(s->tls);
    *s = (struct secret_store){0};
}

/* Splits "http://host:port" or "https://host:port" (a path after it is ignored), whose
 * scheme, host and port the schema has checked (GUST_T_URL). Returns 1 for https, -1
 * for a URL with credentials (Vault takes its token from vault_token_file). */
static int parse_addr(const char *addr, struct secret_store *s, char *why, size_t whysz)
{
    int tls = strncmp(addr, "https://", 8) == 0;
    const char *h = addr + (tls ? 8 : 7);
    size_t hl = strcspn(h, ":/");
    if (memchr(h, '@', strcspn(h, "/?#")) != NULL) {
        snprintf(why, whysz, "vault_addr: no credentials in the URL: the token comes from vault_token_file");
        return -1;
    }
    s->vault_port = h[hl] == ':' ? atoi(h + hl + 1) : tls ? 443 : 80;
    s->vault_host = strndup(h, hl);
    return tls;
}

/* The store k describes, made anew (the token file read again). A problem with it
 * becomes every reference's error, so that /secrets and /healthz say it. */
static void store_build(const struct gust_secrets_keys *k, struct secret_store *s, char *why, size_t whysz)
{
    *s = (struct secret_store){.kind = STORE_NONE};
    why[0] = '\0';
    if (k == NULL) {
        return;
    }
    s->timeout_ms = k->timeout;
    if (k->vault_addr != NULL) {
        s->kind = STORE_VAULT;
        s->vault_mount = strdup(k->vault_mount);
        int tls = parse_addr(k->vault_addr, s, why, whysz);
        struct gust_err err = {{0}};
        if (tls == 1 && gust_tls_create(&s->tls, k->vault_ca, NULL, NULL, &err) != 0) {
            snprintf(why, whysz, "vault_ca: %.250s", err.msg);
        }
        if (why[0] == '\0' && k->vault_token_file != NULL) {
            struct gust_buf t = {0};
            if (gust_file_read(k->vault_token_file, &t) != 0) {
                snprintf(why, whysz, "vault_token_file %s: %s", k->vault_token_file, strerror(errno));
            } else {
                while (t.len > 0 &&
                       (t.data[t.len - 1] == '\n' || t.data[t.len - 1] == '\r' || t.data[t.len - 1] == ' ')) {
                    t.len--;
                }
                s->token = strndup(t.data != NULL ? t.data : "", t.len);
            }
            secret_buf_wipe(&t);
        }
        if (why[0] != '\0') {
            s->token_error = strdup(why);
        }
    } else if (k->file != NULL) {
        s->kind = STORE_FILE;
        s->file = strdup(k->file);
    } else if (k->env) {
        s->kind = STORE_ENV;
    }
}

/* Fetches every reference known now (only `only` when given) and puts the outcomes in;
 * the list is copied under the lock, the network used without it. */
static size_t refresh(const char *only)
{
    pthread_mutex_lock(&S.fetch_lock);
    pthread_mutex_lock(&S.lock);
    size_t n = only != NULL ? 1 : S.n;
    char **refs = calloc(n + 1, sizeof(*refs));
    for (size_t i = 0; refs != NULL && i < n; i++) {
        refs[i] = strdup(only != NULL ? only : S.v[i].ref);
    }
    pthread_mutex_unlock(&S.lock);
    if (refs == NULL) {
        pthread_mutex_unlock(&S.fetch_lock);
        return n;
    }
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        struct gust_buf val = {0};
        char why[300] = "";
        int rc = refs[i] != NULL ? secret_fetch(&S.store, refs[i], &val, why, sizeof(why)) : -1;
        int64_t now = gust_clock_wall_ms();
        pthread_mutex_lock(&S.lock);
        struct entry *e = refs[i] != NULL ? find(refs[i], strlen(refs[i])) : NULL;
        if (e != NULL) {
            e->checked_at = now;
            if (rc == 0) {
                entry_wipe(e);
                e->value = val;
                val = (struct gust_buf){0};
                e->resolved = 1;
                e->resolved_at = now;
                e->error[0] = '\0';
            } else {
                /* As Vault Agent does: the last value stays in force through a store
                 * that fails (down, a token being rotated); /secrets shows the error
                 * and since when the value is. Fail-closed applies to a start. */
                if (e->resolved && e->error[0] == '\0') {
                    gust_warn("secrets: {secret:%s}: %s; the last value stays in force", e->ref, why);
                }
                snprintf(e->error, sizeof(e->error), "%s", why);
            }
        }
        failed += rc != 0;
        pthread_mutex_unlock(&S.lock);
        secret_buf_wipe(&val);
        free(refs[i]);
    }
    free(refs);
    pthread_mutex_unlock(&S.fetch_lock);
    return failed;
}

static void *refresh_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&S.lock);
    while (!S.stopping) {
        struct timespec ts;
        gust_clock_deadline(S.refresh_ms > 0 ? S.refresh_ms : 300000, &ts);
        if (pthread_cond_timedwait(&S.wake, &S.lock, &ts) == 0 || S.stopping) {
            continue; /* woken: the period changed, or a stop */
        }
        pthread_mutex_unlock(&S.lock);
        size_t failed = refresh(NULL);
        if (failed > 0) {
            gust_warn("secrets: refresh: %zu reference(s) did not resolve (GET /secrets says why)", failed);
        }
        pthread_mutex_lock(&S.lock);
    }
    pthread_mutex_unlock(&S.lock);
    return NULL;
}

size_t gust_secrets_configure(const struct gust_secrets_keys *k, const char *const *refs, size_t n)
{
    char why[300];
    struct secret_store next;
    store_build(k, &next, why, sizeof(why));
    pthread_mutex_lock(&S.fetch_lock);
    pthread_mutex_lock(&S.lock);
    store_clear(&S.store);
    S.store = next;
    S.refresh_ms = k != NULL ? k->refresh : 0;
    S.nblocked = 0;
    /* Forget what the configuration no longer names. */
    for (size_t i = 0; i < S.n;) {
        int named = 0;
        for (size_t j = 0; j < n && !named; j++) {
            named = strcmp(S.v[i].ref, refs[j]) == 0;
        }
        if (named) {
            i++;
            continue;
        }
        entry_wipe(&S.v[i]);
        free(S.v[i].ref);
        S.v[i] = S.v[--S.n];
    }
    for (size_t j = 0; j < n; j++) {
        if (find(refs[j], strlen(refs[j])) == NULL && add(refs[j], strlen(refs[j])) == NULL) {
            gust_error("secrets: out of memory");
        }
    }
    int start = !S.started && k != NULL;
    S.started |= start;
    pthread_cond_signal(&S.wake);
    pthread_mutex_unlock(&S.lock);
    pthread_mutex_unlock(&S.fetch_lock);
    if (start) {
        pthread_create(&S.thread, NULL, refresh_thread, NULL);
    }
    if (why[0] != '\0') {
        gust_error("secrets: %s", why);
    }
    return refresh(NULL);
}

int gust_secrets_resolved(const char *ref, char *why, size_t whysz)
{
    pthread_mutex_lock(&S.lock);
    struct entry *e = find(ref, strlen(ref));
    int ok = e != NULL && e->resolved;
    if (!ok) {
        snprintf(why, whysz, "%s", e != NULL ? e->error : "not known to the store");
    }
    pthread_mutex_unlock(&S.lock);
    return ok;
}

void gust_secrets_shutdown(void)
{
    pthread_mutex_lock(&S.lock);
    int started = S.started;
    S.stopping = 1;
    pthread_cond_signal(&S.wake);
    pthread_mutex_unlock(&S.lock);
    if (started) {
        pthread_join(S.thread, NULL);
    }
    pthread_mutex_lock(&S.fetch_lock);
    pthread_mutex_lock(&S.lock);
    for (size_t i = 0; i < S.n; i++) {
        entry_wipe(&S.v[i]);
        free(S.v[i].ref);
    }
    S.n = 0;
    store_clear(&S.store);
    pthread_mutex_unlock(&S.lock);
    pthread_mutex_unlock(&S.fetch_lock);
}

void gust_secrets_block_unit(const char *unit, const char *ref, const char *why)
{
    pthread_mutex_lock(&S.lock);
    struct blocked *b = realloc(S.blocked, (S.nblocked + 1) * sizeof(*b));
    if (b != NULL) {
        S.blocked = b;
        b = &S.blocked[S.nblocked++];
        snprintf(b->unit, sizeof(b->unit), "%s", unit);
        snprintf(b->ref, sizeof(b->ref), "%s", ref);
        snprintf(b->why, sizeof(b->why), "%s", why);
    }
    pthread_mutex_unlock(&S.lock);
}

void gust_secrets_blocked_each(void (*fn)(void *ud, const char *unit, const char *ref, const char *why),
                               void *ud)
{
    pthread_mutex_lock(&S.lock);
    for (size_t i = 0; i < S.nblocked; i++) {
        fn(ud, S.blocked[i].unit, S.blocked[i].ref, S.blocked[i].why);
    }
    pthread_mutex_unlock(&S.lock);
}

static void put_str(struct gust_buf *out, const char *s)
{
    gust_json_append_string(out, s, strlen(s));
}

static void put_time(struct gust_buf *out, int64_t ms)
{
    char t[GUST_RFC3339_SIZE];
    if (ms == 0) {
        gust_buf_append(out, "null", 4);
        return;
    }
    gust_rfc3339_ms(ms, t);
    put_str(out, t);
}

void gust_secrets_render(struct gust_buf *out)
{
    pthread_mutex_lock(&S.lock);
    gust_buf_printf(out, "{\"store\":\"%s\",\"refresh_ms\":%lld,\"secrets\":[",
                    secret_store_name(S.store.kind), (long long)S.refresh_ms);
    for (size_t i = 0; i < S.n; i++) {
        const struct entry *e = &S.v[i];
        gust_buf_printf(out, "%s{\"ref\":", i ? "," : "");
        put_str(out, e->ref);
        gust_buf_printf(out,
                        ",\"store\":\"%s\",\"resolved\":%s,\"resolved_at\":", secret_store_name(S.store.kind),
                        e->resolved ? "true" : "false");
        put_time(out, e->resolved_at);
        gust_buf_append(out, ",\"checked_at\":", 14);
        put_time(out, e->checked_at);
        gust_buf_append(out, ",\"error\":", 9);
        if (e->error[0] == '\0') {
            gust_buf_append(out, "null", 4);
        } else {
            put_str(out, e->error);
        }
        gust_buf_append(out, "}", 1);
    }
    gust_buf_append(out, "],\"blocked_units\":[", 19);
    for (size_t i = 0; i < S.nblocked; i++) {
        gust_buf_printf(out, "%s{\"unit\":", i ? "," : "");
        put_str(out, S.blocked[i].unit);
        gust_buf_append(out, ",\"ref\":", 7);
        put_str(out, S.blocked[i].ref);
        gust_buf_append(out, "}", 1);
    }
    gust_buf_append(out, "]}\n", 3);
    pthread_mutex_unlock(&S.lock);
}

int gust_secret_value(const char *ref, size_t reflen, char *out, size_t outsz, size_t *len, char *why,
                      size_t whysz)
{
    pthread_mutex_lock(&S.lock);
    struct entry *e = find(ref, reflen);
    int fresh = e == NULL;
    if (fresh && add(ref, reflen) == NULL) {
        pthread_mutex_unlock(&S.lock);
        snprintf(why, whysz, "{secret:%.*s}: out of memory", (int)reflen, ref);
        return -1;
    }
    pthread_mutex_unlock(&S.lock);
    if (fresh) {
        /* Named by a flow's script rather than host.conf: fetched now, then kept and
         * refreshed like the others. */
        char *copy = strndup(ref, reflen);
        if (copy != NULL) {
            refresh(copy);
            free(copy);
        }
    }
    pthread_mutex_lock(&S.lock);
    e = find(ref, reflen);
    int rc = 0;
    if (e == NULL || !e->resolved) {
        snprintf(why, whysz, "{secret:%.*s} is not resolved: %s", (int)reflen, ref,
                 e != NULL ? e->error : "forgotten");
        rc = -1;
    } else if (e->value.len + 1 > outsz) {
        rc = -2;
    } else {
        memcpy(out, e->value.data, e->value.len);
        out[e->value.len] = '\0';
        *len = e->value.len;
    }
    pthread_mutex_unlock(&S.lock);
    return rc;
}
