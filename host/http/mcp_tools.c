/* The tools of POST /mcp (mcp.c). Each mirrors an admin route and calls the code that
 * route calls: the same JSON comes back, as the tool's text. Those whose route blocks
 * on JetStream (the dead letters, the shadow replay, reload's check) run on the admin
 * worker as the route does, and so does gust_flow_test (it runs Lua, up to its
 * timeout per event). Arguments are checked against the tool's schema, which is also
 * what tools/list shows: one table says both. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../vpl/vpl.h"
#include "mcp.h"
#include "mcp_flow_test.h"

#define VPL_PROGRAM_MAX (1u << 20)

enum arg_type { ARG_STRING, ARG_INTEGER, ARG_BOOLEAN, ARG_ARRAY };

struct arg {
    const char *name;
    enum arg_type type;
    int required;
    const char *description;
};

#define MAX_ARGS 8

struct tool {
    const char *name;
    const char *description;
    int read_only;
    void (*call)(struct gust_mcp_slot *s, yajl_val args);
    struct arg args[MAX_ARGS];
};

static yajl_val member(yajl_val args, const char *key)
{
    if (args == NULL) {
        return NULL;
    }
    const char *path[] = {key, NULL};
    return yajl_tree_get(args, path, yajl_t_any);
}

static void answer_buf(struct gust_mcp_slot *s, int status, struct gust_buf *b)
{
    gust_mcp_tool_result(s, status, b->data, b->len);
    gust_buf_free(b);
}

static void call_topology(struct gust_mcp_slot *s, yajl_val args)
{
    struct gust_buf b = {0};
    answer_buf(s, gust_topology_json(gust_mcp_slot_http(s), YAJL_IS_TRUE(member(args, "spark")), &b), &b);
}

static void call_units(struct gust_mcp_slot *s, yajl_val args)
{
    (void)args;
    struct gust_buf b = {0};
    gust_units_json(gust_mcp_slot_http(s), &b);
    answer_buf(s, 200, &b);
}

static void call_events(struct gust_mcp_slot *s, yajl_val args)
{
    yajl_val u = member(args, "unit");
    struct gust_buf b = {0};
    answer_buf(s, gust_events_json(gust_mcp_slot_http(s), u != NULL ? u->u.string : "", &b), &b);
}

/* The dead-letter routes read their JSON body (and after_seq from the query string). */
static void call_dlq(struct gust_mcp_slot *s, yajl_val args, enum gust_dlq_op op)
{
    struct gust_buf body = {0};
    char query[64] = "";
    yajl_val after = member(args, "after_seq");
    if (after != NULL) {
        snprintf(query, sizeof(query), "after_seq=%lld", YAJL_GET_INTEGER(after));
    }
    if (args != NULL) {
        gust_mcp_json_of(args, &body);
    }
    struct gust_dlq_query q;
    void (*run)(struct gust_admin_job *) = NULL;
    const char *bad = gust_dlq_prepare(op, query, strlen(query), body.data, body.len, &q, &run);
    gust_buf_free(&body);
    if (bad != NULL) {
        struct gust_buf e = {0};
        gust_buf_append(&e, "{\"error\":", 9);
        gust_json_append_string(&e, bad, strlen(bad));
        gust_buf_append(&e, "}", 1);
        answer_buf(s, 400, &e);
        return;
    }
    gust_mcp_tool_submit(s, run, &q, NULL, NULL);
}

static void call_dlq_list(struct gust_mcp_slot *s, yajl_val args)
{
    call_dlq(s, args, GUST_DLQ_LIST);
}

static void call_dlq_replay(struct gust_mcp_slot *s, yajl_val args)
{
    call_dlq(s, args, GUST_DLQ_REPLAY);
}

static void call_dlq_purge(struct gust_mcp_slot *s, yajl_val args)
{
    call_dlq(s, args, GUST_DLQ_PURGE);
}

