/* `gust test-flow SCRIPT CASE.json...`: golden tests for a flow without a bus (flow.h
 * describes the case files). Each case runs on a fresh flow with the same sandbox,
 * modules and tables a running unit would have, an in-memory state store holding the
 * case's initial state, and the case's meta. Everything a case says is checked
 * exactly: it compares parsed trees that keep numbers as text and strings whole. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json_out.h"
#include "flow.h"
#include "jtree.h"
#include "tables.h"

#define WHY_MAX 1024

struct log_line {
    int level;
    char *text;
};

struct logs {
    struct log_line *v;
    size_t n, cap;
};

struct tcase {
    const char *path;
    char *text; /* the file */
    size_t len;
    struct gust_jnode *root;
    const struct gust_jnode *input, *expect_emits, *meta, *state, *expect_state, *tables, *table_keys,
        *expect_logs;
    const struct gust_jnode *expect_reply; /* {"status", "body"}, or null: the event is a call */
    int is_call;
    const char *expect_error;
    long timeout_ms;
    long long memory_max; /* bytes; 0: no bound */
};

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static char *read_file(const char *path, size_t *len, char *why)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        snprintf(why, WHY_MAX, "cannot open %s", path);
        return NULL;
    }
    char *text = NULL;
    size_t cap = 0, n;
    *len = 0;
    do {
        if (cap - *len < 4096) {
            cap = cap ? cap * 2 : 8192;
            char *p = realloc(text, cap);
            if (p == NULL) {
                free(text);
                fclose(fp);
                snprintf(why, WHY_MAX, "out of memory reading %s", path);
                return NULL;
            }
            text = p;
        }
        n = fread(text + *len, 1, cap - *len - 1, fp);
        *len += n;
    } while (n > 0);
    text[*len] = '\0';
    fclose(fp);
    return text;
}

static int is_integer(const struct gust_jnode *n, long long min, long long *out)
{
    if (n->type != GUST_J_NUMBER || strpbrk(n->s, ".eE") != NULL) {
        return 0;
    }
    char *end;
    long long v = strtoll(n->s, &end, 10);
    if (*end != '\0' || v < min) {
        return 0;
    }
    *out = v;
    return 1;
}

/* Every member of obj is a string. */
static int strings_only(const struct gust_jnode *obj)
{
    for (size_t i = 0; i < obj->n; i++) {
        if (obj->items[i]->type != GUST_J_STRING) {
            return 0;
        }
    }
    return 1;
}

static int check_meta(const struct gust_jnode *m, char *why, const char *path)
{
    for (size_t i = 0; i < m->n; i++) {
        const char *k = m->keys[i];
        const struct gust_jnode *v = m->items[i];
        long long num;
        int ok = (strcmp(k, "subject") == 0 || strcmp(k, "unit") == 0) ? v->type == GUST_J_STRING
                 : strcmp(k, "seq") == 0 || strcmp(k, "time") == 0     ? is_integer(v, 0, &num)
                 : strcmp(k, "attempt") == 0 ? is_integer(v, 1, &num) && num <= UINT32_MAX
                 : strcmp(k, "headers") == 0 ? v->type == GUST_J_OBJECT && strings_only(v)
                                             : 0;
        if (!ok) {
            snprintf(
                why, WHY_MAX,
                "%s: meta.%s: unexpected key or type (meta has subject, unit: strings; seq, time: integers "
                "from 0; attempt: an integer from 1; headers: an object of strings)",
                path, k);
            return -1;
        }
    }
    return 0;
}

static int check_emit_shape(const struct gust_jnode *e, size_t i, char *why, const char *path)
{
    if (e->type != GUST_J_OBJECT || gust_jtree_get(e, "subject") == NULL ||
        gust_jtree_get(e, "subject")->type != GUST_J_STRING || gust_jtree_get(e, "payload") == NULL) {
        snprintf(why, WHY_MAX, "%s: expect_emits[%zu] needs \"subject\" (a string) and \"payload\"", path, i);
        return -1;
    }
    for (size_t k = 0; k < e->n; k++) {
        const char *key = e->keys[k];
        const struct gust_jnode *v = e->items[k];
        if (strcmp(key, "subject") != 0 && strcmp(key, "payload") != 0 &&
            !(strcmp(key, "headers") == 0 && v->type == GUST_J_OBJECT && strings_only(v))) {
            snprintf(why, WHY_MAX, "%s: expect_emits[%zu]: unexpected key or type: \"%s\"", path, i, key);
            return -1;
        }
    }
    return 0;
}

