#include "flow_state.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/feeds.h"
#include "../bus/kv.h"
#include "../common/buf.h"
#include "../common/log.h"
#include "../common/mem.h"
#include "../flow/flow.h"
#include "../flow/jtree.h"
#include "../flow/keyidx.h"

/* A KV key: the unit, '.', and up to three bytes per byte of the state key. */
#define KV_KEY_MAX (80 + 2 + 3 * GUST_STATE_KEY_MAX)

struct cache_entry {
    struct gust_key key; /* first, for the index: the state key itself */
    char *json;          /* the value ("v"), NULL when absent */
    size_t len;
    int64_t expires_ms;
    uint64_t revision;
    uint64_t *applied;
    size_t napplied;
};

struct gust_kv_state {
    struct gust_bus *bus;
    char unit[80];
    char bucket[64];
    char stream[64];
    char durable[160]; /* "" when none */
    int replicas;
    int read_only;
    size_t cache_bytes;
    int64_t wait_ms;
    struct gust_kv *kv; /* opened at the first use */
    int missing;        /* read_only and the bucket does not exist: every key is absent */

    struct cache_entry *cache;
    size_t ncache, cap_cache, cache_used;
    struct gust_keyidx cache_index;

    /* The cache holds every key of the unit the bucket had when it was loaded (one read
     * at the first miss), and what was written since: a key it lacks is absent, without
     * asking. Only with the cache, i.e. where nothing else writes the unit's keys; a
     * write of a key that exists after all still fails its compare-and-set. */
    int loaded, complete;
    uint64_t clears; /* cache_clear calls: one during the load leaves it incomplete */

    uint64_t floor; /* the durable consumer's ack floor, as last asked */
    int read_failed;

    /* A commit's scratch, kept between batches. */
    struct gust_kv_write *writes;
    size_t cap_writes;
    uint64_t *seqs; /* the batch's successful messages ... */
    size_t cap_seqs;
    uint64_t *ranges; /* ... as ranges */
    size_t cap_ranges;
    uint64_t *merged; /* every write's new ranges, end to end */
    size_t cap_merged;
    size_t *merged_at, *nmerged;
    struct gust_buf keys, envelopes;
    size_t *key_at, *envelope_at;
    size_t *sent; /* the writes sent, as indices of the batch's */

    atomic_uint_fast64_t reads, cache_hits, written, conflicts, errors, skipped, commit_ns;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return p;
    }
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        n *= 2;
    }
    void *q = realloc(p, n * elem);
    if (q != NULL) {
        *cap = n;
    }
    return q;
}