/* The checker a detect unit's load runs (vpl.h): the first error, with its place. */
static void call_vpl_check(struct gust_mcp_slot *s, yajl_val args)
{
    const char *program = member(args, "program")->u.string; /* checked: a string */
    struct gust_buf b = {0};
    size_t len = strlen(program);
    if (len > VPL_PROGRAM_MAX) {
        gust_buf_printf(&b, "{\"error\":\"program: over %u bytes\"}", VPL_PROGRAM_MAX);
        answer_buf(s, 400, &b);
        return;
    }
    struct vpl_program *prog = NULL;
    struct vpl_error err = {0};
    if (vpl_program_compile(program, len, "program.vpl", &prog, &err) != 0) {
        gust_buf_printf(&b, "{\"ok\":false,\"errors\":[{\"line\":%u,\"col\":%u,\"message\":", err.line,
                        err.col);
        gust_json_append_string(&b, err.msg, strlen(err.msg));
        gust_buf_append(&b, "}]}", 3);
        answer_buf(s, 200, &b);
        return;
    }
    const struct vpl_binding *in;
    const struct vpl_output *outs;
    size_t nin = vpl_program_bindings(prog, &in), nout = vpl_program_outputs(prog, &outs);
    gust_buf_append(&b, "{\"ok\":true,\"inputs\":[", 21);
    for (size_t i = 0; i < nin; i++) {
        gust_buf_append(&b, i > 0 ? ",{\"event_type\":" : "{\"event_type\":", i > 0 ? 15 : 14);
        gust_json_append_string(&b, in[i].event_type, strlen(in[i].event_type));
        gust_buf_append(&b, ",\"topic\":", 9);
        if (in[i].topic != NULL) {
            gust_json_append_string(&b, in[i].topic, strlen(in[i].topic));
        } else {
            gust_buf_append(&b, "null", 4);
        }
        gust_buf_append(&b, "}", 1);
    }
    gust_buf_append(&b, "],\"outputs\":[", 13);
    for (size_t i = 0; i < nout; i++) {
        gust_buf_append(&b, i > 0 ? ",{\"stream\":" : "{\"stream\":", i > 0 ? 11 : 10);
        gust_json_append_string(&b, outs[i].stream, strlen(outs[i].stream));
        gust_buf_append(&b, ",\"topic\":", 9);
        if (outs[i].topic != NULL) {
            gust_json_append_string(&b, outs[i].topic, strlen(outs[i].topic));
        } else {
            gust_buf_append(&b, "null", 4);
        }
        gust_buf_append(&b, "}", 1);
    }
    gust_buf_append(&b, "]}", 2);
    vpl_program_destroy(prog);
    answer_buf(s, 200, &b);
}

static void call_flow_test(struct gust_mcp_slot *s, yajl_val args)
{
    void *arg = NULL;
    struct gust_buf b = {0};
    const char *bad =
        gust_mcp_flow_test_prepare(member(args, "script")->u.string, member(args, "events"), &arg);
    if (bad != NULL) {
        gust_buf_append(&b, "{\"error\":", 9);
        gust_json_append_string(&b, bad, strlen(bad));
        gust_buf_append(&b, "}", 1);
        answer_buf(s, 400, &b);
        return;
    }
    gust_mcp_tool_submit(s, gust_mcp_flow_test_run, NULL, arg, gust_mcp_flow_test_free);
}

static void call_replay(struct gust_mcp_slot *s, yajl_val args)
{
    void *arg = NULL;
    const char *bad = gust_replay_prepare(args, &arg);
    if (bad != NULL) {
        struct gust_buf b = {0};
        gust_buf_append(&b, "{\"error\":", 9);
        gust_json_append_string(&b, bad, strlen(bad));
        gust_buf_append(&b, "}", 1);
        answer_buf(s, 400, &b);
        return;
    }
    gust_mcp_tool_submit(s, gust_replay_route_run, NULL, arg, gust_replay_free);
}

static void call_reload(struct gust_mcp_slot *s, yajl_val args)
{
    struct gust_dlq_query q = {.force = YAJL_IS_TRUE(member(args, "force"))};
    gust_mcp_tool_submit(s, gust_reload_run, &q, NULL, NULL);
}

