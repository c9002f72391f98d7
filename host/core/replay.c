#include "replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/feeds.h"
#include "../bus/stream_count.h"
#include "../bus/stream_ops.h"
#include "../common/json_out.h"
#include "../conf/value.h"
#include "../flow/flow.h"
#include "../flow/jtree.h"
#include "../unit/flow_state.h"
#include "../unit/unit.h"
#include "../vpl/rfc3339.h"
#include "kind.h"

#define BATCH 256
#define FEED_WAIT_MS 500
/* Reads that found nothing before the replay ends with fewer inputs than counted (the
 * stream was purged meanwhile). */
#define IDLE_READS 4
#define TEXT_PAYLOAD_MAX 240
/* A script that runs past its timeout on this many inputs ends the replay: each costs
 * the timeout, and a script stuck on every input would hold the admin worker for as
 * many timeouts as there are inputs. */
#define REPLAY_MAX_TIMEOUTS 3

/* One script's run over the events: its flow, its state writes kept in memory over
 * the live bucket, and the batch's outcomes. */
struct side {
    const char *name;
    struct gust_flow *flow;
    struct gust_state_mem *overlay;
    struct gust_state_store live; /* the bucket, read only */
    struct gust_state_store store;
    struct gust_emits emits;
    size_t emit_end[BATCH];
    int rc[BATCH];
    char (*error)[GUST_ERROR_MAX];
    int timeouts;
};

/* What the side wrote itself (a deletion included) comes first, then the bucket. */
static int side_read(void *ud, const char *key, size_t key_len, int64_t now_ms, struct gust_state_value *out,
                     struct gust_err *err)
{
    struct side *s = ud;
    struct gust_state_store own = gust_state_mem_store(s->overlay);
    int rc = own.read(own.ud, key, key_len, now_ms, out, err);
    if (rc != 0 || out->revision != 0) {
        return rc;
    }
    return s->live.read(s->live.ud, key, key_len, now_ms, out, err);
}

static int side_open(struct side *s, const char *name, const struct gust_flow_opts *base, struct gust_err *err)
{
    s->name = name;
    s->error = calloc(BATCH, sizeof(*s->error));
    if (s->error == NULL || gust_state_mem_create(&s->overlay) != 0) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    s->store = (struct gust_state_store){.read = side_read, .ud = s};
    struct gust_flow_opts fo = *base;
    fo.state = &s->store;
    struct gust_err ferr = {{0}};
    int rc = gust_flow_create(&fo, &s->flow, &ferr);
    if (rc != 0) {
        return gust_err_set(err, rc == GUST_ENOMEM ? rc : GUST_ECONFIG, "%s script: %s", name, ferr.msg);
    }
    return 0;
}

static void side_close(struct side *s)
{
    gust_flow_destroy(s->flow);
    gust_state_mem_destroy(s->overlay);
    gust_emits_free(&s->emits);
    free(s->error);
}

/* Runs the batch in[0..n) as a unit would, then keeps what it wrote. */
static void side_run(struct side *s, const struct gust_in *in, size_t n, const char *unit)
{
    gust_emits_clear(&s->emits);
    gust_flow_state_begin(s->flow);
    for (size_t i = 0; i < n; i++) {
        const struct gust_msg *m = &in[i].msg;
        struct gust_flow_meta meta = {.subject = m->subject,
                                      .seq = m->stream_seq,
                                      .time_ms = m->stored_ns / 1000000,
                                      .attempt = 1,
                                      .unit = unit,
                                      .headers = m->headers,
                                      .nheaders = m->nheaders};
        struct gust_err err = {{0}};
        if (s->timeouts >= REPLAY_MAX_TIMEOUTS) {
            s->rc[i] = GUST_ETIMEOUT; /* not run: the replay ends */
            snprintf(s->error[i], GUST_ERROR_MAX, "not run");
            s->emit_end[i] = s->emits.n;
            continue;
        }
        s->rc[i] = gust_flow_run(s->flow, m->data, m->len, &meta, &s->emits, &err);
        if (s->rc[i] != 0) {
            snprintf(s->error[i], GUST_ERROR_MAX, "%s", err.msg);
        }
        s->timeouts += s->rc[i] == GUST_ETIMEOUT;
        s->emit_end[i] = s->emits.n;
    }
    const struct gust_state_write *w;
    size_t nw = gust_flow_state_writes(s->flow, &w);
    for (size_t k = 0; k < nw; k++) {
        gust_state_mem_put(s->overlay, w[k].key, w[k].key_len, w[k].json, w[k].len, w[k].expires_ms);
    }
}

