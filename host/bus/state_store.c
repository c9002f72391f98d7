#include "state_store.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "../common/buf.h"
#include "../common/json_out.h"
#include "bus_int.h"
#include "stream_ops.h"

#define CHUNK_MAX (1024 * 1024)
#define HEADROOM 4096 /* under max_payload: the headers and the protocol line */
#define API_WAIT_MS 5000

/* FNV-1a: the head says what the blob's bytes hash to, so a wrong chunk is noticed. */
static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ s[i]) * 1099511628211ull;
    }
    return h;
}

/* "<prefix>.<name>.<what>" with prefix from state_subjects ("gust.state.>"). */
static void subject_of(struct gust_bus *bus, const char *name, const char *what, char *out, size_t size)
{
    const char *subjects = gust_bus_config(bus)->state_subjects;
    size_t plen = strlen(subjects);
    if (plen >= 2 && strcmp(subjects + plen - 2, ".>") == 0) {
        plen -= 2;
    }
    snprintf(out, size, "%.*s.%s.%s", (int)plen, subjects, name, what);
}

/* The chunks' PubAcks, waited for together. */
struct batch {
    pthread_mutex_t lock;
    pthread_cond_t done;
    size_t waiting;
    uint64_t *seq; /* per chunk */
    int failed;
    char why[256];
};

struct ticket {
    struct batch *b;
    size_t i;
};

static void chunk_stored(void *ud, int status, uint64_t seq, const char *error)
{
    struct ticket *t = ud;
    struct batch *b = t->b;
    pthread_mutex_lock(&b->lock);
    if (status != 0 && !b->failed) {
        b->failed = 1;
        snprintf(b->why, sizeof(b->why), "%s", error != NULL ? error : "not stored");
    }
    b->seq[t->i] = seq;
    if (--b->waiting == 0) {
        pthread_cond_signal(&b->done);
    }
    pthread_mutex_unlock(&b->lock);
}

int gust_state_put(struct gust_bus *bus, const char *name, const char *info, const void *data, size_t len,
                   struct gust_state_put_stats *stats, char *why, size_t why_size)
{
    int64_t max_payload = natsConnection_GetMaxPayload(gust_bus__conn(bus));
    size_t chunk = max_payload > 2 * HEADROOM ? (size_t)max_payload - HEADROOM : 64 * 1024;
    chunk = chunk > CHUNK_MAX ? CHUNK_MAX : chunk;
    size_t n = len > 0 ? (len + chunk - 1) / chunk : 0;
    char data_subject[300], head_subject[300];
    subject_of(bus, name, "data", data_subject, sizeof(data_subject));
    subject_of(bus, name, "head", head_subject, sizeof(head_subject));