static const char language[] =
    "# Writing for Gust\n"
    "\n"
    "## host.conf\n"
    "`key value;` lines and `name { ... }` blocks, `#` comments. Events are stored in NATS JetStream on\n"
    "subjects under `ev.`; each unit reads its source subject(s) and publishes what it emits:\n"
    "  http { listen 127.0.0.1:8080; admin_token_file /etc/gust/admin.token; }\n"
    "  nats { url nats://127.0.0.1:4222; }   # omit the block: gust runs its own nats-server\n"
    "  plugin http_out;\n"
    "  flow orders    { script scripts/orders.lua; source ev.orders; }\n"
    "  detect lateral { rules rules/lateral_movement.vpl; }\n"
    "  relay copy     { source ev.a; to ev.b; }\n"
    "  sink crm       { use http_out; source ev.orders.out; url https://crm.example/api;\n"
    "                   header Authorization \"Bearer {secret:crm/api#token}\"; }\n"
    "`gust --help` lists every key with its type, bounds and default; `gust -t -c host.conf` checks a\n"
    "file, every script and rule included; the gust_reload tool (or SIGHUP) applies it.\n"
    "\n"
    "## Flows (LuaJIT)\n"
    "A script returns a table with on_event(ev, meta); ev is the event, a decoded JSON object; meta has\n"
    "subject, seq, time, attempt, unit, headers. emit(subject, table [, headers]) publishes an event,\n"
    "stored before the input is acknowledged; log.info/warn/error(text); state.get/set/incr/del keep\n"
    "durable state; json.encode/decode; secret(\"PATH#KEY\") reads a secret. An error() retries the\n"
    "event, then sends it to the dead-letter queue. Each call is bounded in time and heap.\n"
    "  return { source = \"ev.orders\", on_event = function(ev, meta)\n"
    "    if ev.total > 100 then emit(\"ev.orders.big\", { id = ev.id, total = ev.total }) end\n"
    "  end }\n"
    "Try a script on events with gust_flow_test {script, events}; compare it with a running flow on\n"
    "its stored input with gust_replay {unit, script, last}.\n"
    "\n"
    "## Rules (VPL), for detect units\n"
    "Declare connectors and event types, bind streams to subjects, then filter, correlate, window and\n"
    "emit alerts:\n"
    "  connector Bus = nats (url: \"ignored: the host's bus\")\n"
    "  event Reading:\n"
    "      device: str\n"
    "      v: int\n"
    "  stream Readings = Reading.from(Bus, topic: \"ev.telemetry\")\n"
    "  stream High = Readings\n"
    "      .where(v > 100)\n"
    "      .partition_by(device)\n"
    "      .window(10s)\n"
    "      .aggregate(device: last(device), n: count())\n"
    "      .emit(device: device, n: n)\n"
    "      .to(Bus, topic: \"ev.alerts\")\n"
    "Sequences: `stream S = A as a -> B where x == a.x as b .within(2m) .emit(...)`; `.not(C where ...)`\n"
    "cancels. Check a program with gust_vpl_check {program}: an error comes as line:col: message.\n";

static void call_language(struct gust_mcp_slot *s, yajl_val args)
{
    (void)args;
    /* The text itself, not a JSON document: agents read it as it is. */
    gust_mcp_tool_result(s, 200, language, sizeof(language) - 1);
}