static size_t first_emit(const struct side *s, size_t i)
{
    return i > 0 ? s->emit_end[i - 1] : 0;
}

static int same_headers(const struct gust_emit *a, const struct gust_emit *b)
{
    if (a->nheaders != b->nheaders) {
        return 0;
    }
    for (size_t h = 0; h < a->nheaders; h++) { /* both sorted by name */
        if (strcmp(a->headers[h].name, b->headers[h].name) != 0 ||
            strcmp(a->headers[h].value, b->headers[h].value) != 0) {
            return 0;
        }
    }
    return 1;
}

/* Whether two payloads say the same as JSON; when not, where into path. */
static int same_payload(const struct gust_emit *a, const struct gust_emit *b, char *path, size_t size)
{
    path[0] = '\0';
    if (a->len == b->len && memcmp(a->payload, b->payload, a->len) == 0) {
        return 1;
    }
    struct gust_jnode *ta = NULL, *tb = NULL;
    char why[64];
    size_t at;
    int equal = 0;
    if (gust_jtree_parse(a->payload, a->len, &ta, why, sizeof(why), &at) == 0 &&
        gust_jtree_parse(b->payload, b->len, &tb, why, sizeof(why), &at) == 0) {
        equal = gust_jtree_equal(ta, tb, path, size);
    }
    gust_jtree_free(ta);
    gust_jtree_free(tb);
    return equal;
}

/* Whether message i came out the same on both sides; when not, the first difference
 * into what. */
static int same_outcome(const struct side *c, const struct side *d, size_t i, char *what, size_t size)
{
    if (c->rc[i] != 0 || d->rc[i] != 0) {
        if (c->rc[i] != 0 && d->rc[i] != 0) {
            return 1;
        }
        const struct side *failed = c->rc[i] != 0 ? c : d;
        const char *msg = failed->error[i];
        snprintf(what, size, "%s failed: %.*s", failed->name, (int)strcspn(msg, "\n"), msg);
        return 0;
    }
    size_t c0 = first_emit(c, i), d0 = first_emit(d, i);
    size_t nc = c->emit_end[i] - c0, nd = d->emit_end[i] - d0;
    for (size_t k = 0; k < nc && k < nd; k++) {
        const struct gust_emit *a = &c->emits.v[c0 + k], *b = &d->emits.v[d0 + k];
        char path[256];
        if (strcmp(a->subject, b->subject) != 0) {
            snprintf(what, size, "emit %zu: subject %s, candidate %s", k + 1, a->subject, b->subject);
            return 0;
        }
        if (!same_payload(a, b, path, sizeof(path))) {
            snprintf(what, size, "emit %zu: payload differs at %s", k + 1, path[0] != '\0' ? path : "the top");
            return 0;
        }
        if (!same_headers(a, b)) {
            snprintf(what, size, "emit %zu: headers differ", k + 1);
            return 0;
        }
    }
    if (nc != nd) {
        snprintf(what, size, "%zu emit(s), candidate %zu", nc, nd);
        return 0;
    }
    return 1;
}