static int check_logs_shape(const struct gust_jnode *logs, char *why, const char *path)
{
    for (size_t i = 0; i < logs->n; i++) {
        const struct gust_jnode *l = logs->items[i], *level = gust_jtree_get(l, "level");
        const struct gust_jnode *text = gust_jtree_get(l, "text");
        int ok = l->type == GUST_J_OBJECT && l->n == 2 && level != NULL && level->type == GUST_J_STRING &&
                 text != NULL && text->type == GUST_J_STRING &&
                 (strcmp(level->s, "info") == 0 || strcmp(level->s, "warn") == 0 ||
                  strcmp(level->s, "error") == 0);
        if (!ok) {
            snprintf(why, WHY_MAX,
                     "%s: expect_logs[%zu] is {\"level\": \"info\"|\"warn\"|\"error\", \"text\": ...}", path,
                     i);
            return -1;
        }
    }
    return 0;
}

/* Parses a case file and checks its shape; unknown keys are refused so that a typo
 * cannot turn a case into one that checks nothing. */
static int check_reply_shape(const struct gust_jnode *r, char *why, const char *path)
{
    long long num;
    const struct gust_jnode *status = gust_jtree_get(r, "status");
    int ok = gust_jtree_get(r, "body") != NULL && (status == NULL || (is_integer(status, 200, &num) && num <= 599));
    for (size_t i = 0; ok && i < r->n; i++) {
        ok = strcmp(r->keys[i], "status") == 0 || strcmp(r->keys[i], "body") == 0;
    }
    if (!ok) {
        snprintf(why, WHY_MAX,
                 "%s: expect_reply is {\"body\": any JSON, \"status\": 200 to 599 (default 200)}, or null for "
                 "no reply",
                 path);
        return -1;
    }
    return 0;
}

static int load_case(const char *path, struct tcase *c, char *why)
{
    c->path = path;
    c->text = read_file(path, &c->len, why);
    if (c->text == NULL) {
        return -1;
    }
    char perr[200];
    size_t at;
    if (gust_jtree_parse(c->text, c->len, &c->root, perr, sizeof(perr), &at) != 0) {
        snprintf(why, WHY_MAX, "%s:%d: not JSON: %s", path, gust_jtree_line(c->text, c->len, at), perr);
        return -1;
    }
    if (c->root->type != GUST_J_OBJECT) {
        snprintf(why, WHY_MAX, "%s: a case is a JSON object", path);
        return -1;
    }
    for (size_t i = 0; i < c->root->n; i++) {
        const char *k = c->root->keys[i];
        const struct gust_jnode *v = c->root->items[i];
        long long num;
        int obj = v->type == GUST_J_OBJECT, arr = v->type == GUST_J_ARRAY;
        if (strcmp(k, "input") == 0 && obj) {
            c->input = v;
        } else if (strcmp(k, "expect_emits") == 0 && arr) {
            c->expect_emits = v;
        } else if (strcmp(k, "expect_error") == 0 && v->type == GUST_J_STRING) {
            c->expect_error = v->s;
        } else if (strcmp(k, "meta") == 0 && obj) {
            c->meta = v;
        } else if (strcmp(k, "state") == 0 && obj) {
            c->state = v;
        } else if (strcmp(k, "expect_state") == 0 && obj) {
            c->expect_state = v;
        } else if (strcmp(k, "tables") == 0 && obj) {
            c->tables = v;
        } else if (strcmp(k, "table_keys") == 0 && obj && strings_only(v)) {
            c->table_keys = v;
        } else if (strcmp(k, "expect_logs") == 0 && arr) {
            c->expect_logs = v;
        } else if (strcmp(k, "expect_reply") == 0 && (obj || v->type == GUST_J_NULL)) {
            c->expect_reply = obj ? v : NULL;
            c->is_call = 1;
        } else if (strcmp(k, "timeout_ms") == 0 && is_integer(v, 1, &num) && num < 86400000) {
            c->timeout_ms = (long)num;
        } else if (strcmp(k, "memory_max") == 0 && is_integer(v, 0, &num)) {
            c->memory_max = num;
        } else if (strcmp(k, "description") != 0) {
            snprintf(why, WHY_MAX, "%s: unexpected key or type: \"%s\"", path, k);
            return -1;
        }
    }
    if (c->input == NULL || (c->expect_emits == NULL) == (c->expect_error == NULL)) {
        snprintf(why, WHY_MAX,
                 "%s: a case needs an \"input\" object and either \"expect_emits\" (an array) "
                 "or \"expect_error\" (a string)",
                 path);
        return -1;
    }
    for (size_t i = 0; c->expect_emits != NULL && i < c->expect_emits->n; i++) {
        if (check_emit_shape(c->expect_emits->items[i], i, why, path) != 0) {
            return -1;
        }
    }
    if ((c->meta != NULL && check_meta(c->meta, why, path) != 0) ||
        (c->expect_logs != NULL && check_logs_shape(c->expect_logs, why, path) != 0) ||
        (c->expect_reply != NULL && check_reply_shape(c->expect_reply, why, path) != 0)) {
        return -1;
    }
    return 0;
}

