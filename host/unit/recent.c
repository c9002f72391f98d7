#include "recent.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json_out.h"

/* The most an entry keeps of each part. An entry's bytes live in a block of its own,
 * sized to what it holds and reused by the next event in its slot, so a unit's ring
 * costs what its events need (about 35 KiB for 50 orders events), not 50 times these
 * maxima (with 50 flows, RSS counts every ring). */
#define PAYLOAD_MAX 1024
#define SUBJECT_MAX 192
#define ERROR_MAX 256
#define EMITS_KEPT 4
#define EMIT_BYTES 1024 /* subjects and payloads of the kept emits, packed */

struct emit_ref {
    uint16_t subject_off, subject_len;
    uint16_t payload_off, payload_len;
    uint32_t payload_bytes; /* before truncation */
};

/* bytes holds, one after the other: the subject, the error (empty when none), the
 * payload and the kept emits' subjects and payloads (emit_ref offsets count from there). */
struct entry {
    uint64_t seq;
    int64_t at_ms; /* wall clock, when the batch finished */
    uint32_t attempt;
    uint8_t fate;
    uint16_t subject_len, error_len, payload_len;
    uint32_t payload_bytes;
    uint16_t nemits;
    uint32_t emits_total;
    struct emit_ref emits[EMITS_KEPT];
    char *bytes;
    size_t cap;
};

/* A flow's log line, shown with the event it was logged for. */
#define LOG_TEXT_MAX 240
struct log_entry {
    uint64_t seq;
    int64_t at_ms;
    uint32_t attempt;
    uint8_t level;
    uint16_t len;
    char text[LOG_TEXT_MAX];
};

struct gust_recent {
    struct gust_recent *next; /* registry */
    char unit[128];
    pthread_mutex_t lock;
    size_t head; /* next slot to write */
    size_t count;
    struct entry ring[GUST_RECENT_EVENTS];
    struct log_entry *logs; /* GUST_RECENT_LOGS, allocated at the first line */
    size_t log_head, log_count;
    uint64_t log_lines, log_dropped;
};

/* Kept reachable until exit (see recent.h). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gust_recent *registry;

static struct gust_recent *find_locked(const char *unit)
{
    for (struct gust_recent *r = registry; r != NULL; r = r->next) {
        if (strcmp(r->unit, unit) == 0) {
            return r;
        }
    }
    return NULL;
}

struct gust_recent *gust_recent_find(const char *unit)
{
    pthread_mutex_lock(&registry_lock);
    struct gust_recent *r = find_locked(unit);
    pthread_mutex_unlock(&registry_lock);
    return r;
}

struct gust_recent *gust_recent_get(const char *unit)
{
    pthread_mutex_lock(&registry_lock);
    struct gust_recent *r = find_locked(unit);
    if (r == NULL && (r = calloc(1, sizeof(*r))) != NULL) {
        snprintf(r->unit, sizeof(r->unit), "%s", unit);
        pthread_mutex_init(&r->lock, NULL);
        r->next = registry;
        registry = r;
    }
    pthread_mutex_unlock(&registry_lock);
    return r;
}

/* How many bytes of s[0..len) fit in max without splitting a UTF-8 sequence (when the
 * text is UTF-8; binary is cut anywhere and shown in base64). */
static size_t cut(const char *s, size_t len, size_t max)
{
    if (len <= max) {
        return len;
    }
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) {
        n--;
    }
    return n > 0 ? n : max;
}

/* Plans which emits of message i are kept and how much of each (refs, offsets from the
 * emits' base); returns the bytes they take. */
static size_t plan_emits(struct entry *e, const struct gust_batch *b, size_t i)
{
    /* Emits only exist for messages that succeeded (or whose emits failed to store). */
    size_t from = i > 0 ? b->emit_end[i - 1] : 0, to = b->emit_end[i];
    if (to > b->emits.n) {
        to = b->emits.n;
    }
    if (to < from || b->outcome[i] != GUST_OUTCOME_OK) {
        to = from;
    }
    e->emits_total = (uint32_t)(to - from);
    e->nemits = 0;
    size_t used = 0;
    for (size_t k = from; k < to && e->nemits < EMITS_KEPT; k++) {
        const struct gust_emit *em = &b->emits.v[k];
        size_t slen = strlen(em->subject);
        if (used + slen + 16 > EMIT_BYTES) {
            break;
        }
        struct emit_ref *ref = &e->emits[e->nemits++];
        ref->subject_off = (uint16_t)used;
        ref->subject_len = (uint16_t)slen;
        used += slen;
        /* Each emit gets at most an equal share of what is left. */
        size_t room = (EMIT_BYTES - used) / (EMITS_KEPT - e->nemits + 1);
        ref->payload_off = (uint16_t)used;
        ref->payload_len = (uint16_t)cut(em->payload, em->len, room);
        ref->payload_bytes = (uint32_t)em->len;
        used += ref->payload_len;
    }
    return used;
}