size_t gust_kv_state_key(const char *unit, const char *key, size_t len, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t ulen = strlen(unit);
    if (ulen + 2 > size) {
        ulen = size - 2;
    }
    memcpy(out, unit, ulen);
    out[ulen] = '.';
    size_t n = ulen + 1;
    for (size_t i = 0; i < len && n + 4 < size; i++) {
        unsigned char c = (unsigned char)key[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-') {
            out[n++] = (char)c;
        } else {
            out[n++] = '=';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    out[n] = '\0';
    return n;
}

/* The key for messages: printable ASCII as it is, other bytes as \xNN, cut short. */
static void printable_key(const char *key, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 5 < size; i++) {
        unsigned char c = (unsigned char)key[i];
        n += (size_t)(c >= 0x20 && c < 0x7f && c != '\\' ? snprintf(out + n, size - n, "%c", c)
                                                           : snprintf(out + n, size - n, "\\x%02X", c));
    }
    out[n] = '\0';
}

/* ---- the cache ---- */

static size_t entry_bytes(const struct cache_entry *e)
{
    return sizeof(*e) + e->key.len + e->len + e->napplied * 2 * sizeof(uint64_t) + 32;
}

static void cache_clear(struct gust_kv_state *s)
{
    for (size_t i = 0; i < s->ncache; i++) {
        free((char *)s->cache[i].key.s);
        free(s->cache[i].json);
        free(s->cache[i].applied);
    }
    s->ncache = 0;
    s->cache_used = 0;
    gust_keyidx_clear(&s->cache_index);
    s->complete = 0;
    s->clears++;
}

static struct cache_entry *cache_find(struct gust_kv_state *s, const char *key, size_t len)
{
    if (s->cache_bytes == 0 || s->ncache == 0) {
        return NULL;
    }
    size_t i = gust_keyidx_find(&s->cache_index, s->cache, sizeof(*s->cache), key, len, gust_key_hash(key, len));
    return i == SIZE_MAX ? NULL : &s->cache[i];
}

/* A key whose bucket value is not known any more: its entry stays, marked unknown by
 * revision UINT64_MAX (the index cannot remove one), and is read again. */
static void cache_forget(struct gust_kv_state *s, const char *key, size_t len)
{
    struct cache_entry *e = cache_find(s, key, len);
    if (e != NULL) {
        e->revision = UINT64_MAX;
    }
}

/* Remembers what the bucket holds for key now. Out of memory only leaves it out. */
static void cache_put(struct gust_kv_state *s, const char *key, size_t len, const char *json, size_t json_len,
                      int64_t expires_ms, uint64_t revision, const uint64_t *applied, size_t napplied)
{
    if (s->cache_bytes == 0) {
        return;
    }
    char *j = json != NULL ? gust_memdup(json, json_len) : NULL;
    uint64_t *a = napplied > 0 ? malloc(napplied * 2 * sizeof(*a)) : NULL;
    if ((json != NULL && j == NULL) || (napplied > 0 && a == NULL)) {
        free(j);
        free(a);
        cache_forget(s, key, len);
        return;
    }
    if (a != NULL) {
        memcpy(a, applied, napplied * 2 * sizeof(*a));
    }
    struct cache_entry *e = cache_find(s, key, len);
    if (e != NULL) {
        s->cache_used -= entry_bytes(e);
        free(e->json);
        free(e->applied);
    } else {
        struct cache_entry probe = {.key = {.len = len}, .len = json_len, .napplied = napplied};
        if (s->cache_used + entry_bytes(&probe) > s->cache_bytes) {
            cache_clear(s); /* full: start again with what the next batches touch */
        }
        char *k = gust_memdup(key, len);
        struct cache_entry *v = grow(s->cache, &s->cap_cache, s->ncache + 1, sizeof(*s->cache));
        if (v != NULL) {
            s->cache = v;
        }
        if (k == NULL || v == NULL) {
            free(k), free(j), free(a);
            return;
        }
        s->cache[s->ncache] = (struct cache_entry){.key = {.s = k, .len = len, .hash = gust_key_hash(key, len)}};
        if (gust_keyidx_add(&s->cache_index, s->cache, sizeof(*s->cache), s->ncache + 1, s->ncache) != 0) {
            free(k), free(j), free(a);
            return;
        }
        e = &s->cache[s->ncache++];
    }
    e->json = j;
    e->len = json_len;
    e->expires_ms = expires_ms;
    e->revision = revision;
    e->applied = a;
    e->napplied = napplied;
    s->cache_used += entry_bytes(e);
}

/* ---- the envelope ---- */

static int parse_u64(const struct gust_jnode *n, uint64_t *v)
{
    if (n == NULL || n->type != GUST_J_NUMBER || n->len == 0 || n->len > 20) {
        return -1;
    }
    uint64_t x = 0;
    for (size_t i = 0; i < n->len; i++) {
        uint64_t d = (uint64_t)(n->s[i] - '0');
        if (n->s[i] < '0' || n->s[i] > '9' || x > (UINT64_MAX - d) / 10) {
            return -1;
        }
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

/* Reads an envelope into out (json, expires_ms, applied). 0, or GUST_EINVAL with why,
 * or GUST_ENOMEM. */
static int parse_envelope(const char *text, size_t len, struct gust_state_value *out, char *why, size_t why_size)
{
    struct gust_jnode *root = NULL;
    size_t at = 0;
    char perr[128];
    int rc = gust_jtree_parse(text, len, &root, perr, sizeof(perr), &at);
    if (rc != 0) {
        snprintf(why, why_size, "not JSON: %s", perr);
        return rc;
    }
    const struct gust_jnode *v = root->type == GUST_J_OBJECT ? gust_jtree_get(root, "v") : NULL;
    const struct gust_jnode *x = root->type == GUST_J_OBJECT ? gust_jtree_get(root, "x") : NULL;
    const struct gust_jnode *a = root->type == GUST_J_OBJECT ? gust_jtree_get(root, "a") : NULL;
    uint64_t expires = 0;
    rc = GUST_EINVAL;
    if (v == NULL || (x != NULL && (parse_u64(x, &expires) != 0 || expires > INT64_MAX)) ||
        (a != NULL && a->type != GUST_J_ARRAY)) {
        snprintf(why, why_size, "not a state envelope {\"v\", \"x\", \"a\"}");
        goto done;
    }
    out->expires_ms = (int64_t)expires;
    size_t n = a != NULL ? a->n : 0;
    if (n > 0 && (out->applied = malloc(n * 2 * sizeof(*out->applied))) == NULL) {
        rc = GUST_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const struct gust_jnode *r = a->items[i];
        uint64_t lo, hi;
        if (r->type != GUST_J_ARRAY || r->n != 2 || parse_u64(r->items[0], &lo) != 0 ||
            parse_u64(r->items[1], &hi) != 0 || lo > hi || (i > 0 && lo <= out->applied[2 * i - 1])) {
            snprintf(why, why_size, "its \"a\" are not ascending ranges [lo, hi]");
            goto done;
        }
        out->applied[2 * i] = lo;
        out->applied[2 * i + 1] = hi;
    }
    out->napplied = n;
    if (v->type != GUST_J_NULL) {
        struct gust_buf b = {0};
        if (gust_jtree_write(v, &b) != 0 || gust_buf_append(&b, "", 1) != 0) {
            gust_buf_free(&b);
            rc = GUST_ENOMEM;
            goto done;
        }
        out->json = b.data;
        out->len = b.len - 1;
    }
    rc = 0;
done:
    if (rc != 0) {
        free(out->applied);
        out->applied = NULL;
        out->napplied = 0;
    }
    gust_jtree_free(root);
    return rc;
}

/* Appends v in decimal (a per-write path: no printf). */
static int append_u64(struct gust_buf *out, uint64_t v)
{
    char digits[20];
    return gust_buf_append(out, digits, gust_u64_dec(v, digits));
}

static int write_envelope(struct gust_buf *out, const struct gust_state_write *w, const uint64_t *ranges, size_t n)
{
    int64_t x = w->json != NULL ? w->expires_ms : 0;
    int rc = gust_buf_append(out, "{\"v\":", 5);
    rc = rc != 0 ? rc : w->json != NULL ? gust_buf_append(out, w->json, w->len) : gust_buf_append(out, "null", 4);
    rc = rc != 0 ? rc : gust_buf_append(out, ",\"x\":", 5);
    rc = rc != 0 ? rc : x < 0 ? gust_buf_printf(out, "%" PRId64, x) : append_u64(out, (uint64_t)x);
    rc = rc != 0 ? rc : gust_buf_append(out, ",\"a\":[", 6);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = gust_buf_append(out, i > 0 ? ",[" : "[", i > 0 ? 2 : 1);
        rc = rc != 0 ? rc : append_u64(out, ranges[2 * i]);
        rc = rc != 0 ? rc : gust_buf_append(out, ",", 1);
        rc = rc != 0 ? rc : append_u64(out, ranges[2 * i + 1]);
        rc = rc != 0 ? rc : gust_buf_append(out, "]", 1);
    }
    return rc != 0 ? rc : gust_buf_append(out, "]}", 2);
}

/* ---- the store ---- */

static int open_bucket(struct gust_kv_state *s, char *why, size_t why_size)
{
    if (s->kv != NULL || s->missing) {
        return 0;
    }
    if (s->read_only) {
        int rc = gust_kv_open_existing(s->bus, s->bucket, s->wait_ms, &s->kv, why, why_size);
        if (rc == GUST_ENOTFOUND) {
            s->missing = 1; /* no flow has written state yet */
            return 0;
        }
        return rc;
    }
    return gust_kv_open(s->bus, s->bucket, s->replicas, s->wait_ms, &s->kv, why, why_size);
}

static int copy_out(const struct cache_entry *e, int64_t now_ms, int with_applied, struct gust_state_value *out)
{
    *out = (struct gust_state_value){.revision = e->revision};
    int expired = e->expires_ms != 0 && now_ms != 0 && now_ms >= e->expires_ms;
    if (e->json != NULL && !expired) {
        if ((out->json = gust_memdup(e->json, e->len)) == NULL) {
            return GUST_ENOMEM;
        }
        out->len = e->len;
        out->expires_ms = e->expires_ms;
    }
    if (with_applied && e->napplied > 0) {
        if ((out->applied = malloc(e->napplied * 2 * sizeof(*out->applied))) == NULL) {
            free(out->json);
            out->json = NULL;
            return GUST_ENOMEM;
        }
        memcpy(out->applied, e->applied, e->napplied * 2 * sizeof(*out->applied));
        out->napplied = e->napplied;
    }
    return 0;
}

/* The state key of a KV key (<unit>.<escaped key>) into out (at least
 * GUST_STATE_KEY_MAX bytes); returns its length, or 0 when kvkey is none of the unit's. */
static size_t state_key_of(const struct gust_kv_state *s, const char *kvkey, char *out)
{
    size_t ulen = strlen(s->unit), n = 0;
    if (strncmp(kvkey, s->unit, ulen) != 0 || kvkey[ulen] != '.') {
        return 0;
    }
    for (const char *p = kvkey + ulen + 1; *p != '\0'; p++) {
        int c = (unsigned char)*p;
        if (c == '=') {
            unsigned v = 0;
            for (int k = 1; k <= 2; k++) {
                char h = p[k];
                if (h == '\0') {
                    return 0;
                }
                v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 99);
            }
            if (v > 255 || v == 0) {
                return 0;
            }
            c = (int)v;
            p += 2;
        }
        if (n == GUST_STATE_KEY_MAX) {
            return 0;
        }
        out[n++] = (char)c;
    }
    return n;
}

struct load {
    struct gust_kv_state *s;
    int bad; /* a key or value that could not be cached */
};

static void load_one(void *ud, const char *kvkey, const char *value, size_t len, uint64_t rev)
{
    struct load *l = ud;
    char key[GUST_STATE_KEY_MAX];
    size_t klen = state_key_of(l->s, kvkey, key);
    struct gust_state_value env = {0};
    char why[128];
    if (klen == 0 || (value != NULL && parse_envelope(value, len, &env, why, sizeof(why)) != 0)) {
        l->bad = 1; /* read one at a time, as before: the read reports it */
        return;
    }
    uint64_t clears = l->s->clears;
    cache_put(l->s, key, klen, env.json, env.len, env.expires_ms, rev, env.applied, env.napplied);
    l->bad |= l->s->clears != clears || cache_find(l->s, key, klen) == NULL;
    free(env.json);
    free(env.applied);
}

/* At the first miss: every key of the unit into the cache, in one read. */
static void load_cache(struct gust_kv_state *s)
{
    s->loaded = 1;
    char keys[96], why[160];
    snprintf(keys, sizeof(keys), "%s.>", s->unit);
    struct load l = {.s = s};
    uint64_t clears = s->clears;
    int rc = gust_kv_each(s->kv, keys, load_one, &l, why, sizeof(why));
    s->complete = rc == 0 && !l.bad && s->clears == clears;
    if (rc != 0) {
        gust_warn("[flow_%s] state: the keys were not loaded at once (%s): read one at a time", s->unit, why);
    }
}

static int kv_read(void *ud, const char *key, size_t key_len, int64_t now_ms, struct gust_state_value *out,
                   struct gust_err *err)
{
    struct gust_kv_state *s = ud;
    *out = (struct gust_state_value){0};
    atomic_fetch_add(&s->reads, 1);
    const struct cache_entry *hit = cache_find(s, key, key_len);
    if (hit != NULL && hit->revision != UINT64_MAX) {
        atomic_fetch_add(&s->cache_hits, 1);
        return copy_out(hit, now_ms, !s->read_only, out) == 0 ? 0 : gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    char why[256] = "", kvkey[KV_KEY_MAX];
    int rc = open_bucket(s, why, sizeof(why));
    if (rc != 0) {
        atomic_fetch_add(&s->errors, 1);
        s->read_failed = 1;
        return gust_err_set(err, rc, "bucket %s: %s", s->bucket, why);
    }
    if (s->missing) {
        return 0;
    }
    if (hit == NULL && s->cache_bytes > 0 && !s->read_only && !s->loaded) {
        load_cache(s);
        hit = cache_find(s, key, key_len);
        if (hit != NULL && hit->revision != UINT64_MAX) {
            atomic_fetch_add(&s->cache_hits, 1);
            return copy_out(hit, now_ms, 1, out) == 0 ? 0 : gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    if (hit == NULL && s->complete) {
        atomic_fetch_add(&s->cache_hits, 1); /* absent: revision 0, nothing applied */
        return 0;
    }
    gust_kv_state_key(s->unit, key, key_len, kvkey, sizeof(kvkey));
    char *text = NULL;
    size_t len = 0;
    uint64_t rev = 0;
    if ((rc = gust_kv_read(s->kv, kvkey, &text, &len, &rev, why, sizeof(why))) != 0) {
        atomic_fetch_add(&s->errors, 1);
        s->read_failed = rc != GUST_ENOMEM;
        return gust_err_set(err, rc, "bucket %s: reading %s: %s", s->bucket, kvkey, why);
    }
    struct cache_entry e = {.revision = rev};
    struct gust_state_value env = {0};
    if (text != NULL && (rc = parse_envelope(text, len, &env, why, sizeof(why))) != 0) {
        free(text);
        return gust_err_set(err, rc, "bucket %s: the value of %s is %s", s->bucket, kvkey, why);
    }
    free(text);
    e.json = env.json;
    e.len = env.len;
    e.expires_ms = env.expires_ms;
    e.applied = env.applied;
    e.napplied = env.napplied;
    cache_put(s, key, key_len, e.json, e.len, e.expires_ms, e.revision, e.applied, e.napplied);
    rc = copy_out(&e, now_ms, !s->read_only, out);
    free(env.json);
    free(env.applied);
    return rc == 0 ? 0 : gust_err_set(err, GUST_ENOMEM, "out of memory");
}

/* ---- the commit ---- */

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The stream sequences of the batch's messages that ran successfully, as ranges into
 * s->ranges; returns how many, or SIZE_MAX when out of memory. */
static size_t batch_ranges(struct gust_kv_state *s, const struct gust_batch *b)
{
    uint64_t *v = grow(s->seqs, &s->cap_seqs, b->n + 1, sizeof(*v));
    s->seqs = v != NULL ? v : s->seqs;
    uint64_t *r = grow(s->ranges, &s->cap_ranges, 2 * b->n + 2, sizeof(*r));
    s->ranges = r != NULL ? r : s->ranges;
    if (v == NULL || r == NULL) {
        return SIZE_MAX;
    }
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->outcome[i] == GUST_OUTCOME_OK && b->msgs[i].stream_seq != 0) {
            v[n++] = b->msgs[i].stream_seq;
        }
    }
    qsort(v, n, sizeof(*v), by_u64);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k == 0 || v[i] > r[2 * k - 1] + 1) {
            r[2 * k] = r[2 * k + 1] = v[i];
            k++;
        } else if (v[i] > r[2 * k - 1]) {
            r[2 * k - 1] = v[i];
        }
    }
    return k;
}