static void case_meta(const struct tcase *c, struct gust_flow_meta *m, struct gust_header **headers)
{
    *m = (struct gust_flow_meta){.attempt = 1, .unit = "test", .call = c->is_call};
    if (c->meta == NULL) {
        return;
    }
    long long num;
    const struct gust_jnode *v;
    if ((v = gust_jtree_get(c->meta, "subject")) != NULL) {
        m->subject = v->s;
    }
    if ((v = gust_jtree_get(c->meta, "unit")) != NULL) {
        m->unit = v->s;
    }
    if ((v = gust_jtree_get(c->meta, "seq")) != NULL && is_integer(v, 0, &num)) {
        m->seq = (uint64_t)num;
    }
    if ((v = gust_jtree_get(c->meta, "time")) != NULL && is_integer(v, 0, &num)) {
        m->time_ms = num;
    }
    if ((v = gust_jtree_get(c->meta, "attempt")) != NULL && is_integer(v, 1, &num)) {
        m->attempt = (uint32_t)num;
    }
    if ((v = gust_jtree_get(c->meta, "headers")) != NULL && v->n > 0 &&
        (*headers = calloc(v->n, sizeof(**headers))) != NULL) {
        for (size_t i = 0; i < v->n; i++) {
            (*headers)[i] = (struct gust_header){.name = v->keys[i], .value = v->items[i]->s};
        }
        m->headers = *headers;
        m->nheaders = v->n;
    }
}

static int make_tables(const struct tcase *c, const struct gust_flow_test_opts *o, struct gust_tables **out,
                       char *why)
{
    struct gust_err err = {{0}};
    struct gust_buf json = {0};
    int rc = gust_tables_create(out, &err);
    for (size_t i = 0; rc == 0 && c->tables != NULL && i < c->tables->n; i++) {
        const char *name = c->tables->keys[i];
        const struct gust_jnode *key = gust_jtree_get(c->table_keys, name);
        char what[300];
        snprintf(what, sizeof(what), "%s: tables.%s", c->path, name);
        json.len = 0;
        rc = gust_jtree_write(c->tables->items[i], &json);
        rc = rc ? rc
                : gust_tables_add_json(*out, name, json.data, json.len, key != NULL ? key->s : NULL, what,
                                       &err);
    }
    if (rc == 0 && o->load_tables != NULL) {
        rc = o->load_tables(o->ud, *out, &err);
    }
    gust_buf_free(&json);
    if (rc != 0) {
        snprintf(why, WHY_MAX, "%s", err.msg[0] ? err.msg : "out of memory");
    }
    return rc;
}

static int fill_state(const struct tcase *c, struct gust_state_mem *mem, char *why)
{
    struct gust_buf json = {0};
    int rc = 0;
    for (size_t i = 0; c->state != NULL && i < c->state->n && rc == 0; i++) {
        json.len = 0;
        rc = gust_jtree_write(c->state->items[i], &json);
        rc = rc ? rc
                : gust_state_mem_put(mem, c->state->keys[i], c->state->key_lens[i], json.data, json.len, 0);
    }
    gust_buf_free(&json);
    if (rc != 0) {
        snprintf(why, WHY_MAX, "out of memory");
    }
    return rc;
}

