/* POST /replay: the shadow replay of a flow unit (../core/replay.h) for the admin.
 *
 * The body is a JSON object: "unit" (a flow unit of the running host.conf), the
 * candidate as "script" (its text) or "script_path" (a file under the script
 * directories: those of the flows' scripts and lua_path; relative to host.conf's
 * directory), and at
 * most one of "last" (N), "since" (RFC 3339, a duration before now such as "10m", or
 * ms since the epoch) and "from_seq"; "max_diff" bounds the differing inputs answered
 * (default 1000). The loop parses it; the replay runs on the admin worker (it reads the
 * bus and runs both scripts over every input), with host.conf read again for the
 * unit's current script and settings. The answer: {"summary": {...}, "diff": [...],
 * "diff_omitted": N}; the summary says how many differ in all. */
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "../common/json_out.h"
#include "../core/config.h"
#include "../core/config_tables.h"
#include "../core/replay.h"
#include "../core/script_dirs.h"
#include "internal.h"

#define MAX_DIFF_DEFAULT 1000
#define MAX_DIFF_LIMIT 100000
#define MAX_SCRIPT (8u << 20)

struct replay_request {
    char unit[128];
    char *script;      /* the candidate's text, or NULL */
    size_t script_len;
    char *script_path; /* or its file */
    uint64_t last, from_seq;
    int64_t since_ms;
    size_t max_diff;
    /* Filled on the worker: */
    struct gust_buf diff;
    size_t ndiff, omitted;
};

void gust_replay_free(void *p)
{
    struct replay_request *r = p;
    free(r->script);
    free(r->script_path);
    gust_buf_free(&r->diff);
    free(r);
}

static void on_diff(void *ud, const struct gust_replay_diff *d)
{
    struct replay_request *r = ud;
    if (r->ndiff >= r->max_diff || gust_buf_append(&r->diff, r->ndiff > 0 ? "," : "", r->ndiff > 0) != 0 ||
        gust_buf_append(&r->diff, d->json, d->len) != 0) {
        r->omitted++;
        return;
    }
    r->ndiff++;
}

static int status_of(int rc)
{
    switch (rc) {
    case GUST_ENOTFOUND: return 404;
    case GUST_ECONFIG: return 400;
    case GUST_ENOMEM: return 500;
    default: return 503;
    }
}

/* script_path: read under the script directories only, by gust itself (the file named
 * is the file checked), into r->script; r->script_path becomes its real path. NULL, or
 * why not. */
static const char *load_script_path(const struct gust_config *c, const char *config_path, struct replay_request *r,
                                    char *why, size_t size)
{
    char base[PATH_MAX], real[PATH_MAX];
    snprintf(base, sizeof(base), "%s", config_path);
    struct gust_err err = {{0}};
    if (gust_script_path_resolve(c, dirname(base), r->script_path, real, sizeof(real), &err) != 0) {
        snprintf(why, size, "%s", err.msg);
        return why;
    }
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)MAX_SCRIPT) {
        snprintf(why, size, "script_path %s: %s", r->script_path,
                 fd < 0 ? "cannot be read" : st.st_size > (off_t)MAX_SCRIPT ? "over 8 MiB" : "not a regular file");
        if (fd >= 0) {
            close(fd);
        }
        return why;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    ssize_t n = 1;
    while (text != NULL && got < (size_t)st.st_size && (n = read(fd, text + got, (size_t)st.st_size - got)) > 0) {
        got += (size_t)n;
    }
    close(fd);
    char *name = strdup(real);
    if (text == NULL || name == NULL || n < 0) {
        free(text);
        free(name);
        snprintf(why, size, "script_path %s: %s", r->script_path, n < 0 ? "cannot be read" : "out of memory");
        return why;
    }
    text[got] = '\0';
    free(r->script_path);
    r->script_path = name;
    r->script = text;
    r->script_len = got;
    return NULL;
}

/* A candidate from a file that does not load: Lua's message quotes the token it stopped
 * at ("near 'xyz'"); what the file holds is not for the answer, only where. */
static void drop_quotes(char *msg)
{
    char *near;
    while ((near = strstr(msg, " near '")) != NULL) {
        char *eol = strchr(near, '\n');
        memmove(near, eol != NULL ? eol : near + strlen(near), strlen(eol != NULL ? eol : near + strlen(near)) + 1);
    }
}

/* Worker. */
void gust_replay_route_run(struct gust_admin_job *job)
{
    struct replay_request *r = job->arg;
    struct gust_http *http = job->http;
    struct gust_err err = {{0}};
    struct gust_config *config = NULL;
    struct gust_tables *tables = NULL;
    if (http->config_path[0] == '\0') {
        gust_admin_fail(job, 503, "replay is not available (no host.conf known)");
        return;
    }
    if (gust_config_load(http->config_path, &config, &err) != 0 || gust_tables_create(&tables, &err) != 0 ||
        gust_config_tables_load(config, tables, &err) != 0) {
        char why[sizeof(err.msg) + 64];
        snprintf(why, sizeof(why), "host.conf does not load now: %s", err.msg);
        gust_admin_fail(job, 503, why);
        gust_tables_unref(tables);
        gust_config_destroy(config);
        return;
    }
    char why[sizeof(err.msg) + 64];
    if (r->script_path != NULL && load_script_path(config, http->config_path, r, why, sizeof(why)) != NULL) {
        gust_admin_fail(job, 403, why);
        gust_tables_unref(tables);
        gust_config_destroy(config);
        return;
    }
    struct gust_replay_opts o = {.config = config,
                                 .tables = tables,
                                 .bus = http->bus,
                                 .unit = r->unit,
                                 .candidate_path = r->script_path != NULL ? r->script_path : "candidate.lua",
                                 .candidate_text = r->script,
                                 .candidate_len = r->script_len,
                                 .last = r->last,
                                 .since_ms = r->since_ms,
                                 .from_seq = r->from_seq,
                                 .on_diff = on_diff,
                                 .ud = r};
    struct gust_replay_summary s;
    int rc = gust_replay_run(&o, &s, &err);
    gust_tables_unref(tables);
    gust_config_destroy(config);
    if (rc != 0) {
        if (r->script_path != NULL) {
            drop_quotes(err.msg);
        }
        gust_admin_fail(job, status_of(rc), err.msg);
        return;
    }
    struct gust_buf *out = &job->body;
    gust_buf_append(out, "{\"summary\":", 11);
    gust_replay_summary_json(&s, out);
    gust_buf_append(out, ",\"diff\":[", 9);
    gust_buf_append(out, r->diff.data != NULL ? r->diff.data : "", r->diff.len);
    gust_buf_printf(out, "],\"diff_omitted\":%zu}\n", r->omitted);
    job->status = 200;
}