/* a[0..na) and b[0..nb) (ascending ranges) merged into out, adjacent ones joined, cut
 * below floor (nothing at or below it can be redelivered); returns how many. */
static size_t merge_ranges(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, uint64_t floor,
                           uint64_t *out)
{
    size_t i = 0, j = 0, n = 0;
    while (i < na || j < nb) {
        const uint64_t *r = j >= nb || (i < na && a[2 * i] <= b[2 * j]) ? &a[2 * i++] : &b[2 * j++];
        uint64_t lo = r[0], hi = r[1];
        if (hi <= floor) {
            continue;
        }
        if (lo <= floor) {
            lo = floor + 1;
        }
        if (n > 0 && (out[2 * n - 1] == UINT64_MAX || lo <= out[2 * n - 1] + 1)) {
            if (hi > out[2 * n - 1]) {
                out[2 * n - 1] = hi;
            }
        } else {
            out[2 * n] = lo;
            out[2 * n + 1] = hi;
            n++;
        }
    }
    return n;
}

/* The ack floor, asked before every commit, after every read of the batch. Besides
 * pruning the ranges it finds a batch that outlived ack_wait: its messages were handed
 * to another process meanwhile, and one that process has acked (at or below the floor)
 * may have been dropped from a key's ranges before this batch read the key, so that
 * its effect here would be its second. (Floors only rise: one that passed such a
 * message before the read is seen now.) */