static const struct tool tools[] = {
    {"gust_topology",
     "The graph of sources, units and sinks with their rates and state, and the store, dead-letter, bus "
     "and memory gauges (GET /topology).",
     1,
     call_topology,
     {{"spark", ARG_BOOLEAN, 0, "include the 15-minute sparklines (default false)"}}},
    {"gust_units",
     "Every unit with its state, counters, lag and last error; the cluster's leases when clustered (GET "
     "/units).",
     1,
     call_units,
     {{0}}},
    {"gust_events",
     "The recent events each unit took in and put out (GET /events).",
     1,
     call_events,
     {{"unit", ARG_STRING, 0, "one unit's only"}}},
    {"gust_dlq_list",
     "Dead letters, oldest first, each with its envelope: the error, attempts and original subject (GET "
     "/dlq).",
     1,
     call_dlq_list,
     {{"unit", ARG_STRING, 0, "one unit's only"},
      {"limit", ARG_INTEGER, 0, "at most this many (default 50, at most 1000)"},
      {"after_seq", ARG_INTEGER, 0, "only those after this dead-letter sequence"}}},
    {"gust_dlq_replay",
     "Publishes dead letters again on their original subject and removes them from the DLQ (POST "
     "/dlq/replay). Give exactly one of seq, unit or all.",
     0,
     call_dlq_replay,
     {{"seq", ARG_INTEGER, 0, "one dead letter"},
      {"unit", ARG_STRING, 0, "every dead letter of this unit"},
      {"all", ARG_BOOLEAN, 0, "every dead letter"},
      {"limit", ARG_INTEGER, 0, "at most this many (default 10000)"}}},
    {"gust_dlq_purge",
     "Deletes dead letters (POST /dlq/purge). Give exactly one of unit or all.",
     0,
     call_dlq_purge,
     {{"unit", ARG_STRING, 0, "this unit's"}, {"all", ARG_BOOLEAN, 0, "every dead letter"}}},
    {"gust_vpl_check",
     "Checks a VPL program as a detect unit loads it: ok with its inputs and outputs, or the error with "
     "line and col.",
     1,
     call_vpl_check,
     {{"program", ARG_STRING, 1, "the VPL program's text"}}},
    {"gust_flow_test",
     "Runs a Lua flow script on the given events in the flow sandbox (timeout 1 s per event, 64 MiB heap, "
     "no durable state, no bus): what each event emits, its error, and the log lines.",
     0,
     call_flow_test,
     {{"script", ARG_STRING, 1, "the flow script's text"},
      {"events", ARG_ARRAY, 1, "the events, JSON objects, in order (at most 1000)"}}},
    {"gust_replay",
     "Shadow replay (POST /replay): runs a candidate script beside a flow unit's current one on the "
     "unit's stored input and reports where their outputs differ. Publishes nothing.",
     0,
     call_replay,
     {{"unit", ARG_STRING, 1, "the flow unit"},
      {"script", ARG_STRING, 0, "the candidate's text (or script_path)"},
      {"script_path", ARG_STRING, 0, "the candidate's file, under the script directories"},
      {"last", ARG_INTEGER, 0, "the last N stored inputs"},
      {"since", ARG_STRING, 0, "inputs since an RFC 3339 time or a duration before now (\"10m\")"},
      {"from_seq", ARG_INTEGER, 0, "inputs from this stream sequence"},
      {"max_diff", ARG_INTEGER, 0, "at most this many differing inputs in the answer (default 1000)"}}},
    {"gust_reload",
     "Checks host.conf and reloads it, as SIGHUP does (POST /reload); refused when the check fails.",
     0,
     call_reload,
     {{"force", ARG_BOOLEAN, 0, "reload without the check"}}},
    {"gust_language",
     "How flows (Lua), rules (VPL) and host.conf are written: read it before writing any.",
     1,
     call_language,
     {{0}}},
};

static const char *type_name(enum arg_type t)
{
    return t == ARG_STRING ? "string" : t == ARG_INTEGER ? "integer" : t == ARG_BOOLEAN ? "boolean" : "array";
}

static void append_schema(struct gust_buf *out, const struct tool *t)
{
    gust_buf_append(out, "{\"type\":\"object\",\"properties\":{", 31);
    const char *required[MAX_ARGS];
    size_t nreq = 0;
    for (size_t i = 0; i < MAX_ARGS && t->args[i].name != NULL; i++) {
        const struct arg *a = &t->args[i];
        if (i > 0) {
            gust_buf_append(out, ",", 1);
        }
        gust_json_append_string(out, a->name, strlen(a->name));
        gust_buf_printf(out, ":{\"type\":\"%s\",", type_name(a->type));
        if (a->type == ARG_ARRAY) {
            gust_buf_append(out, "\"items\":{\"type\":\"object\"},", 26);
        }
        gust_buf_append(out, "\"description\":", 14);
        gust_json_append_string(out, a->description, strlen(a->description));
        gust_buf_append(out, "}", 1);
        if (a->required) {
            required[nreq++] = a->name;
        }
    }
    gust_buf_append(out, "},\"required\":[", 14);
    for (size_t i = 0; i < nreq; i++) {
        if (i > 0) {
            gust_buf_append(out, ",", 1);
        }
        gust_json_append_string(out, required[i], strlen(required[i]));
    }
    gust_buf_append(out, "],\"additionalProperties\":false}", 31);
}

void gust_mcp_tools_list(struct gust_buf *out)
{
    gust_buf_append(out, "{\"tools\":[", 10);
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        const struct tool *t = &tools[i];
        gust_buf_append(out, i > 0 ? ",{\"name\":" : "{\"name\":", i > 0 ? 9 : 8);
        gust_json_append_string(out, t->name, strlen(t->name));
        gust_buf_append(out, ",\"description\":", 15);
        gust_json_append_string(out, t->description, strlen(t->description));
        gust_buf_append(out, ",\"inputSchema\":", 15);
        append_schema(out, t);
        gust_buf_printf(out, ",\"annotations\":{\"readOnlyHint\":%s}}", t->read_only ? "true" : "false");
    }
    gust_buf_append(out, "]}", 2);
}