static int number_at(yajl_val body, const char *key, double *out)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(body, path, yajl_t_any);
    if (v == NULL) {
        return 0;
    }
    if (!YAJL_IS_NUMBER(v) || !(YAJL_GET_DOUBLE(v) >= 1) || YAJL_GET_DOUBLE(v) > 9e15) {
        return -1;
    }
    *out = YAJL_GET_DOUBLE(v);
    return 1;
}

static const char *string_at(yajl_val body, const char *key, int *bad)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(body, path, yajl_t_any);
    if (v != NULL && !YAJL_IS_STRING(v)) {
        *bad = 1;
    }
    return v != NULL && YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;
}

/* The request from the body, or why it is not one. */
static const char *parse_request(yajl_val body, struct replay_request *r)
{
    int bad = 0, ranges = 0;
    const char *unit = string_at(body, "unit", &bad);
    const char *script = string_at(body, "script", &bad);
    const char *script_path = string_at(body, "script_path", &bad);
    const char *since = string_at(body, "since", &bad);
    if (bad) {
        return "unit, script, script_path and since are strings";
    }
    if (unit == NULL || unit[0] == '\0' || strlen(unit) >= sizeof(r->unit)) {
        return "give the flow unit to replay: {\"unit\": NAME, ...}";
    }
    if ((script == NULL) == (script_path == NULL)) {
        return "give the candidate as one of script (its text) and script_path";
    }
    snprintf(r->unit, sizeof(r->unit), "%s", unit);
    double v = 0;
    int got;
    if ((got = number_at(body, "last", &v)) != 0) {
        ranges++;
        r->last = (uint64_t)v;
    }
    if (got < 0 || (got = number_at(body, "from_seq", &v)) < 0) {
        return "last and from_seq are positive integers";
    }
    if (got > 0) {
        ranges++;
        r->from_seq = (uint64_t)v;
    }
    const char *since_path[] = {"since", NULL};
    yajl_val sv = yajl_tree_get(body, since_path, yajl_t_any);
    if (sv != NULL) {
        ranges++;
        if (since != NULL ? gust_replay_parse_since(since, &r->since_ms) != 0
                          : !YAJL_IS_NUMBER(sv) || (r->since_ms = (int64_t)YAJL_GET_DOUBLE(sv)) <= 0) {
            return "since is an RFC 3339 time, a duration before now (\"10m\") or ms since the epoch";
        }
    }
    if (ranges > 1) {
        return "give at most one of last, since and from_seq";
    }
    r->max_diff = MAX_DIFF_DEFAULT;
    if ((got = number_at(body, "max_diff", &v)) < 0) {
        return "max_diff is a positive integer";
    }
    if (got > 0) {
        r->max_diff = v > MAX_DIFF_LIMIT ? MAX_DIFF_LIMIT : (size_t)v;
    }
    if (script != NULL) {
        r->script_len = strlen(script);
        r->script = strdup(script);
    } else {
        r->script_path = strdup(script_path);
    }
    return r->script == NULL && r->script_path == NULL ? "out of memory" : NULL;
}

const char *gust_replay_prepare(yajl_val body, void **arg)
{
    if (!YAJL_IS_OBJECT(body)) {
        return "the body must be a JSON object";
    }
    struct replay_request *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return "out of memory";
    }
    const char *bad = parse_request(body, r);
    if (bad != NULL) {
        gust_replay_free(r);
        return bad;
    }
    *arg = r;
    return NULL;
}

void gust_replay_handle(struct gust_http *http, h2o_req_t *req)
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
        gust_http_send_error(req, GUST_ROUTE_REPLAY, 405, "method not allowed");
        return;
    }
    char *text = malloc(req->entity.len + 1);
    if (text == NULL) {
        gust_http_send_error(req, GUST_ROUTE_REPLAY, 503, "out of memory");
        return;
    }
    if (req->entity.len > 0) {
        memcpy(text, req->entity.base, req->entity.len);
    }
    text[req->entity.len] = '\0';
    char perr[128];
    yajl_val body = yajl_tree_parse(text, perr, sizeof(perr));
    free(text);
    void *arg = NULL;
    const char *bad = body == NULL ? "the body must be a JSON object" : gust_replay_prepare(body, &arg);
    yajl_tree_free(body);
    if (bad != NULL) {
        gust_http_send_error(req, GUST_ROUTE_REPLAY, 400, bad);
        return;
    }
    gust_admin_submit_arg(http, req, GUST_ROUTE_REPLAY, gust_replay_route_run, arg, gust_replay_free);
}
