/* A flow unit's handler: each message of a batch runs the script's on_event with its
 * meta; the script's log lines go to gust's log and /events, at most log_rate a second
 * (a token bucket: bursts of up to log_rate lines, then log_rate a second; what goes
 * over is counted and the log says how much, at most once a second). What the batch
 * staged in its durable state is committed before its emits are published
 * (flow_state.h). A message that is a call (its reply_to) runs with meta.call set, and
 * what the script gives reply() goes to the batch's replies, which the core sends
 * once the message is done. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/json_out.h"
#include "../common/log.h"
#include "../flow/flow.h"
#include "flow_state.h"
#include "handlers.h"
#include "recent.h"

#define DROP_REPORT_NS 1000000000u

struct flow_unit {
    char unit[80];
    char name[88]; /* "flow_<unit>", as the consumer core logs it */
    struct gust_flow *flow;
    struct gust_recent *recent;
    const struct gust_msg *msg; /* the message running, or NULL (the script's load) */
    double rate, tokens;
    uint64_t refilled_ns;
    uint64_t unreported, reported_ns;
    struct gust_kv_state *state; /* NULL: no durable state */
    struct gust_state_store store;
    uint64_t skipped; /* the flow's count at the last batch */
    /* The flow's heap and memory_max failures after the last message, for /units and
     * /metrics (read on the HTTP thread). */
    atomic_uint_fast64_t heap_bytes, memory_failures;
    uint64_t memory_max; /* its bound (0: none), for the console's gauge */
};

static void on_log(void *ud, int level, const char *text, size_t len)
{
    struct flow_unit *u = ud;
    uint64_t now = gust_clock_mono_ns();
    u->tokens += (double)(now - u->refilled_ns) * 1e-9 * u->rate;
    u->refilled_ns = now;
    if (u->tokens > u->rate) {
        u->tokens = u->rate;
    }
    if (u->tokens < 1) {
        u->unreported++;
        gust_recent_log_dropped(u->recent, 1);
        return;
    }
    u->tokens -= 1;
    if (u->msg != NULL) {
        gust_log(level, "[%s] seq %" PRIu64 ": %s", u->name, u->msg->stream_seq, text);
        gust_recent_log(u->recent, level, u->msg->stream_seq, u->msg->attempt, text, len);
    } else {
        gust_log(level, "[%s] %s", u->name, text);
        gust_recent_log(u->recent, level, 0, 0, text, len);
    }
}

static void report_drops(struct flow_unit *u)
{
    uint64_t now = gust_clock_mono_ns();
    if (u->unreported > 0 && now - u->reported_ns >= DROP_REPORT_NS) {
        gust_warn("[%s] log: %" PRIu64 " lines dropped (log_rate %.0f lines a second)", u->name,
                  u->unreported, u->rate);
        u->unreported = 0;
        u->reported_ns = now;
    }
}

static void flow_run_batch(void *impl, struct gust_batch *b)
{
    struct flow_unit *u = impl;
    gust_flow_state_begin(u->flow);
    for (size_t i = 0; i < b->n; i++) {
        const struct gust_msg *m = &b->msgs[i];
        if (b->stopping != NULL && atomic_load(b->stopping)) {
            /* A stop (reload, shutdown) does not wait for the rest of the batch, whose
             * events could each run up to the timeout: they are redelivered. */
            for (; i < b->n; i++) {
                b->outcome[i] = GUST_OUTCOME_WAIT;
                snprintf(b->error[i], GUST_ERROR_MAX, "not run: the unit is stopping");
                b->emit_end[i] = b->emits.n;
            }
            break;
        }
        struct gust_flow_meta meta = {
            .subject = m->subject,
            .seq = m->stream_seq,
            .time_ms = m->stored_ns / 1000000,
            .attempt = m->attempt,
            .unit = u->unit,
            .headers = m->headers,
            .nheaders = m->nheaders,
            .call = b->reply_to != NULL && b->reply_to[i] != NULL,
        };
        struct gust_err err = {{0}};
        u->msg = m;
        int rc = gust_flow_run(u->flow, m->data, m->len, &meta, &b->emits, &err);
        u->msg = NULL;
        if (rc != 0) {
            /* Undecodable input can never succeed; a script failure may be transient;
             * a state bucket that did not answer is the bus's failure, not the
             * message's. */
            int bus = u->state != NULL && gust_kv_state_take_read_failure(u->state);
            b->outcome[i] = rc == GUST_EINVAL ? GUST_OUTCOME_DEAD : bus ? GUST_OUTCOME_WAIT : GUST_OUTCOME_RETRY;
            snprintf(b->error[i], GUST_ERROR_MAX, "%s", err.msg);
        } else if (meta.call) {
            int status;
            const char *json;
            size_t len;
            if (gust_flow_reply(u->flow, &status, &json, &len) &&
                gust_replies_push(&b->replies, i, status, json, len) != 0) {
                b->outcome[i] = GUST_OUTCOME_RETRY;
                snprintf(b->error[i], GUST_ERROR_MAX, "reply: out of memory");
            }
        }
        b->emit_end[i] = b->emits.n;
        atomic_store(&u->heap_bytes, gust_flow_heap_bytes(u->flow));
        atomic_store(&u->memory_failures, gust_flow_memory_failures(u->flow));
    }
    report_drops(u);
}

