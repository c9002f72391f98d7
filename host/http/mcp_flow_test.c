/* gust_flow_test (mcp_flow_test.h). The bounds: 1 s per event (and for the script's
 * load), a 64 MiB Lua heap, 1000 events, a 1 MiB script; after 3 events that time out
 * the rest are not run (each would hold the admin worker for the timeout), as the
 * shadow replay does. */
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../flow/flow.h"
#include "mcp.h"
#include "mcp_flow_test.h"

#define SCRIPT_MAX (1u << 20)
#define EVENTS_MAX 1000
#define TIMEOUT_MS 1000
#define HEAP_MAX ((size_t)64 << 20)
#define MAX_TIMEOUTS 3
#define LOGS_MAX 200

struct flow_test {
    char *script;
    struct gust_buf *events; /* each one's JSON text */
    size_t n;
    struct gust_buf logs; /* JSON array members */
    size_t nlogs;
};

void gust_mcp_flow_test_free(void *arg)
{
    struct flow_test *t = arg;
    if (t == NULL) {
        return;
    }
    for (size_t i = 0; i < t->n; i++) {
        gust_buf_free(&t->events[i]);
    }
    free(t->events);
    free(t->script);
    gust_buf_free(&t->logs);
    free(t);
}

const char *gust_mcp_flow_test_prepare(const char *script, yajl_val events, void **arg)
{
    if (strlen(script) > SCRIPT_MAX) {
        return "script: over 1 MiB";
    }
    size_t n = events->u.array.len;
    if (n > EVENTS_MAX) {
        return "events: at most 1000";
    }
    for (size_t i = 0; i < n; i++) {
        if (!YAJL_IS_OBJECT(events->u.array.values[i])) {
            return "events: each event is a JSON object";
        }
    }
    struct flow_test *t = calloc(1, sizeof(*t));
    if (t == NULL || (t->script = strdup(script)) == NULL ||
        (n > 0 && (t->events = calloc(n, sizeof(*t->events))) == NULL)) {
        gust_mcp_flow_test_free(t);
        return "out of memory";
    }
    t->n = n;
    for (size_t i = 0; i < n; i++) {
        gust_mcp_json_of(events->u.array.values[i], &t->events[i]);
    }
    *arg = t;
    return NULL;
}

static void on_log(void *ud, int level, const char *text, size_t len)
{
    struct flow_test *t = ud;
    if (t->nlogs >= LOGS_MAX) {
        return;
    }
    const char *name = level == GUST_LOG_ERROR ? "error" : level == GUST_LOG_WARN ? "warn" : "info";
    gust_buf_printf(&t->logs, "%s{\"level\":\"%s\",\"text\":", t->nlogs++ > 0 ? "," : "", name);
    gust_json_append_string(&t->logs, text, len);
    gust_buf_append(&t->logs, "}", 1);
}

static void append_emit(struct gust_buf *out, const struct gust_emit *e, int first)
{
    gust_buf_append(out, first ? "{\"subject\":" : ",{\"subject\":", first ? 11 : 12);
    gust_json_append_string(out, e->subject, strlen(e->subject));
    gust_buf_append(out, ",\"payload\":", 11);
    gust_buf_append(out, e->payload, e->len);
    if (e->nheaders > 0) {
        gust_buf_append(out, ",\"headers\":{", 12);
        for (size_t h = 0; h < e->nheaders; h++) {
            if (h > 0) {
                gust_buf_append(out, ",", 1);
            }
            gust_json_append_string(out, e->headers[h].name, strlen(e->headers[h].name));
            gust_buf_append(out, ":", 1);
            gust_json_append_string(out, e->headers[h].value, strlen(e->headers[h].value));
        }
        gust_buf_append(out, "}", 1);
    }
    gust_buf_append(out, "}", 1);
}

void gust_mcp_flow_test_run(struct gust_admin_job *job)
{
    struct flow_test *t = job->arg;
    struct gust_flow_opts fo = {.script_path = "flow.lua",
                                .script_text = t->script,
                                .script_len = strlen(t->script),
                                .timeout_ms = TIMEOUT_MS,
                                .memory_max = HEAP_MAX,
                                .log = on_log,
                                .log_ud = t};
    struct gust_flow *flow = NULL;
    struct gust_err err = {{0}};
    if (gust_flow_create(&fo, &flow, &err) != 0) {
        gust_admin_fail(job, 400, err.msg);
        return;
    }
    struct gust_buf *out = &job->body;
    struct gust_emits emits = {0};
    int timeouts = 0;
    gust_buf_append(out, "{\"results\":[", 12);
    for (size_t i = 0; i < t->n; i++) {
        gust_buf_append(out, i > 0 ? ",{" : "{", i > 0 ? 2 : 1);
        if (timeouts >= MAX_TIMEOUTS) {
            gust_buf_append(out, "\"error\":\"not run: the script timed out 3 times\"}", 48);
            continue;
        }
        struct gust_flow_meta meta = {.attempt = 1, .unit = "test"};
        gust_emits_clear(&emits);
        struct gust_err rerr = {{0}};
        int rc = gust_flow_run(flow, t->events[i].data, t->events[i].len, &meta, &emits, &rerr);
        timeouts += rc == GUST_ETIMEOUT;
        gust_buf_append(out, "\"emits\":[", 9);
        for (size_t k = 0; k < emits.n; k++) {
            append_emit(out, &emits.v[k], k == 0);
        }
        gust_buf_append(out, "]", 1);
        if (rc != 0) {
            gust_buf_append(out, ",\"error\":", 9);
            gust_json_append_string(out, rerr.msg, strlen(rerr.msg));
        }
        gust_buf_append(out, "}", 1);
    }
    gust_buf_append(out, "],\"logs\":[", 10);
    gust_buf_append(out, t->logs.data != NULL ? t->logs.data : "", t->logs.len);
    gust_buf_append(out, "]}\n", 3);
    gust_emits_free(&emits);
    gust_flow_destroy(flow);
    job->status = 200;
}