static void refresh_floor(struct gust_kv_state *s)
{
    if (s->durable[0] == '\0') {
        return;
    }
    uint64_t floor = gust_durable_ack_floor(s->bus, s->stream, s->durable);
    if (floor > s->floor) { /* 0 is "not known now": keep the last */
        s->floor = floor;
    }
}

/* Whether a message that touched the write's key was acked elsewhere meanwhile. */
static int handled_elsewhere(const struct gust_kv_state *s, const struct gust_batch *b,
                             const struct gust_state_write *w)
{
    for (size_t k = 0; k < w->nmsgs; k++) {
        uint64_t seq = w->msgs[k] < b->n ? b->msgs[w->msgs[k]].stream_seq : 0;
        if (seq != 0 && seq <= s->floor) {
            return 1;
        }
    }
    return 0;
}

/* Every message that touched the write's key must be redelivered: not published, not
 * acked. `wait`: the bus's doing, not the message's (it is not counted as rejected). */
static void redeliver(struct gust_batch *b, const struct gust_state_write *w, int wait, const char *fmt,
                      const char *key, const char *why)
{
    for (size_t k = 0; k < w->nmsgs; k++) {
        size_t i = w->msgs[k];
        if (i < b->n && b->outcome[i] == GUST_OUTCOME_OK) {
            b->outcome[i] = wait ? GUST_OUTCOME_WAIT : GUST_OUTCOME_RETRY;
            snprintf(b->error[i], GUST_ERROR_MAX, fmt, key, why);
        }
    }
}