static int fits(yajl_val v, enum arg_type t)
{
    switch (t) {
    case ARG_STRING:
        return YAJL_IS_STRING(v);
    case ARG_INTEGER:
        return YAJL_IS_INTEGER(v);
    case ARG_BOOLEAN:
        return YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v);
    default:
        return YAJL_IS_ARRAY(v);
    }
}

/* 0, or why args do not fit t's schema. */
static int check_args(const struct tool *t, yajl_val args, char *why, size_t size)
{
    for (size_t i = 0; args != NULL && i < args->u.object.len; i++) {
        const char *key = args->u.object.keys[i];
        const struct arg *a = NULL;
        for (size_t k = 0; k < MAX_ARGS && t->args[k].name != NULL && a == NULL; k++) {
            a = strcmp(t->args[k].name, key) == 0 ? &t->args[k] : NULL;
        }
        if (a == NULL) {
            snprintf(why, size, "%s: unknown argument '%.64s'", t->name, key);
            return -1;
        }
        if (!fits(args->u.object.values[i], a->type)) {
            snprintf(why, size, "%s: argument '%s' must be %s %s", t->name, a->name,
                     a->type == ARG_INTEGER || a->type == ARG_ARRAY ? "an" : "a", type_name(a->type));
            return -1;
        }
    }
    for (size_t k = 0; k < MAX_ARGS && t->args[k].name != NULL; k++) {
        if (t->args[k].required && member(args, t->args[k].name) == NULL) {
            snprintf(why, size, "%s: argument '%s' is required", t->name, t->args[k].name);
            return -1;
        }
    }
    return 0;
}

int gust_mcp_tool_call(struct gust_mcp_slot *s, const char *name, yajl_val args, char *why, size_t size)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        if (strcmp(tools[i].name, name) != 0) {
            continue;
        }
        if (check_args(&tools[i], args, why, size) != 0) {
            return GUST_RPC_INVALID_PARAMS;
        }
        if (!tools[i].read_only && !gust_mcp_slot_writer(s)) {
            static const char refused[] =
                "{\"error\":\"this tool changes state or runs code: it needs the admin "
                "token, not the read-only one\"}";
            gust_mcp_tool_result(s, 403, refused, sizeof(refused) - 1);
            return 0;
        }
        tools[i].call(s, args);
        return 0;
    }
    snprintf(why, size, "unknown tool: %.100s", name);
    return GUST_RPC_INVALID_PARAMS;
}

void gust_mcp_json_of(yajl_val v, struct gust_buf *out)
{
    if (YAJL_IS_STRING(v)) {
        const char *str = v->u.string;
        gust_json_append_string(out, str, strlen(str));
    } else if (YAJL_IS_NUMBER(v)) {
        const char *r = v->u.number.r; /* the number's text as it came */
        gust_buf_append(out, r != NULL ? r : "0", r != NULL ? strlen(r) : 1);
    } else if (YAJL_IS_TRUE(v)) {
        gust_buf_append(out, "true", 4);
    } else if (YAJL_IS_FALSE(v)) {
        gust_buf_append(out, "false", 5);
    } else if (YAJL_IS_OBJECT(v)) {
        gust_buf_append(out, "{", 1);
        for (size_t i = 0; i < v->u.object.len; i++) {
            if (i > 0) {
                gust_buf_append(out, ",", 1);
            }
            gust_json_append_string(out, v->u.object.keys[i], strlen(v->u.object.keys[i]));
            gust_buf_append(out, ":", 1);
            gust_mcp_json_of(v->u.object.values[i], out);
        }
        gust_buf_append(out, "}", 1);
    } else if (YAJL_IS_ARRAY(v)) {
        gust_buf_append(out, "[", 1);
        for (size_t i = 0; i < v->u.array.len; i++) {
            if (i > 0) {
                gust_buf_append(out, ",", 1);
            }
            gust_mcp_json_of(v->u.array.values[i], out);
        }
        gust_buf_append(out, "]", 1);
    } else {
        gust_buf_append(out, "null", 4);
    }
}