static void side_json(struct gust_buf *out, const struct side *s, size_t i)
{
    gust_buf_printf(out, "\"%s\":{\"error\":", s->name);
    if (s->rc[i] != 0) {
        gust_json_append_string(out, s->error[i], strlen(s->error[i]));
    } else {
        gust_buf_append(out, "null", 4);
    }
    gust_buf_append(out, ",\"emits\":[", 10);
    for (size_t e = first_emit(s, i); e < s->emit_end[i]; e++) {
        const struct gust_emit *em = &s->emits.v[e];
        gust_buf_append(out, e > first_emit(s, i) ? ",{\"subject\":" : "{\"subject\":", e > first_emit(s, i) ? 12 : 11);
        gust_json_append_string(out, em->subject, strlen(em->subject));
        gust_buf_append(out, ",\"payload\":", 11);
        gust_buf_append(out, em->payload, em->len);
        gust_buf_append(out, ",\"headers\":{", 12);
        for (size_t h = 0; h < em->nheaders; h++) {
            gust_buf_append(out, h > 0 ? "," : "", h > 0);
            gust_json_append_string(out, em->headers[h].name, strlen(em->headers[h].name));
            gust_buf_append(out, ":", 1);
            gust_json_append_string(out, em->headers[h].value, strlen(em->headers[h].value));
        }
        gust_buf_append(out, "}}", 2);
    }
    gust_buf_append(out, "]}", 2);
}

static void side_text(struct gust_buf *out, const struct side *s, size_t i)
{
    const char *label = strcmp(s->name, "current") == 0 ? "  current:  " : "  candidate:";
    if (s->rc[i] != 0) {
        const char *msg = s->error[i];
        gust_buf_printf(out, "%s error: %.*s\n", label, (int)strcspn(msg, "\n"), msg);
        return;
    }
    if (s->emit_end[i] == first_emit(s, i)) {
        gust_buf_printf(out, "%s (no emits)\n", label);
    }
    for (size_t e = first_emit(s, i); e < s->emit_end[i]; e++) {
        const struct gust_emit *em = &s->emits.v[e];
        int cut = em->len > TEXT_PAYLOAD_MAX;
        gust_buf_printf(out, "%s %s %.*s%s\n", label, em->subject, cut ? TEXT_PAYLOAD_MAX : (int)em->len,
                        em->payload, cut ? "..." : "");
        label = "            ";
    }
}

static void report(const struct gust_replay_opts *o, const struct side *c, const struct side *d, size_t i,
                   const struct gust_msg *m, const char *what, struct gust_buf *json, struct gust_buf *text)
{
    json->len = 0;
    text->len = 0;
    gust_buf_printf(json, "{\"seq\":%" PRIu64 ",\"subject\":", m->stream_seq);
    gust_json_append_string(json, m->subject, strlen(m->subject));
    gust_buf_append(json, ",\"difference\":", 14);
    gust_json_append_string(json, what, strlen(what));
    gust_buf_append(json, ",", 1);
    side_json(json, c, i);
    gust_buf_append(json, ",", 1);
    side_json(json, d, i);
    gust_buf_append(json, "}", 1);
    gust_buf_printf(text, "seq %" PRIu64 " (%s): %s\n", m->stream_seq, m->subject, what);
    side_text(text, c, i);
    side_text(text, d, i);
    if (gust_buf_append(json, "", 1) != 0 || gust_buf_append(text, "", 1) != 0) {
        return; /* out of memory: counted, not shown */
    }
    struct gust_replay_diff diff = {.seq = m->stream_seq,
                                    .subject = m->subject,
                                    .what = what,
                                    .json = json->data,
                                    .len = json->len - 1,
                                    .text = text->data};
    o->on_diff(o->ud, &diff);
}

