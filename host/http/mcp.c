/* POST /mcp: JSON-RPC 2.0 for MCP's Streamable HTTP transport. The body is one message
 * or a batch (an array); the answer is application/json (one response, an array of
 * them, or 202 with no body when only notifications came). No SSE stream is offered:
 * GET answers 405, which the transport allows. The server keeps no session, so no
 * Mcp-Session-Id is handed out.
 *
 * A tool whose route blocks on JetStream runs on the admin worker (admin.c), as the
 * route does: the exchange waits, in the request's pool, until every such call of the
 * batch is done, then answers. When the client goes away first the pool is freed and
 * the worker's answers are dropped (admin.c's anchor). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "gust/version.h"
#include "mcp.h"

/* The protocol versions this server speaks; an initialize asking for another gets the
 * first. */
static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

static const char instructions[] =
    "Gust is an event-integration host: events arrive over HTTP, MQTT and other sources, are stored in NATS "
    "JetStream, and run through flow units (Lua), detect units (VPL rules) and sinks. These tools show its "
    "state and run its admin operations with the rights of the admin token. Call gust_language first to "
    "learn how flows, rules and host.conf are written.";

struct gust_mcp_slot {
    struct gust_mcp_exchange *x;
    struct gust_buf id;  /* the request's id as JSON text; empty for a notification */
    struct gust_buf out; /* the response, once known */
    int waiting;         /* a worker job will fill out */
};

struct gust_mcp_exchange {
    struct gust_http *http;
    h2o_req_t *req;
    int batch;
    size_t n, pending;
    struct gust_mcp_slot *slots;
};

struct gust_http *gust_mcp_slot_http(const struct gust_mcp_slot *s)
{
    return s->x->http;
}

int gust_mcp_slot_writer(const struct gust_mcp_slot *s)
{
    return gust_admin_writer(s->x->http, s->x->req);
}

static void on_dispose(void *p)
{
    struct gust_mcp_exchange *x = p;
    for (size_t i = 0; i < x->n; i++) {
        gust_buf_free(&x->slots[i].id);
        gust_buf_free(&x->slots[i].out);
    }
    free(x->slots);
}

static void head(struct gust_mcp_slot *s, const char *id)
{
    gust_buf_append(&s->out, "{\"jsonrpc\":\"2.0\",\"id\":", 22);
    if (id != NULL) {
        gust_buf_append(&s->out, id, strlen(id));
    } else {
        gust_buf_append(&s->out, s->id.data, s->id.len);
    }
}

static void answer_error(struct gust_mcp_slot *s, int code, const char *message)
{
    s->out.len = 0;
    head(s, s->id.len > 0 ? NULL : "null");
    gust_buf_printf(&s->out, ",\"error\":{\"code\":%d,\"message\":", code);
    gust_json_append_string(&s->out, message, strlen(message));
    gust_buf_append(&s->out, "}}", 2);
}

/* result is JSON text. */
static void answer_result(struct gust_mcp_slot *s, const char *result, size_t len)
{
    s->out.len = 0;
    head(s, NULL);
    gust_buf_append(&s->out, ",\"result\":", 10);
    gust_buf_append(&s->out, result, len);
    gust_buf_append(&s->out, "}", 1);
}

void gust_mcp_tool_result(struct gust_mcp_slot *s, int status, const char *body, size_t len)
{
    if (s->id.len == 0) {
        return; /* a tools/call sent as a notification: nobody reads the answer */
    }
    struct gust_buf r = {0};
    /* The route's JSON answer, as the text MCP clients show to the model. */
    gust_buf_append(&r, "{\"content\":[{\"type\":\"text\",\"text\":", 34);
    while (len > 0 && body[len - 1] == '\n') {
        len--;
    }
    gust_json_append_string(&r, body != NULL ? body : "", len);
    gust_buf_printf(&r, "}],\"isError\":%s}", status >= 400 ? "true" : "false");
    answer_result(s, r.data, r.len);
    gust_buf_free(&r);
}