/* The scratch for n writes whose ranges take at most `ranges` pairs in all. */
static int reserve(struct gust_kv_state *s, size_t n, size_t ranges)
{
    struct gust_kv_write *w = grow(s->writes, &s->cap_writes, n, sizeof(*w));
    if (w == NULL) {
        return GUST_ENOMEM;
    }
    s->writes = w;
    size_t cap = s->cap_writes;
    size_t *a = realloc(s->merged_at, cap * sizeof(*a));
    s->merged_at = a != NULL ? a : s->merged_at;
    size_t *c = realloc(s->nmerged, cap * sizeof(*c));
    s->nmerged = c != NULL ? c : s->nmerged;
    size_t *k = realloc(s->key_at, cap * sizeof(*k));
    s->key_at = k != NULL ? k : s->key_at;
    size_t *e = realloc(s->envelope_at, cap * sizeof(*e));
    s->envelope_at = e != NULL ? e : s->envelope_at;
    size_t *t = realloc(s->sent, cap * sizeof(*t));
    s->sent = t != NULL ? t : s->sent;
    uint64_t *m = grow(s->merged, &s->cap_merged, 2 * ranges + 2, sizeof(*m));
    s->merged = m != NULL ? m : s->merged;
    return a != NULL && c != NULL && k != NULL && e != NULL && t != NULL && m != NULL ? 0 : GUST_ENOMEM;
}