/* Where to start and how many to read, from the options: returns 0 or a bus error. */
static int plan(const struct gust_replay_opts *o, const char *stream, const char *filter, uint64_t *start,
                uint64_t *want, struct gust_err *err)
{
    char why[300];
    uint64_t first = 0, count = 0;
    int rc;
    if (o->since_ms > 0 || o->from_seq > 0) {
        rc = gust_stream_count(o->bus, stream, filter, o->from_seq, o->since_ms, &first, &count, why, sizeof(why));
        *start = first;
        *want = count;
        return rc == 0 ? 0 : gust_err_set(err, rc, "%s", why);
    }
    uint64_t n = o->last > 0 ? o->last : GUST_REPLAY_DEFAULT_LAST;
    if ((rc = gust_stream_count(o->bus, stream, filter, 1, 0, &first, &count, why, sizeof(why))) != 0) {
        return gust_err_set(err, rc, "%s", why);
    }
    *start = first;
    *want = count < n ? count : n;
    if (count <= n) {
        return 0;
    }
    /* The last n: the highest sequence from which n remain (the count drops by one at
     * each of the filter's messages), found by halving. */
    uint64_t last = 0, msgs = 0;
    if ((rc = gust_stream_state(o->bus, stream, &last, &msgs, why, sizeof(why))) != 0) {
        return gust_err_set(err, rc, "%s", why);
    }
    uint64_t lo = 1, hi = last + 1; /* count(lo) >= n > count(hi) */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((rc = gust_stream_count(o->bus, stream, filter, mid, 0, &first, &count, why, sizeof(why))) != 0) {
            return gust_err_set(err, rc, "%s", why);
        }
        if (count >= n) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    *start = lo;
    return 0;
}

static const struct gust_unit_conf *find_flow(const struct gust_config *c, const char *name)
{
    for (size_t i = 0; i < c->nunits; i++) {
        if ((c->units[i].kind->flags & GUST_KIND_LUA) != 0 && strcmp(c->units[i].name, name) == 0) {
            return &c->units[i];
        }
    }
    return NULL;
}

/* A detect unit's idle ticks share its input subject; a flow never sees them (as the
 * consumer core acks them unseen for a running flow). */
static int drop_ticks(struct gust_feed *feed, struct gust_in *in, int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (in[i].tick != NULL) {
            feed->ops->release(feed, &in[i], 1);
            continue;
        }
        in[kept++] = in[i];
    }
    return kept;
}