    struct batch b = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};
    b.seq = calloc(n + 1, sizeof(*b.seq));
    struct ticket *t = calloc(n + 1, sizeof(*t));
    if (b.seq == NULL || t == NULL) {
        free(b.seq);
        free(t);
        snprintf(why, why_size, "out of memory");
        return GUST_ENOMEM;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t off = i * chunk, part = len - off < chunk ? len - off : chunk;
        struct gust_pub p = {.subject = data_subject, .data = (const char *)data + off, .len = part};
        t[i] = (struct ticket){&b, i};
        pthread_mutex_lock(&b.lock);
        b.waiting++;
        pthread_mutex_unlock(&b.lock);
        rc = gust_bus_publish_msg(bus, &p, chunk_stored, &t[i], NULL);
        if (rc != 0) {
            pthread_mutex_lock(&b.lock);
            b.waiting--;
            pthread_mutex_unlock(&b.lock);
            snprintf(why, why_size, "chunk %zu of %zu: bus not connected or too many publishes pending", i + 1, n);
        }
    }
    natsConnection_Flush(gust_bus__conn(bus));
    pthread_mutex_lock(&b.lock);
    while (b.waiting > 0) { /* each completes or times out (publish_timeout) */
        pthread_cond_wait(&b.done, &b.lock);
    }
    pthread_mutex_unlock(&b.lock);
    if (rc == 0 && b.failed) {
        snprintf(why, why_size, "a chunk was not stored: %s", b.why);
        rc = GUST_EIO;
    }
    if (rc == 0) {
        struct gust_buf head = {0};
        gust_buf_printf(&head, "{\"bytes\":%zu,\"hash\":\"%016" PRIx64 "\",\"chunks\":[", len, fnv1a(data, len));
        for (size_t i = 0; i < n; i++) {
            gust_buf_printf(&head, "%s%" PRIu64, i > 0 ? "," : "", b.seq[i]);
        }
        gust_buf_printf(&head, "],\"info\":%s}", info != NULL ? info : "{}");
        static const struct gust_header rollup[] = {{"Nats-Rollup", "sub"}};
        struct gust_pub p = {.subject = head_subject, .data = head.data, .len = head.len, .headers = rollup,
                             .nheaders = 1};
        rc = head.data != NULL ? gust_bus_publish_wait(bus, &p, NULL, why, why_size) : GUST_ENOMEM;
        gust_buf_free(&head);
    }
    if (rc == 0 && n > 0 && b.seq[0] > 1) {
        /* The older blobs' chunks: below this one's first (none below 1; and a purge
         * "below 1" purges everything). A failure only leaves them for the next put. */
        char ignored[128];
        gust_stream_purge(bus, gust_bus_config(bus)->state_stream, data_subject, b.seq[0], NULL, ignored,
                          sizeof(ignored));
    }
    if (rc == 0 && stats != NULL) {
        stats->chunks = n;
        stats->bytes = len;
    }
    free(b.seq);
    free(t);
    return rc;
}

static int read_chunk(struct gust_bus *bus, uint64_t seq, struct gust_buf *out, char *why, size_t why_size)
{
    jsDirectGetMsgOptions o;
    jsDirectGetMsgOptions_Init(&o);
    o.Sequence = seq;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = API_WAIT_MS;
    natsMsg *m = NULL;
    natsStatus s = js_DirectGetMsg(&m, gust_bus__js(bus), gust_bus_config(bus)->state_stream, &jo, &o);
    if (s != NATS_OK) {
        snprintf(why, why_size, "chunk at seq %" PRIu64 ": %s", seq, gust_bus__reason(s));
        /* Not there (purged, lost): the blob is not whole. Otherwise: not now. */
        return s == NATS_TIMEOUT || !gust_bus_connected(bus) ? GUST_EAGAIN : GUST_EINVAL;
    }
    int rc = gust_buf_append(out, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m));
    natsMsg_Destroy(m);
    return rc;
}