static void collect_log(void *ud, int level, const char *text, size_t len)
{
    struct logs *l = ud;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        struct log_line *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL) {
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (copy != NULL) {
        memcpy(copy, text, len + 1);
        l->v[l->n++] = (struct log_line){.level = level, .text = copy};
    }
}

/* Errors carry a traceback over several lines; the report keeps one line a case:
 * "\n\t" becomes "; " and a lone newline a space, so the text never grows. */
static void one_line(char *s)
{
    char *w = s;
    for (char *r = s; *r != '\0'; r++) {
        if (r[0] == '\n' && r[1] == '\t') {
            *w++ = ';';
            *w++ = ' ';
            r++;
        } else {
            *w++ = (*r == '\n' || *r == '\t') ? ' ' : *r;
        }
    }
    *w = '\0';
}

/* Compares JSON text (what the flow produced) with the expectation. */
static int same_json(const struct gust_jnode *want, const char *text, size_t len, char *path, size_t cap)
{
    struct gust_jnode *got = NULL;
    char perr[100];
    size_t at;
    if (gust_jtree_parse(text, len, &got, perr, sizeof(perr), &at) != 0) {
        return 0;
    }
    int same = gust_jtree_equal(want, got, path, cap);
    gust_jtree_free(got);
    return same;
}

/* The reply the case expects (c->is_call), or none when it says null. */
static int check_reply(const struct tcase *c, const struct gust_flow *f, char *why)
{
    int status;
    const char *json;
    size_t len;
    int replied = gust_flow_reply(f, &status, &json, &len);
    if (c->expect_reply == NULL) {
        if (replied) {
            snprintf(why, WHY_MAX, "expected no reply, got %d %.*s", status, (int)(len < 200 ? len : 200), json);
            return -1;
        }
        return 0;
    }
    if (!replied) {
        snprintf(why, WHY_MAX, "expected a reply, got none");
        return -1;
    }
    long long want_status = 200;
    const struct gust_jnode *s = gust_jtree_get(c->expect_reply, "status");
    if (s != NULL) {
        is_integer(s, 200, &want_status);
    }
    char path[256] = "";
    if (status != want_status) {
        snprintf(why, WHY_MAX, "reply: status %d, expected %lld", status, want_status);
        return -1;
    }
    if (!same_json(gust_jtree_get(c->expect_reply, "body"), json, len, path, sizeof(path))) {
        snprintf(why, WHY_MAX, "reply: body differs at %s: %.*s", path[0] ? path : "(top)",
                 (int)(len < 200 ? len : 200), json);
        return -1;
    }
    return 0;
}

static int check_headers(const struct gust_jnode *want, const struct gust_emit *e, size_t i, char *why)
{
    int same = want->n == e->nheaders;
    for (size_t k = 0; same && k < e->nheaders; k++) {
        const struct gust_jnode *v = gust_jtree_get(want, e->headers[k].name);
        same = v != NULL && strcmp(v->s, e->headers[k].value) == 0;
    }
    if (same) {
        return 0;
    }
    int n = snprintf(why, WHY_MAX, "emit %zu: headers differ: got {", i + 1);
    for (size_t k = 0; k < e->nheaders && n > 0 && n < WHY_MAX; k++) {
        n += snprintf(why + n, WHY_MAX - (size_t)n, "%s\"%s\": \"%s\"", k > 0 ? ", " : "", e->headers[k].name,
                      e->headers[k].value);
    }
    if (n > 0 && n < WHY_MAX) {
        snprintf(why + n, WHY_MAX - (size_t)n, "}");
    }
    return -1;
}