int gust_replay_run(const struct gust_replay_opts *o, struct gust_replay_summary *out, struct gust_err *err)
{
    memset(out, 0, sizeof(*out));
    const struct gust_config *c = o->config;
    const struct gust_unit_conf *u = find_flow(c, o->unit);
    if (u == NULL) {
        return gust_err_set(err, GUST_ENOTFOUND, "no flow unit '%s'", o->unit);
    }
    if (u->k.edge != NULL) {
        return gust_err_set(err, GUST_ECONFIG, "flow '%s' is fed on the edge path: its input is not stored", o->unit);
    }
    snprintf(out->unit, sizeof(out->unit), "%s", u->name);
    struct side sides[2] = {{0}};
    struct side *cur = &sides[0], *cand = &sides[1];
    struct gust_kv_state *live = NULL;
    struct gust_feed *feed = NULL;
    struct gust_in *in = NULL;
    struct gust_buf json = {0}, text = {0};
    struct gust_kv_state_conf kc = {.bus = o->bus,
                                    .bucket = c->nats.state_bucket,
                                    .unit = u->name,
                                    .wait_ms = c->nats.publish_timeout,
                                    .read_only = 1};
    int rc = gust_kv_state_create(&kc, &live, err);
    if (rc != 0) {
        return rc;
    }
    cur->live = cand->live = gust_kv_state_store(live);
    struct gust_flow_opts fo = {.script_path = u->k.script,
                                .timeout_ms = (long)u->k.timeout,
                                .memory_max = (size_t)u->k.memory_max,
                                .lua_path = gust_config_lua_path(c, u),
                                .tables = o->tables};
    if ((rc = side_open(cur, "current", &fo, err)) != 0) {
        goto done;
    }
    fo.script_path = o->candidate_path;
    fo.script_text = o->candidate_text;
    fo.script_len = o->candidate_len;
    if ((rc = side_open(cand, "candidate", &fo, err)) != 0) {
        goto done;
    }
    const char *source = u->k.source != NULL ? u->k.source : gust_flow_source(cur->flow);
    if (source == NULL) {
        rc = gust_err_set(err, GUST_ECONFIG, "flow '%s' has no source", u->name);
        goto done;
    }
    snprintf(out->source, sizeof(out->source), "%s", source);
    uint64_t start = 0, want = 0;
    if ((rc = plan(o, c->nats.stream, source, &start, &want, err)) != 0) {
        goto done;
    }
    in = calloc(BATCH, sizeof(*in));
    if (in == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto done;
    }
    if (want > 0 &&
        (rc = gust_ordered_feed_open(o->bus, c->nats.stream, source, start, FEED_WAIT_MS, &feed, err)) != 0) {
        goto done;
    }
    int headers = gust_flow_uses_meta(cur->flow) || gust_flow_uses_meta(cand->flow);
    /* want counts the subject's stored messages, idle ticks included: reading stops at
     * that count, not at as many inputs, as ticks stored meanwhile would never end it. */
    uint64_t read = 0;
    for (int idle = 0; read < want && idle < IDLE_READS;) {
        uint64_t left = want - read;
        char why[300];
        int n = feed->ops->next(feed, in, left < BATCH ? (size_t)left : BATCH, headers, why, sizeof(why));
        if (n < 0) {
            rc = gust_err_set(err, GUST_EAGAIN, "reading %s: %s", source, why);
            goto done;
        }
        idle = n == 0 ? idle + 1 : 0;
        read += (uint64_t)n;
        n = drop_ticks(feed, in, n);
        side_run(cur, in, (size_t)n, u->name);
        side_run(cand, in, (size_t)n, u->name);
        struct side *stuck = cur->timeouts >= REPLAY_MAX_TIMEOUTS    ? cur
                             : cand->timeouts >= REPLAY_MAX_TIMEOUTS ? cand
                                                                     : NULL;
        if (stuck != NULL) {
            rc = gust_err_set(err, GUST_ECONFIG,
                              "%s script: ran past its timeout (%lld ms) on %d inputs; the replay stopped",
                              stuck->name, (long long)u->k.timeout, REPLAY_MAX_TIMEOUTS);
            feed->ops->release(feed, in, (size_t)n);
            goto done;
        }
        for (size_t i = 0; i < (size_t)n; i++) {
            char what[600];
            out->inputs++;
            out->errors_current += cur->rc[i] != 0;
            out->errors_candidate += cand->rc[i] != 0;
            if (out->first_seq == 0) {
                out->first_seq = in[i].msg.stream_seq;
            }
            out->last_seq = in[i].msg.stream_seq;
            if (same_outcome(cur, cand, i, what, sizeof(what))) {
                out->identical++;
                continue;
            }
            out->differing++;
            if (o->on_diff != NULL) {
                report(o, cur, cand, i, &in[i].msg, what, &json, &text);
            }
        }
        feed->ops->release(feed, in, (size_t)n);
    }
    rc = 0;
done:
    if (feed != NULL) {
        feed->ops->close(feed);
    }
    free(in);
    side_close(cur);
    side_close(cand);
    gust_kv_state_destroy(live);
    gust_buf_free(&json);
    gust_buf_free(&text);
    return rc;
}

int gust_replay_summary_json(const struct gust_replay_summary *s, struct gust_buf *out)
{
    int rc = gust_buf_append(out, "{\"unit\":", 8);
    rc = rc ? rc : gust_json_append_string(out, s->unit, strlen(s->unit));
    rc = rc ? rc : gust_buf_append(out, ",\"source\":", 10);
    rc = rc ? rc : gust_json_append_string(out, s->source, strlen(s->source));
    return rc ? rc
              : gust_buf_printf(out,
                                ",\"from_seq\":%" PRIu64 ",\"to_seq\":%" PRIu64 ",\"inputs\":%" PRIu64
                                ",\"identical\":%" PRIu64 ",\"differing\":%" PRIu64
                                ",\"errors\":{\"current\":%" PRIu64 ",\"candidate\":%" PRIu64 "}}",
                                s->first_seq, s->last_seq, s->inputs, s->identical, s->differing,
                                s->errors_current, s->errors_candidate);
}

int gust_replay_parse_since(const char *s, int64_t *ms)
{
    if (rfc3339_parse(s, strlen(s), ms) == 0) {
        return 0;
    }
    int64_t ago;
    if (gust_parse_duration(s, &ago) != 0 || ago < 0) {
        return -1;
    }
    *ms = gust_clock_wall_ms() - ago;
    return 0;
}
