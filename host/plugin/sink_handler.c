#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/sdk.h"

#include "sink_handler.h"

#include "../unit/plugin_counters.h"

struct sink {
    struct gust_instance *inst;
    int64_t ack_wait_ms;
    struct gust_result *results;
    size_t cap;
};

static void sink_run_batch(void *impl, struct gust_batch *b)
{
    struct sink *s = impl;
    if (b->n > s->cap) {
        struct gust_result *r = realloc(s->results, b->n * sizeof(*r));
        if (r == NULL) {
            for (size_t i = 0; i < b->n; i++) {
                b->outcome[i] = GUST_OUTCOME_WAIT;
                snprintf(b->error[i], GUST_ERROR_MAX, "out of memory");
            }
            return;
        }
        s->results = r;
        s->cap = b->n;
    }
    for (size_t i = 0; i < b->n; i++) {
        s->results[i] = (struct gust_result){.status = GUST_RETRY};
        b->emit_end[i] = 0;
    }
    int rc = gust_instance_deliver(s->inst, b->msgs, b->n, s->results);
    for (size_t i = 0; i < b->n; i++) {
        if (rc != 0) {
            b->outcome[i] = GUST_OUTCOME_WAIT;
            snprintf(b->error[i], GUST_ERROR_MAX, "%s: the whole batch failed (%d)", s->inst->name, rc);
        } else if (s->results[i].status != GUST_DELIVERED) {
            /* A sink that is down or overloaded holds messages on the bus until it is
             * back; one that rejects them gets max_deliver attempts, then the DLQ. */
            b->outcome[i] = s->results[i].status == GUST_RETRY ? GUST_OUTCOME_WAIT : GUST_OUTCOME_RETRY;
            snprintf(b->error[i], GUST_ERROR_MAX, "%s", s->results[i].error);
        }
    }
}

/* ABI 1.5 types with a fetch_limits callback shape the unit's fetches. */
static void sink_fetch_limits(void *impl, size_t *max, int64_t *linger_ms)
{
    struct sink *s = impl;
    const struct gust_plugin_type *t = s->inst->type;
    if (t == NULL || t->fetch_limits == NULL || !s->inst->started) {
        return;
    }
    struct gust_fetch_limits l = {.ack_wait_ms = s->ack_wait_ms, .max = *max, .linger_ms = 0};
    t->fetch_limits(s->inst->ctx, &l);
    *max = l.max > 0 ? l.max : 1;
    *linger_ms = l.linger_ms;
}

/* The plugin's own counters (ABI 1.4 types with a counters callback). */
static size_t sink_counters(struct sink *s, struct gust_plugin_counter *c)
{
    const struct gust_plugin_type *t = s->inst->type;
    if (t == NULL || t->counters == NULL || !s->inst->started) {
        return 0;
    }
    return gust_plugin_counters_read(t->counters, s->inst->ctx, c);
}

static void sink_render_json(void *impl, struct gust_buf *out)
{
    struct gust_plugin_counter c[GUST_PLUGIN_COUNTERS_MAX];
    struct sink *s = impl;
    gust_plugin_counters_json(out, c, sink_counters(s, c), 0);
    if (s->inst->type != NULL) {
        gust_plugin_note_json(out, &s->inst->note);
    }
}

static void sink_render_metrics(void *impl, const char *unit, struct gust_buf *out)
{
    struct gust_plugin_counter c[GUST_PLUGIN_COUNTERS_MAX];
    gust_plugin_counters_metrics(out, unit, c, sink_counters(impl, c));
}

static void sink_destroy(void *impl)
{
    struct sink *s = impl;
    gust_instance_dispose(s->inst);
    free(s->inst);
    free(s->results);
    free(s);
}

struct gust_handler gust_sink_handler(struct gust_instance *inst, int64_t ack_wait_ms)
{
    struct sink *s = calloc(1, sizeof(*s));
    if (s != NULL) {
        s->inst = inst;
        s->ack_wait_ms = ack_wait_ms;
    }
    return (struct gust_handler){.kind = "sink",
                                 .impl = s,
                                 .run_batch = sink_run_batch,
                                 .fetch_limits = sink_fetch_limits,
                                 .render_json = sink_render_json,
                                 .render_metrics = sink_render_metrics,
                                 /* broker sinks carry them on (Nats-Msg-Id as the broker's
                                    message id, the rest as its headers) */
                                 .wants_headers = inst->type != NULL && inst->type->wants_headers,
                                 .destroy = sink_destroy};
}