static void record_one(struct entry *e, const struct gust_batch *b, size_t i, uint8_t fate, int64_t now_ms)
{
    const struct gust_msg *m = &b->msgs[i];
    e->seq = m->stream_seq;
    e->at_ms = now_ms;
    e->attempt = m->attempt;
    e->fate = fate;
    const char *subject = m->subject != NULL ? m->subject : "";
    e->subject_len = (uint16_t)cut(subject, strlen(subject), SUBJECT_MAX);
    /* error[i] is only written by a handler that failed the message. */
    const char *why = fate == GUST_FATE_OK             ? ""
                      : fate == GUST_FATE_PUBLISH_FAILED ? "an emit was not stored"
                                                         : b->error[i];
    e->error_len = (uint16_t)cut(why, strlen(why), ERROR_MAX);
    e->payload_bytes = (uint32_t)m->len;
    e->payload_len = (uint16_t)cut(m->data, m->len, PAYLOAD_MAX);
    size_t emit_bytes = plan_emits(e, b, i);
    size_t need = (size_t)e->subject_len + e->error_len + e->payload_len + emit_bytes;
    if (need > e->cap || e->bytes == NULL) {
        char *p = realloc(e->bytes, need > 0 ? need : 1);
        if (p == NULL) { /* keep what the entry says of the event, without its bytes */
            e->subject_len = e->error_len = e->payload_len = 0;
            e->nemits = 0;
            return;
        }
        e->bytes = p;
        e->cap = need;
    }
    char *w = e->bytes;
    memcpy(w, subject, e->subject_len);
    memcpy(w += e->subject_len, why, e->error_len);
    memcpy(w += e->error_len, m->data, e->payload_len);
    w += e->payload_len;
    size_t from = i > 0 ? b->emit_end[i - 1] : 0;
    for (size_t k = 0; k < e->nemits; k++) {
        const struct gust_emit *em = &b->emits.v[from + k];
        const struct emit_ref *ref = &e->emits[k];
        memcpy(w + ref->subject_off, em->subject, ref->subject_len);
        memcpy(w + ref->payload_off, em->payload, ref->payload_len);
    }
}

void gust_recent_record(struct gust_recent *r, const struct gust_batch *b, const uint8_t *fate)
{
    if (r == NULL || b->n == 0) {
        return;
    }
    int64_t now_ms = gust_clock_wall_ms();
    /* Only the last messages of a big batch would survive in the ring anyway. */
    size_t first = b->n > GUST_RECENT_EVENTS ? b->n - GUST_RECENT_EVENTS : 0;
    pthread_mutex_lock(&r->lock);
    for (size_t i = first; i < b->n; i++) {
        record_one(&r->ring[r->head], b, i, fate[i], now_ms);
        r->head = (r->head + 1) % GUST_RECENT_EVENTS;
        if (r->count < GUST_RECENT_EVENTS) {
            r->count++;
        }
    }
    pthread_mutex_unlock(&r->lock);
}

void gust_recent_log(struct gust_recent *r, int level, uint64_t seq, uint32_t attempt, const char *text, size_t len)
{
    if (r == NULL) {
        return;
    }
    int64_t at = gust_clock_wall_ms();
    pthread_mutex_lock(&r->lock);
    if (r->logs == NULL) {
        r->logs = calloc(GUST_RECENT_LOGS, sizeof(*r->logs));
    }
    if (r->logs != NULL) {
        struct log_entry *l = &r->logs[r->log_head];
        *l = (struct log_entry){.seq = seq, .at_ms = at, .attempt = attempt, .level = (uint8_t)level};
        l->len = (uint16_t)cut(text, len, LOG_TEXT_MAX);
        memcpy(l->text, text, l->len);
        r->log_head = (r->log_head + 1) % GUST_RECENT_LOGS;
        if (r->log_count < GUST_RECENT_LOGS) {
            r->log_count++;
        }
    }
    r->log_lines++;
    pthread_mutex_unlock(&r->lock);
}

void gust_recent_log_dropped(struct gust_recent *r, uint64_t n)
{
    if (r != NULL) {
        pthread_mutex_lock(&r->lock);
        r->log_dropped += n;
        pthread_mutex_unlock(&r->lock);
    }
}

void gust_recent_log_counts(struct gust_recent *r, uint64_t *lines, uint64_t *dropped)
{
    *lines = *dropped = 0;
    if (r != NULL) {
        pthread_mutex_lock(&r->lock);
        *lines = r->log_lines;
        *dropped = r->log_dropped;
        pthread_mutex_unlock(&r->lock);
    }
}