static void commit(struct gust_kv_state *s, struct gust_flow *flow, struct gust_batch *b);

void gust_kv_state_commit(struct gust_kv_state *s, struct gust_flow *flow, struct gust_batch *b)
{
    uint64_t t0 = gust_clock_mono_ns();
    commit(s, flow, b);
    atomic_fetch_add(&s->commit_ns, gust_clock_mono_ns() - t0);
}

static void commit(struct gust_kv_state *s, struct gust_flow *flow, struct gust_batch *b)
{
    const struct gust_state_write *w;
    size_t n = gust_flow_state_writes(flow, &w);
    if (n == 0) {
        return;
    }
    char why[256] = "", name[GUST_STATE_KEY_MAX + 16];
    size_t nbatch = batch_ranges(s, b);
    size_t total = 0;
    for (size_t j = 0; j < n; j++) {
        total += w[j].napplied + (nbatch == SIZE_MAX ? 0 : nbatch);
    }
    int rc = s->read_only ? GUST_EINVAL : nbatch == SIZE_MAX ? GUST_ENOMEM : reserve(s, n, total);
    if (rc == 0) {
        rc = open_bucket(s, why, sizeof(why));
    }
    if (rc != 0) {
        atomic_fetch_add(&s->errors, 1);
        if (why[0] == '\0') {
            snprintf(why, sizeof(why), "%s", rc == GUST_ENOMEM ? "out of memory" : "read only");
        }
        for (size_t j = 0; j < n; j++) {
            printable_key(w[j].key, w[j].key_len, name, sizeof(name));
            redeliver(b, &w[j], 1, "state: key '%s' not written: %s", name, why);
        }
        return;
    }
    refresh_floor(s);

    /* Each write's key and envelope, end to end in two buffers (pointers set after:
     * the buffers move while they grow). */
    s->keys.len = 0;
    s->envelopes.len = 0;
    size_t at = 0;
    for (size_t j = 0; j < n && rc == 0; j++) {
        s->merged_at[j] = at;
        s->nmerged[j] = merge_ranges(w[j].applied, w[j].napplied, s->ranges, nbatch, s->floor, s->merged + 2 * at);
        at += s->nmerged[j];
        char kvkey[KV_KEY_MAX];
        size_t klen = gust_kv_state_key(s->unit, w[j].key, w[j].key_len, kvkey, sizeof(kvkey));
        s->key_at[j] = s->keys.len;
        s->envelope_at[j] = s->envelopes.len;
        rc = gust_buf_append(&s->keys, kvkey, klen + 1);
        if (rc == 0) {
            rc = write_envelope(&s->envelopes, &w[j], s->merged + 2 * s->merged_at[j], s->nmerged[j]);
        }
    }
    if (rc != 0) {
        for (size_t j = 0; j < n; j++) {
            printable_key(w[j].key, w[j].key_len, name, sizeof(name));
            redeliver(b, &w[j], 1, "state: key '%s' not written: %s", name, "out of memory");
        }
        return;
    }
    size_t nsent = 0;
    for (size_t j = 0; j < n; j++) {
        if (handled_elsewhere(s, b, &w[j])) {
            printable_key(w[j].key, w[j].key_len, name, sizeof(name));
            redeliver(b, &w[j], 1, "state: key '%s' not written: %s", name,
                      "a message of it was acked by another process meanwhile (this batch outlived ack_wait)");
            continue;
        }
        size_t end = j + 1 < n ? s->envelope_at[j + 1] : s->envelopes.len;
        s->sent[nsent] = j;
        s->writes[nsent++] = (struct gust_kv_write){.key = s->keys.data + s->key_at[j],
                                                    .value = s->envelopes.data + s->envelope_at[j],
                                                    .len = end - s->envelope_at[j],
                                                    .cas = w[j].has_revision,
                                                    .expected = w[j].revision};
    }
    gust_kv_write_all(s->kv, s->writes, nsent, s->wait_ms);

    for (size_t k = 0; k < nsent; k++) {
        const struct gust_kv_write *kw = &s->writes[k];
        size_t j = s->sent[k];
        if (kw->rc == 0) {
            atomic_fetch_add(&s->written, 1);
            cache_put(s, w[j].key, w[j].key_len, w[j].json, w[j].len, w[j].json != NULL ? w[j].expires_ms : 0,
                      kw->revision, s->merged + 2 * s->merged_at[j], s->nmerged[j]);
            continue;
        }
        cache_forget(s, w[j].key, w[j].key_len);
        printable_key(w[j].key, w[j].key_len, name, sizeof(name));
        if (kw->rc == GUST_EAGAIN) {
            atomic_fetch_add(&s->conflicts, 1);
            redeliver(b, &w[j], 1, "state conflict on key '%s': retried%s", name, "");
        } else if (kw->rc == GUST_EINVAL) {
            /* Cannot succeed as it is (over the server's max_payload): the messages count
             * it as a rejection, and are dead-lettered after max_deliver. */
            atomic_fetch_add(&s->errors, 1);
            redeliver(b, &w[j], 0, "state: key '%s' not written: %s", name, kw->why);
        } else {
            atomic_fetch_add(&s->errors, 1);
            redeliver(b, &w[j], 1, "state: key '%s' not written: %s", name, kw->why);
        }
    }
}