static int check_emits(const struct tcase *c, const struct gust_emits *out, char *why)
{
    const struct gust_jnode *want = c->expect_emits;
    if (out->n != want->n) {
        snprintf(why, WHY_MAX, "expected %zu emits, got %zu", want->n, out->n);
        return -1;
    }
    for (size_t i = 0; i < out->n; i++) {
        const struct gust_jnode *w = want->items[i];
        const struct gust_jnode *subject = gust_jtree_get(w, "subject"),
                                *headers = gust_jtree_get(w, "headers");
        if (subject->len != strlen(out->v[i].subject) || strcmp(subject->s, out->v[i].subject) != 0) {
            snprintf(why, WHY_MAX, "emit %zu: expected subject %s, got %s", i + 1, subject->s,
                     out->v[i].subject);
            return -1;
        }
        char path[256] = "";
        if (!same_json(gust_jtree_get(w, "payload"), out->v[i].payload, out->v[i].len, path, sizeof(path))) {
            snprintf(why, WHY_MAX, "emit %zu: payload differs at %s: got %s", i + 1,
                     path[0] ? path : "the top", out->v[i].payload);
            return -1;
        }
        if (headers != NULL && check_headers(headers, &out->v[i], i, why) != 0) {
            return -1;
        }
    }
    return 0;
}

static void add_state_member(void *ud, const char *key, size_t key_len, const char *json, size_t len,
                             uint64_t revision)
{
    (void)revision;
    struct gust_buf *b = ud;
    if (b->len > 1) {
        gust_buf_append(b, ",", 1);
    }
    gust_json_append_string(b, key, key_len);
    gust_buf_append(b, ":", 1);
    gust_buf_append(b, json, len);
}

static int check_state(const struct tcase *c, const struct gust_state_mem *mem, int64_t now_ms, char *why)
{
    struct gust_buf got = {0};
    gust_buf_append(&got, "{", 1);
    gust_state_mem_each(mem, now_ms, add_state_member, &got);
    gust_buf_append(&got, "}", 1);
    char path[256] = "";
    int rc = 0;
    if (got.data == NULL || !same_json(c->expect_state, got.data, got.len, path, sizeof(path))) {
        snprintf(why, WHY_MAX, "state differs at %s: got %.*s", path[0] ? path : "the top", (int)got.len,
                 got.data != NULL ? got.data : "");
        rc = -1;
    }
    gust_buf_free(&got);
    return rc;
}

static int check_logs(const struct tcase *c, const struct logs *logs, char *why)
{
    const struct gust_jnode *want = c->expect_logs;
    for (size_t i = 0; i < want->n || i < logs->n; i++) {
        if (i >= want->n || i >= logs->n) {
            snprintf(why, WHY_MAX, "expected %zu log lines, got %zu", want->n, logs->n);
            return -1;
        }
        const struct gust_jnode *level = gust_jtree_get(want->items[i], "level");
        const struct gust_jnode *text = gust_jtree_get(want->items[i], "text");
        const struct log_line *l = &logs->v[i];
        if (strcmp(level->s, level_names[l->level]) != 0 || text->len != strlen(l->text) ||
            strcmp(text->s, l->text) != 0) {
            snprintf(why, WHY_MAX, "log line %zu: expected %s \"%s\", got %s \"%s\"", i + 1, level->s,
                     text->s, level_names[l->level], l->text);
            return -1;
        }
    }
    return 0;
}

/* The default lua_path: lib/ beside the script (scripts/lib for scripts/x.lua, as
 * host.conf's default for a script in scripts/). */
static void default_lua_path(const char *script, char *out, size_t size)
{
    const char *slash = strrchr(script, '/');
    if (slash == NULL) {
        snprintf(out, size, "lib");
    } else {
        snprintf(out, size, "%.*s/lib", (int)(slash - script), script);
    }
}

static int run_case(const struct gust_flow_test_opts *o, const char *script, const char *case_path,
                    struct logs *logs, char *why)
{
    struct tcase c = {0};
    struct gust_flow *flow = NULL;
    struct gust_emits out = {0};
    struct gust_err err = {{0}};
    struct gust_tables *tables = NULL;
    struct gust_state_mem *mem = NULL;
    struct gust_header *headers = NULL;
    int rc = -1;

    if (load_case(case_path, &c, why) != 0 || make_tables(&c, o, &tables, why) != 0) {
        goto done;
    }
    if (gust_state_mem_create(&mem) != 0 || fill_state(&c, mem, why) != 0) {
        snprintf(why, WHY_MAX, "out of memory");
        goto done;
    }
    char lua_path[4096];
    if (o->lua_path != NULL) {
        snprintf(lua_path, sizeof(lua_path), "%s", o->lua_path);
    } else {
        default_lua_path(script, lua_path, sizeof(lua_path));
    }
    struct gust_state_store store = gust_state_mem_store(mem);
    struct gust_flow_opts opts = {.script_path = script,
                                  .timeout_ms = c.timeout_ms,
                                  .memory_max = (size_t)c.memory_max,
                                  .lua_path = lua_path,
                                  .tables = tables,
                                  .state = &store,
                                  .log = collect_log,
                                  .log_ud = logs};
    struct gust_flow_meta meta;
    case_meta(&c, &meta, &headers);
    /* The input exactly as the file has it: numbers as written, every byte of its
     * strings. */
    const char *input = c.text + c.input->start;
    size_t input_len = c.input->end - c.input->start;

