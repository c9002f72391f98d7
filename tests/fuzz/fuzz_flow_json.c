/* libFuzzer target: the flow decoder and encoder (host/flow/json_decode.c,
 * json_encode.c) on any bytes an event could hold, through a flow that emits the event
 * as it was decoded. Whatever it takes, it emits well-formed UTF-8 that is JSON ingest
 * would accept, and emitting that again gives the same value (key order aside, which a
 * Lua table does not keep): numbers by their text, strings byte for byte. What it
 * refuses is refused as invalid JSON, never as a script failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "../../host/common/json_out.h"
#include "../../host/flow/flow.h"
#include "../../host/http/json_check.h"
#include "../unit/flow/scripts.h"

static struct gust_flow *flow;

static int same(yajl_val a, yajl_val b)
{
    if (a->type != b->type) {
        return 0;
    }
    switch (a->type) {
    case yajl_t_string:
        return strcmp(a->u.string, b->u.string) == 0;
    case yajl_t_number:
        return strcmp(a->u.number.r, b->u.number.r) == 0;
    case yajl_t_array:
        if (a->u.array.len != b->u.array.len) {
            return 0;
        }
        for (size_t i = 0; i < a->u.array.len; i++) {
            if (!same(a->u.array.values[i], b->u.array.values[i])) {
                return 0;
            }
        }
        return 1;
    case yajl_t_object:
        if (a->u.object.len != b->u.object.len) {
            return 0;
        }
        for (size_t i = 0; i < a->u.object.len; i++) {
            size_t j = 0;
            while (j < b->u.object.len && strcmp(a->u.object.keys[i], b->u.object.keys[j]) != 0) {
                j++;
            }
            if (j == b->u.object.len || !same(a->u.object.values[i], b->u.object.values[j])) {
                return 0;
            }
        }
        return 1;
    default:
        return 1;
    }
}

static char *emit_of(const char *d, size_t n, int *rc)
{
    struct gust_emits out = {0};
    struct gust_err err;
    *rc = gust_flow_run(flow, d, n, NULL, &out, &err);
    if (*rc != 0 && *rc != GUST_EINVAL) { /* 30 s for the script: a shared machine cannot make a timeout of it */
        fprintf(stderr, "not refused as JSON but %d: %s\n", *rc, err.msg);
        abort();
    }
    char *text = NULL;
    if (*rc == 0) {
        if (out.n != 1) {
            abort();
        }
        text = strndup(out.v[0].payload, out.v[0].len);
        if (!gust_utf8_valid(out.v[0].payload, out.v[0].len)) {
            fprintf(stderr, "emit is not UTF-8\n");
            abort();
        }
    }
    gust_emits_free(&out);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gust_err err;
    if (flow == NULL &&
        flow_from_text("return { on_event = function(ev) emit('ev.out', ev) end }", 30000, &flow, &err) != 0) {
        abort();
    }
    int rc;
    char *once = emit_of((const char *)data, size, &rc);
    if (once == NULL) {
        return 0;
    }
    char why[300];
    if (!gust_json_object_valid(once, strlen(once), 0, why, sizeof(why))) {
        fprintf(stderr, "emit refused at ingest: %s: %s\n", why, once);
        abort();
    }
    char *twice = emit_of(once, strlen(once), &rc);
    if (twice == NULL) {
        fprintf(stderr, "emit not decoded again: %s\n", once);
        abort();
    }
    yajl_val a = yajl_tree_parse(once, why, sizeof(why)), b = yajl_tree_parse(twice, why, sizeof(why));
    if (a == NULL || b == NULL || !same(a, b)) {
        fprintf(stderr, "emitted again differs:\n%s\n%s\n", once, twice);
        abort();
    }
    yajl_tree_free(a);
    yajl_tree_free(b);
    free(once);
    free(twice);
    return 0;
}