/* Everything answered: the response goes out. */
static void finish(struct gust_mcp_exchange *x)
{
    struct gust_buf body = {0};
    size_t answers = 0;
    if (x->batch) {
        gust_buf_append(&body, "[", 1);
    }
    for (size_t i = 0; i < x->n; i++) {
        if (x->slots[i].out.len == 0) {
            continue;
        }
        if (answers++ > 0) {
            gust_buf_append(&body, ",", 1);
        }
        gust_buf_append(&body, x->slots[i].out.data, x->slots[i].out.len);
    }
    if (x->batch) {
        gust_buf_append(&body, "]", 1);
    }
    if (answers == 0) {
        gust_http_send(x->req, GUST_ROUTE_MCP, 202, "application/json", "", 0);
    } else {
        gust_buf_append(&body, "\n", 1);
        gust_http_send(x->req, GUST_ROUTE_MCP, 200, "application/json", body.data, body.len);
    }
    gust_buf_free(&body);
}

/* On the loop: a tool's worker job is done (only called while the request lives). */
static void on_job_done(struct gust_admin_job *job)
{
    struct gust_mcp_slot *s = job->done_ud;
    gust_mcp_tool_result(s, job->status != 0 ? job->status : 500, job->body.data, job->body.len);
    s->waiting = 0;
    if (--s->x->pending == 0) {
        finish(s->x);
    }
}

void gust_mcp_tool_submit(struct gust_mcp_slot *s, void (*run)(struct gust_admin_job *),
                          const struct gust_dlq_query *q, void *arg, void (*free_arg)(void *))
{
    s->waiting = 1;
    s->x->pending++;
    gust_admin_submit_done(s->x->http, s->x->req, GUST_ROUTE_MCP, run, q, arg, free_arg, on_job_done, s);
}

static const char *string_member(yajl_val obj, const char *key, yajl_val *raw)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(obj, path, yajl_t_any);
    if (raw != NULL) {
        *raw = v;
    }
    return v != NULL && YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;
}

static void initialize(struct gust_mcp_slot *s, yajl_val params)
{
    const char *asked = params != NULL ? string_member(params, "protocolVersion", NULL) : NULL;
    const char *version = versions[0];
    for (size_t i = 0; asked != NULL && i < sizeof(versions) / sizeof(versions[0]); i++) {
        if (strcmp(asked, versions[i]) == 0) {
            version = versions[i];
        }
    }
    struct gust_buf r = {0};
    gust_buf_printf(&r,
                    "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{\"listChanged\":false}},"
                    "\"serverInfo\":{\"name\":\"gust\",\"version\":\"%s\"},\"instructions\":",
                    version, GUST_VERSION);
    gust_json_append_string(&r, instructions, sizeof(instructions) - 1);
    gust_buf_append(&r, "}", 1);
    answer_result(s, r.data, r.len);
    gust_buf_free(&r);
}