    int status = gust_flow_create(&opts, &flow, &err);
    if (status == 0) {
        gust_flow_state_begin(flow);
        status = gust_flow_run(flow, input, input_len, &meta, &out, &err);
    }
    if (status == 0) {
        const struct gust_state_write *writes;
        size_t n = gust_flow_state_writes(flow, &writes);
        unsigned char *conflict = calloc(n + 1, 1);
        if (conflict == NULL || gust_state_mem_commit(mem, writes, n, conflict) != 0) {
            snprintf(why, WHY_MAX, "committing the state failed");
            free(conflict);
            goto done;
        }
        free(conflict);
    }
    one_line(err.msg);
    if (c.expect_error != NULL) {
        if (status == 0) {
            snprintf(why, WHY_MAX, "expected an error containing \"%s\", got %zu emits", c.expect_error,
                     out.n);
            goto done;
        }
        if (strstr(err.msg, c.expect_error) == NULL) {
            snprintf(why, WHY_MAX, "expected an error containing \"%s\", got: %s", c.expect_error, err.msg);
            goto done;
        }
    } else if (status != 0) {
        snprintf(why, WHY_MAX, "%s", err.msg);
        goto done;
    } else if (check_emits(&c, &out, why) != 0 || (c.is_call && check_reply(&c, flow, why) != 0)) {
        goto done;
    }
    if ((c.expect_state != NULL && check_state(&c, mem, meta.time_ms, why) != 0) ||
        (c.expect_logs != NULL && check_logs(&c, logs, why) != 0)) {
        goto done;
    }
    rc = 0;
done:
    gust_emits_free(&out);
    gust_flow_destroy(flow);
    gust_state_mem_destroy(mem);
    gust_tables_unref(tables);
    free(headers);
    gust_jtree_free(c.root);
    free(c.text);
    return rc;
}

/* The case name: the file name without directory and .json. */
static void case_name(const char *path, char *name, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0) {
        n -= 5;
    }
    snprintf(name, cap, "%.*s", (int)n, base);
}

int gust_flow_test_run(const struct gust_flow_test_opts *opts, const char *script, char *const *cases,
                       int ncases)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < ncases; i++) {
        char why[WHY_MAX] = "";
        char name[256];
        struct logs logs = {0};
        case_name(cases[i], name, sizeof(name));
        if (run_case(opts, script, cases[i], &logs, why) == 0) {
            printf("PASS %s\n", name);
            passed++;
        } else {
            printf("FAIL %s: %s\n", name, why);
            for (size_t k = 0; k < logs.n; k++) {
                printf("  log %s: %s\n", level_names[logs.v[k].level], logs.v[k].text);
            }
            failed++;
        }
        for (size_t k = 0; k < logs.n; k++) {
            free(logs.v[k].text);
        }
        free(logs.v);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed > 0 ? 1 : 0;
}

int gust_flow_test_main(int argc, char **argv)
{
    const char *cmd = argc > 0 ? argv[0] : "test-flow";
    struct gust_flow_test_opts opts = {0};
    int i = 1;
    while (i < argc && strncmp(argv[i], "--", 2) == 0) {
        if (strcmp(argv[i], "--lua-path") == 0 && i + 1 < argc) {
            opts.lua_path = argv[i + 1];
            i += 2;
        } else {
            fprintf(stderr, "%s: unknown option '%s'\n", cmd, argv[i]);
            i = argc;
        }
    }
    if (argc - i < 2) {
        fprintf(stderr, "usage: %s [--lua-path DIR] SCRIPT CASE.json...\n", cmd);
        return 2;
    }
    return gust_flow_test_run(&opts, argv[i], argv + i + 1, argc - i - 1);
}