static const char *const fate_names[] = {"ok", "retry", "wait", "dead", "publish_failed"};
static const char *const level_names[] = {"error", "warn", "info", "debug"};

static int append_payload(struct gust_buf *out, const char *p, size_t len, size_t bytes)
{
    int rc;
    if (gust_utf8_valid(p, len)) {
        rc = gust_buf_append(out, "\"payload\":", 10);
        rc = rc ? rc : gust_json_append_string(out, p, len);
    } else {
        rc = gust_buf_append(out, "\"payload_base64\":", 17);
        rc = rc ? rc : gust_json_append_base64(out, (const unsigned char *)p, len);
    }
    return rc ? rc : gust_buf_printf(out, ",\"payload_bytes\":%zu,\"truncated\":%s", bytes, len < bytes ? "true" : "false");
}

/* The kept log lines of e's message (same seq and attempt), oldest first. */
static int append_logs(struct gust_buf *out, const struct gust_recent *r, const struct entry *e)
{
    int rc = 0, first = 1;
    for (size_t k = 0; k < r->log_count && rc == 0; k++) {
        const struct log_entry *l = &r->logs[(r->log_head + GUST_RECENT_LOGS - r->log_count + k) % GUST_RECENT_LOGS];
        if (l->seq != e->seq || l->attempt != e->attempt) {
            continue;
        }
        char at[GUST_RFC3339_SIZE];
        gust_rfc3339_ms(l->at_ms, at);
        rc = gust_buf_printf(out, "%s{\"level\":\"%s\",\"at\":\"%s\",\"text\":", first ? "" : ",",
                             level_names[l->level & 3], at);
        rc = rc ? rc : gust_json_append_string(out, l->text, l->len);
        rc = rc ? rc : gust_buf_append(out, "}", 1);
        first = 0;
    }
    return rc;
}

int gust_recent_render(struct gust_recent *r, struct gust_buf *out)
{
    int rc = gust_buf_append(out, "[", 1);
    if (r == NULL) {
        return rc ? rc : gust_buf_append(out, "]", 1);
    }
    pthread_mutex_lock(&r->lock);
    for (size_t k = 0; k < r->count && rc == 0; k++) {
        const struct entry *e = &r->ring[(r->head + GUST_RECENT_EVENTS - 1 - k) % GUST_RECENT_EVENTS];
        char at[GUST_RFC3339_SIZE];
        gust_rfc3339_ms(e->at_ms, at);
        rc = gust_buf_printf(out, "%s{\"seq\":%" PRIu64 ",\"subject\":", k > 0 ? "," : "", e->seq);
        const char *subject = e->bytes != NULL ? e->bytes : ""; /* NULL: out of memory at its record */
        const char *error = subject + e->subject_len, *payload = error + e->error_len;
        const char *emit_bytes = payload + e->payload_len;
        rc = rc ? rc : gust_json_append_string(out, subject, e->subject_len);
        rc = rc ? rc : gust_buf_printf(out, ",\"attempt\":%u,\"at\":\"%s\",\"outcome\":\"%s\",\"error\":", e->attempt, at,
                                       fate_names[e->fate]);
        if (e->error_len > 0) {
            rc = rc ? rc : gust_json_append_string(out, error, e->error_len);
        } else {
            rc = rc ? rc : gust_buf_append(out, "null", 4);
        }
        rc = rc ? rc : gust_buf_append(out, ",", 1);
        rc = rc ? rc : append_payload(out, payload, e->payload_len, e->payload_bytes);
        rc = rc ? rc : gust_buf_append(out, ",\"emits\":[", 10);
        for (size_t j = 0; j < e->nemits && rc == 0; j++) {
            const struct emit_ref *ref = &e->emits[j];
            rc = gust_buf_printf(out, "%s{\"subject\":", j > 0 ? "," : "");
            rc = rc ? rc : gust_json_append_string(out, emit_bytes + ref->subject_off, ref->subject_len);
            rc = rc ? rc : gust_buf_append(out, ",", 1);
            rc = rc ? rc : append_payload(out, emit_bytes + ref->payload_off, ref->payload_len, ref->payload_bytes);
            rc = rc ? rc : gust_buf_append(out, "}", 1);
        }
        rc = rc ? rc : gust_buf_printf(out, "],\"emits_total\":%u,\"logs\":[", e->emits_total);
        rc = rc ? rc : append_logs(out, r, e);
        rc = rc ? rc : gust_buf_append(out, "]}", 2);
    }
    pthread_mutex_unlock(&r->lock);
    return rc ? rc : gust_buf_append(out, "]", 1);
}