int gust_state_get(struct gust_bus *bus, const char *name, char *info, size_t info_size, void **data,
                   size_t *len, char *why, size_t why_size)
{
    *data = NULL;
    *len = 0;
    info[0] = '\0';
    char head_subject[300];
    subject_of(bus, name, "head", head_subject, sizeof(head_subject));
    struct gust_stored head;
    int rc = gust_stream_last(bus, gust_bus_config(bus)->state_stream, head_subject, &head, why, why_size);
    if (rc != 0) {
        return rc;
    }
    char *text = malloc(head.len + 1);
    if (text == NULL) {
        gust_stored_free(&head);
        return GUST_ENOMEM;
    }
    memcpy(text, head.data, head.len);
    text[head.len] = '\0';
    gust_stored_free(&head);
    char perr[128];
    yajl_val v = yajl_tree_parse(text, perr, sizeof(perr));
    free(text);
    const char *bytes_path[] = {"bytes", NULL}, *hash_path[] = {"hash", NULL}, *chunks_path[] = {"chunks", NULL},
               *info_path[] = {"info", NULL};
    yajl_val bytes = v != NULL ? yajl_tree_get(v, bytes_path, yajl_t_number) : NULL;
    yajl_val hash = v != NULL ? yajl_tree_get(v, hash_path, yajl_t_string) : NULL;
    yajl_val chunks = v != NULL ? yajl_tree_get(v, chunks_path, yajl_t_array) : NULL;
    yajl_val inf = v != NULL ? yajl_tree_get(v, info_path, yajl_t_object) : NULL;
    const char *hash_text = hash != NULL ? YAJL_GET_STRING(hash) : NULL;
    if (bytes == NULL || hash_text == NULL || chunks == NULL || inf == NULL || YAJL_GET_INTEGER(bytes) < 0) {
        yajl_tree_free(v);
        snprintf(why, why_size, "the head of %s is not one of a checkpoint", name);
        return GUST_EINVAL;
    }
    /* The caller's info, written back as compact JSON (a flat object of numbers and
     * strings, as the caller wrote it). */
    struct gust_buf out = {0};
    gust_buf_append(&out, "{", 1);
    for (size_t i = 0; i < inf->u.object.len; i++) {
        yajl_val x = inf->u.object.values[i];
        const char *k = inf->u.object.keys[i];
        gust_buf_append(&out, ",", i > 0 ? 1 : 0);
        gust_json_append_string(&out, k, strlen(k));
        gust_buf_append(&out, ":", 1);
        const char *text = YAJL_GET_STRING(x);
        if (text != NULL) {
            gust_json_append_string(&out, text, strlen(text));
        } else if (YAJL_IS_NUMBER(x)) {
            gust_buf_printf(&out, "%s", YAJL_GET_NUMBER(x));
        } else {
            gust_buf_append(&out, "null", 4);
        }
    }
    gust_buf_append(&out, "}", 1);
    snprintf(info, info_size, "%.*s", (int)out.len, out.data != NULL ? out.data : "{}");
    gust_buf_free(&out);
    size_t want = (size_t)YAJL_GET_INTEGER(bytes);
    struct gust_buf blob = {0};
    rc = 0;
    /* Room for the whole blob at once: grown chunk by chunk, a 7 MB checkpoint was
     * copied again at each doubling. A head claiming more than its chunks can hold is
     * refused before anything is allocated for it. */
    if (want > chunks->u.array.len * (size_t)CHUNK_MAX) {
        snprintf(why, why_size, "the head of %s claims %zu bytes in %zu chunks", name, want,
                 chunks->u.array.len);
        rc = GUST_EINVAL;
    } else if (gust_buf_reserve(&blob, want) != 0) {
        snprintf(why, why_size, "out of memory for %zu bytes", want);
        rc = GUST_ENOMEM;
    }
    for (size_t i = 0; i < chunks->u.array.len && rc == 0; i++) {
        yajl_val s = chunks->u.array.values[i];
        rc = YAJL_IS_INTEGER(s) && YAJL_GET_INTEGER(s) > 0
                 ? read_chunk(bus, (uint64_t)YAJL_GET_INTEGER(s), &blob, why, why_size)
                 : (snprintf(why, why_size, "the head of %s lists a chunk that is not a sequence", name), GUST_EINVAL);
        if (rc == 0 && blob.len > want) {
            snprintf(why, why_size, "%s: more bytes than its head says (%zu)", name, want);
            rc = GUST_EINVAL;
        }
    }
    char hex[20];
    snprintf(hex, sizeof(hex), "%016" PRIx64, fnv1a(blob.data != NULL ? blob.data : "", blob.len));
    if (rc == 0 && (blob.len != want || strcmp(hex, hash_text) != 0)) {
        snprintf(why, why_size, "%s: %zu bytes read back, %zu in its head, hash %s against %s", name, blob.len, want,
                 hex, hash_text);
        rc = GUST_EINVAL;
    }
    yajl_tree_free(v);
    if (rc != 0) {
        gust_buf_free(&blob);
        return rc;
    }
    *data = blob.data;
    *len = blob.len;
    return 0;
}