static void flow_commit(void *impl, struct gust_batch *b)
{
    struct flow_unit *u = impl;
    gust_kv_state_commit(u->state, u->flow, b);
    uint64_t skipped = gust_flow_state_skipped(u->flow);
    gust_kv_state_add_skipped(u->state, skipped - u->skipped);
    u->skipped = skipped;
}

static void flow_quiet(void *impl)
{
    struct flow_unit *u = impl;
    gust_flow_collect(u->flow);
    atomic_store(&u->heap_bytes, gust_flow_heap_bytes(u->flow));
}

static void flow_render_json(void *impl, struct gust_buf *out)
{
    struct flow_unit *u = impl;
    gust_buf_printf(out, ",\"heap_bytes\":%" PRIu64 ",\"memory_failures\":%" PRIu64,
                    (uint64_t)atomic_load(&u->heap_bytes), (uint64_t)atomic_load(&u->memory_failures));
    if (u->state == NULL) {
        return;
    }
    struct gust_kv_state_stats st;
    gust_kv_state_stats(u->state, &st);
    const char *bucket = gust_kv_state_bucket(u->state);
    gust_buf_append(out, ",\"flow_state\":{\"bucket\":", 24);
    gust_json_append_string(out, bucket, strlen(bucket));
    gust_buf_printf(out,
                    ",\"reads\":%" PRIu64 ",\"cache_hits\":%" PRIu64 ",\"writes\":%" PRIu64
                    ",\"conflicts\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"errors\":%" PRIu64
                    ",\"commit_seconds\":%.6f}",
                    st.reads, st.cache_hits, st.writes, st.conflicts, st.skipped, st.errors, (double)st.commit_ns / 1e9);
}

void gust_flow_handler_memory(void *impl, uint64_t *heap_bytes, uint64_t *failures)
{
    struct flow_unit *u = impl;
    *heap_bytes = atomic_load(&u->heap_bytes);
    *failures = atomic_load(&u->memory_failures);
}

uint64_t gust_flow_handler_memory_max(void *impl)
{
    return ((struct flow_unit *)impl)->memory_max;
}

int gust_flow_handler_state(void *impl, struct gust_kv_state_stats *out)
{
    struct flow_unit *u = impl;
    if (u->state == NULL) {
        return 0;
    }
    gust_kv_state_stats(u->state, out);
    return 1;
}

static void flow_destroy(void *impl)
{
    struct flow_unit *u = impl;
    u->reported_ns = 0;
    report_drops(u);
    gust_flow_destroy(u->flow);
    gust_kv_state_destroy(u->state);
    free(u);
}

int gust_flow_handler_create(const char *unit, const struct gust_flow_opts *opts, long log_rate,
                             const struct gust_kv_state_conf *state, struct gust_handler *out, const char **source,
                             struct gust_err *err)
{
    struct flow_unit *u = calloc(1, sizeof(*u));
    if (u == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    snprintf(u->unit, sizeof(u->unit), "%s", unit);
    snprintf(u->name, sizeof(u->name), "flow_%s", u->unit);
    u->recent = gust_recent_get(unit);
    u->rate = log_rate > 0 ? (double)log_rate : 1;
    u->tokens = u->rate;
    u->refilled_ns = gust_clock_mono_ns();
    u->memory_max = opts->memory_max;
    struct gust_flow_opts o = *opts;
    o.log = on_log;
    o.log_ud = u;
    int rc = state != NULL ? gust_kv_state_create(state, &u->state, err) : 0;
    if (u->state != NULL) {
        u->store = gust_kv_state_store(u->state);
        o.state = &u->store;
    }
    if (rc == 0) {
        rc = gust_flow_create(&o, &u->flow, err);
    }
    if (rc != 0) {
        gust_kv_state_destroy(u->state);
        free(u);
        return rc;
    }
    *source = gust_flow_source(u->flow);
    atomic_store(&u->heap_bytes, gust_flow_heap_bytes(u->flow));
    *out = (struct gust_handler){.kind = "flow",
                                 .impl = u,
                                 .wants_headers = gust_flow_uses_meta(u->flow), /* meta.headers */
                                 .answers_calls = 1,                            /* reply() */
                                 .run_batch = flow_run_batch,
                                 .commit = u->state != NULL ? flow_commit : NULL,
                                 .quiet = flow_quiet,
                                 .render_json = flow_render_json,
                                 .destroy = flow_destroy};
    return 0;
}