/* One message of the body, answered into s (now, or by a worker job). */
static void dispatch(struct gust_mcp_slot *s, yajl_val m)
{
    if (!YAJL_IS_OBJECT(m)) {
        answer_error(s, GUST_RPC_INVALID_REQUEST, "a JSON-RPC request is an object");
        return;
    }
    yajl_val id = NULL;
    const char *idpath[] = {"id", NULL};
    id = yajl_tree_get(m, idpath, yajl_t_any);
    if (id != NULL && (YAJL_IS_STRING(id) || YAJL_IS_NUMBER(id) || YAJL_IS_NULL(id))) {
        gust_mcp_json_of(id, &s->id);
    }
    const char *jsonrpc = string_member(m, "jsonrpc", NULL);
    yajl_val raw_method;
    const char *method = string_member(m, "method", &raw_method);
    if (jsonrpc == NULL || strcmp(jsonrpc, "2.0") != 0) {
        answer_error(s, GUST_RPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
        return;
    }
    if (id != NULL && s->id.len == 0) {
        answer_error(s, GUST_RPC_INVALID_REQUEST, "id must be a string, a number or null");
        return;
    }
    if (method == NULL) {
        const char *rpath[] = {"result", NULL}, *epath[] = {"error", NULL};
        /* A response from the client (this server sends no requests): nothing to say. */
        if (raw_method != NULL || id == NULL ||
            (yajl_tree_get(m, rpath, yajl_t_any) == NULL && yajl_tree_get(m, epath, yajl_t_any) == NULL)) {
            answer_error(s, GUST_RPC_INVALID_REQUEST, "a request needs a method (a string)");
        }
        return;
    }
    const char *ppath[] = {"params", NULL};
    yajl_val params = yajl_tree_get(m, ppath, yajl_t_any);
    if (params != NULL && !YAJL_IS_OBJECT(params) && !YAJL_IS_ARRAY(params)) {
        answer_error(s, GUST_RPC_INVALID_PARAMS, "params must be an object");
        return;
    }
    if (id == NULL) {
        /* Notifications (initialized, cancelled, ...) need no answer and change nothing
         * here; a notification of another method is dropped, as JSON-RPC says. */
        if (strcmp(method, "tools/call") != 0) {
            return;
        }
    }
    if (strcmp(method, "initialize") == 0) {
        initialize(s, params);
    } else if (strcmp(method, "ping") == 0) {
        answer_result(s, "{}", 2);
    } else if (strcmp(method, "tools/list") == 0) {
        struct gust_buf r = {0};
        gust_mcp_tools_list(&r);
        answer_result(s, r.data, r.len);
        gust_buf_free(&r);
    } else if (strcmp(method, "tools/call") == 0) {
        if (id == NULL) {
            return; /* a call as a notification would run a tool nobody hears from */
        }
        const char *name =
            params != NULL && YAJL_IS_OBJECT(params) ? string_member(params, "name", NULL) : NULL;
        yajl_val args = NULL;
        if (params != NULL && YAJL_IS_OBJECT(params)) {
            const char *apath[] = {"arguments", NULL};
            args = yajl_tree_get(params, apath, yajl_t_any);
        }
        char why[256];
        if (name == NULL) {
            answer_error(s, GUST_RPC_INVALID_PARAMS, "tools/call needs params.name (a string)");
        } else if (args != NULL && !YAJL_IS_OBJECT(args) && !YAJL_IS_NULL(args)) {
            answer_error(s, GUST_RPC_INVALID_PARAMS, "params.arguments must be an object");
        } else if (gust_mcp_tool_call(s, name, args != NULL && YAJL_IS_OBJECT(args) ? args : NULL, why,
                                      sizeof(why)) != 0) {
            answer_error(s, GUST_RPC_INVALID_PARAMS, why);
        }
    } else {
        char why[200];
        snprintf(why, sizeof(why), "method not found: %.120s", method);
        answer_error(s, GUST_RPC_METHOD_NOT_FOUND, why);
    }
}

static void send_parse_error(h2o_req_t *req, int code, const char *why)
{
    struct gust_buf b = {0};
    gust_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":", code);
    gust_json_append_string(&b, why, strlen(why));
    gust_buf_append(&b, "}}\n", 3);
    gust_http_send(req, GUST_ROUTE_MCP, code == GUST_RPC_PARSE_ERROR ? 400 : 400, "application/json", b.data,
                   b.len);
    gust_buf_free(&b);
}

void gust_mcp_handle(struct gust_http *http, h2o_req_t *req)
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        /* No server-to-client stream (GET) and no session to end (DELETE). */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
        gust_http_send_error(req, GUST_ROUTE_MCP, 405, "method not allowed: MCP messages are POSTed");
        return;
    }
    char *text = malloc(req->entity.len + 1);
    if (text == NULL) {
        gust_http_send_error(req, GUST_ROUTE_MCP, 503, "out of memory");
        return;
    }
    if (req->entity.len > 0) {
        memcpy(text, req->entity.base, req->entity.len);
    }
    text[req->entity.len] = '\0';
    char perr[256];
    yajl_val body = yajl_tree_parse(text, perr, sizeof(perr));
    free(text);
    if (body == NULL) {
        send_parse_error(req, GUST_RPC_PARSE_ERROR, "parse error: the body is not JSON");
        return;
    }
    int batch = YAJL_IS_ARRAY(body);
    size_t n = batch ? body->u.array.len : 1;
    if (n == 0) {
        yajl_tree_free(body);
        send_parse_error(req, GUST_RPC_INVALID_REQUEST, "an empty batch");
        return;
    }
    struct gust_mcp_exchange *x = h2o_mem_alloc_shared(&req->pool, sizeof(*x), on_dispose);
    *x = (struct gust_mcp_exchange){.http = http, .req = req, .batch = batch, .n = n};
    x->slots = calloc(n, sizeof(*x->slots));
    if (x->slots == NULL) {
        x->n = 0;
        yajl_tree_free(body);
        gust_http_send_error(req, GUST_ROUTE_MCP, 503, "out of memory");
        return;
    }
    /* Held while dispatching, so that a job refused at once does not answer early. */
    x->pending = 1;
    for (size_t i = 0; i < n; i++) {
        x->slots[i].x = x;
        dispatch(&x->slots[i], batch ? body->u.array.values[i] : body);
    }
    yajl_tree_free(body);
    if (--x->pending == 0) {
        finish(x);
    }
}