/* ---- the rest ---- */

int gust_kv_state_create(const struct gust_kv_state_conf *conf, struct gust_kv_state **out, struct gust_err *err)
{
    struct gust_kv_state *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    s->bus = conf->bus;
    snprintf(s->unit, sizeof(s->unit), "%s", conf->unit);
    snprintf(s->bucket, sizeof(s->bucket), "%s", conf->bucket);
    snprintf(s->stream, sizeof(s->stream), "%s", conf->stream != NULL ? conf->stream : "");
    snprintf(s->durable, sizeof(s->durable), "%s", conf->durable != NULL ? conf->durable : "");
    s->replicas = conf->replicas > 0 ? conf->replicas : 1;
    s->read_only = conf->read_only;
    s->cache_bytes = conf->cache_bytes;
    s->wait_ms = conf->wait_ms > 0 ? conf->wait_ms : 5000;
    *out = s;
    return 0;
}

void gust_kv_state_destroy(struct gust_kv_state *s)
{
    if (s == NULL) {
        return;
    }
    gust_kv_close(s->kv);
    cache_clear(s);
    free(s->cache);
    gust_keyidx_free(&s->cache_index);
    free(s->writes);
    free(s->seqs);
    free(s->ranges);
    free(s->merged);
    free(s->merged_at);
    free(s->nmerged);
    free(s->key_at);
    free(s->envelope_at);
    free(s->sent);
    gust_buf_free(&s->keys);
    gust_buf_free(&s->envelopes);
    free(s);
}

struct gust_state_store gust_kv_state_store(struct gust_kv_state *s)
{
    return (struct gust_state_store){.read = kv_read, .ud = s, .read_first = !s->read_only};
}

int gust_kv_state_take_read_failure(struct gust_kv_state *s)
{
    int failed = s->read_failed;
    s->read_failed = 0;
    return failed;
}

void gust_kv_state_add_skipped(struct gust_kv_state *s, uint64_t n)
{
    atomic_fetch_add(&s->skipped, n);
}

void gust_kv_state_stats(const struct gust_kv_state *s, struct gust_kv_state_stats *out)
{
    struct gust_kv_state *m = (struct gust_kv_state *)s;
    *out = (struct gust_kv_state_stats){.reads = atomic_load(&m->reads),
                                        .cache_hits = atomic_load(&m->cache_hits),
                                        .writes = atomic_load(&m->written),
                                        .conflicts = atomic_load(&m->conflicts),
                                        .errors = atomic_load(&m->errors),
                                        .skipped = atomic_load(&m->skipped),
                                        .commit_ns = atomic_load(&m->commit_ns)};
}

const char *gust_kv_state_bucket(const struct gust_kv_state *s)
{
    return s->bucket;
}
