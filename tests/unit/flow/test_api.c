/* The script's API beyond emit: meta, emit's headers, require from lua_path (and what
 * it refuses), log.* and print, and what the sandbox reaches (no clock). */
#include <stdint.h>
#include <sys/stat.h>

#include "../../../host/common/json_out.h"
#include "../../check.h"
#include "flow_int.h"
#include "scripts.h"

static int run(struct gust_flow *f, const char *json, const struct gust_flow_meta *meta,
               struct gust_emits *out, struct gust_err *err)
{
    return gust_flow_run(f, json, strlen(json), meta, out, err);
}

static const char *rfc3339(int64_t ms)
{
    static char out[GUST_RFC3339_SIZE];
    gust_rfc3339_ms(ms, out);
    return out;
}

static void test_rfc3339(void)
{
    CHECK_STR(rfc3339(0), "1970-01-01T00:00:00.000Z");
    CHECK_STR(rfc3339(1764400000123), "2025-11-29T07:06:40.123Z");
    CHECK_STR(rfc3339(951782400000), "2000-02-29T00:00:00.000Z");
    CHECK_STR(rfc3339(4107542400000), "2100-03-01T00:00:00.000Z");
    CHECK_STR(rfc3339(253402300799999), "9999-12-31T23:59:59.999Z");
    CHECK_STR(rfc3339(-1), "1969-12-31T23:59:59.999Z");
}

static void test_meta(void)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    const char *script =
        "return { on_event = function(ev, meta)\n"
        "  emit('ev.meta', meta)\n"
        "  if last then emit('ev.last', { seq = last.seq, fresh = last ~= meta, changed = last.x }) end\n"
        "  meta.x = 'changed by the script'\n"
        "  last = meta\n"
        "end }";
    CHECK(flow_from_text(script, 0, &f, &err) == 0);
    struct gust_header headers[] = {{"Content-Type", "application/json"}, {"X-Tag", "a"}, {"X-Tag", "b"}};
    struct gust_flow_meta meta = {.subject = "ev.orders.eu",
                                  .seq = 42,
                                  .time_ms = 1764400000123,
                                  .attempt = 3,
                                  .unit = "orders",
                                  .headers = headers,
                                  .nheaders = 3};
    CHECK(run(f, "{}", &meta, &out, &err) == 0);
    CHECK(out.n == 1);
    CHECK_CONTAINS(out.v[0].payload, "\"subject\":\"ev.orders.eu\"");
    CHECK_CONTAINS(out.v[0].payload, "\"seq\":42");
    CHECK_CONTAINS(out.v[0].payload, "\"time\":1764400000123");
    CHECK_CONTAINS(out.v[0].payload, "\"time_rfc3339\":\"2025-11-29T07:06:40.123Z\"");
    CHECK_CONTAINS(out.v[0].payload, "\"attempt\":3");
    CHECK_CONTAINS(out.v[0].payload, "\"unit\":\"orders\"");
    CHECK_CONTAINS(out.v[0].payload, "\"Content-Type\":\"application/json\"");
    CHECK_CONTAINS(out.v[0].payload, "\"X-Tag\":\"a, b\"");
    /* Nothing known: only headers, empty. A kept meta is the previous event's, as it was. */
    CHECK(run(f, "{}", NULL, &out, &err) == 0);
    CHECK(out.n == 3);
    CHECK_STR(out.v[1].payload, "{\"headers\":{}}");
    CHECK_CONTAINS(out.v[2].payload, "\"seq\":42");
    CHECK_CONTAINS(out.v[2].payload, "\"changed\":\"changed by the script\"");
    CHECK_CONTAINS(out.v[2].payload, "\"fresh\":true");
    gust_emits_free(&out);
    gust_flow_destroy(f);

    /* A header name in another case finds the header; the exact name first. */
    CHECK(flow_from_text("return { on_event = function(ev, meta) local h = meta.headers\n"
                         "  emit('ev.h', { a = h['content-type'], b = h['X-TAG'], c = h['X-Tag'], d = h.nope,\n"
                         "                 e = h[1], mt = tostring(getmetatable(h)) }) end }",
                         0, &f, &err) == 0);
    CHECK(run(f, "{}", &meta, &out, &err) == 0);
    CHECK_CONTAINS(out.v[0].payload, "\"a\":\"application/json\"");
    CHECK_CONTAINS(out.v[0].payload, "\"b\":\"a, b\"");
    CHECK_CONTAINS(out.v[0].payload, "\"c\":\"a, b\"");
    CHECK_CONTAINS(out.v[0].payload, "\"mt\":\"false\"");
    CHECK(strstr(out.v[0].payload, "\"d\"") == NULL && strstr(out.v[0].payload, "\"e\"") == NULL);
    gust_emits_free(&out);
    gust_flow_destroy(f);

    /* on_event(...) takes meta too; on_event(ev) is given none (and costs none). */
    CHECK(flow_from_text("return { on_event = function(...) local ev, meta = ...\n"
                         "  emit('ev.x', { seq = meta.seq, n = select('#', ...) }) end }",
                         0, &f, &err) == 0);
    meta.nheaders = 0;
    CHECK(run(f, "{}", &meta, &out, &err) == 0);
    CHECK_CONTAINS(out.v[0].payload, "\"seq\":42");
    CHECK_CONTAINS(out.v[0].payload, "\"n\":2");
    gust_emits_free(&out);
    gust_flow_destroy(f);
    CHECK(flow_from_text("return { on_event = function(ev) emit('ev.x', { debug = type(debug) }) end }", 0,
                         &f, &err) == 0);
    CHECK(!f->wants_meta);
    CHECK(run(f, "{}", &meta, &out, &err) == 0);
    CHECK_STR(out.v[0].payload, "{\"debug\":\"nil\"}"); /* used to look, then removed */
    gust_emits_free(&out);
    gust_flow_destroy(f);
}

static void test_emit_headers(void)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    CHECK(flow_from_text("return { on_event = function(ev) load(ev.code)() end }", 0, &f, &err) == 0);
    CHECK(run(f, "{\"code\": \"emit('ev.x', {}, {headers = {['X-B'] = '2', ['X-A'] = 'one, two'}})\"}", NULL,
              &out, &err) == 0);
    CHECK(out.n == 1 && out.v[0].nheaders == 2);
    if (out.n == 1 && out.v[0].nheaders == 2) {
        CHECK_STR(out.v[0].headers[0].name, "X-A"); /* sorted by name */
        CHECK_STR(out.v[0].headers[0].value, "one, two");
        CHECK_STR(out.v[0].headers[1].name, "X-B");
        CHECK_STR(out.v[0].headers[1].value, "2");
    }
    CHECK(run(f, "{\"code\": \"emit('ev.x', {}, {}) emit('ev.y', {}, {headers = {}})\"}", NULL, &out, &err) ==
          0);
    CHECK(out.n == 3 && out.v[1].nheaders == 0 && out.v[1].headers == NULL && out.v[2].nheaders == 0);
    static const struct {
        const char *code, *error;
    } bad[] = {
        {"emit('ev.x', {}, {header = {}})", "emit: unknown option 'header' (options: headers)"},
        {"emit('ev.x', {}, {1})", "emit: options are named (headers = ...), not keyed by a number"},
        {"emit('ev.x', {}, 'h')", "bad argument #3 to 'emit' (table expected, got string)"},
        {"emit('ev.x', {}, {headers = 'h'})", "emit: headers must be a table of name = value strings"},
        {"emit('ev.x', {}, {headers = {['A:B'] = '1'}})",
         "emit: invalid header name 'A:B': a name holds ':'"},
        {"emit('ev.x', {}, {headers = {['A B'] = '1'}})", "invalid header name 'A B'"},
        {"emit('ev.x', {}, {headers = {[''] = '1'}})", "invalid header name '': an empty name"},
        {"emit('ev.x', {}, {headers = {['caf\\u00e9'] = '1'}})", "non-ASCII"},
        {"emit('ev.x', {}, {headers = {['nats-msg-id'] = '1'}})",
         "names starting with Nats- are reserved for the bus"},
        {"emit('ev.x', {}, {headers = {[1] = '1'}})", "emit: a header name must be a string, not a number"},
        {"emit('ev.x', {}, {headers = {A = 1}})", "emit: header 'A' must be a string, not a number"},
        {"emit('ev.x', {}, {headers = {A = 'x\\\\r\\\\ny: z'}})",
         "emit: header 'A': a value cannot hold CR, LF or NUL"},
        {"emit('ev.x', {}, {headers = {A = 'x' .. string.char(0)}})", "a value cannot hold CR, LF or NUL"},
        {"local h = {} for i = 1, 65 do h['H' .. i] = 'v' end emit('ev.x', {}, {headers = h})",
         "emit: too many headers (at most 64, 8192 bytes in all)"},
        {"emit('ev.x', {}, {headers = {A = string.rep('v', 8192)}})", "emit: too many headers"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[512];
        snprintf(json, sizeof(json), "{\"code\": \"%s\"}", bad[i].code);
        CHECK(run(f, json, NULL, &out, &err) == GUST_ECONFIG);
        CHECK_CONTAINS(err.msg, bad[i].error);
    }
    CHECK(out.n == 3);
    gust_emits_free(&out);
    gust_flow_destroy(f);

    /* The emit owns copies. */
    char name[] = "X-Copy", value[] = "v1";
    struct gust_header h = {name, value};
    CHECK(gust_emits_push_with_headers(&out, "ev.s", "{}", 2, &h, 1) == 0);
    name[0] = value[0] = '?';
    CHECK_STR(out.v[0].headers[0].name, "X-Copy");
    CHECK_STR(out.v[0].headers[0].value, "v1");
    CHECK_STR(out.v[0].subject, "ev.s");
    gust_emits_free(&out);
}

static char lib[256];

static void write_file(const char *rel, const char *text, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", lib, rel);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || fwrite(text, 1, len, fp) != len) {
        perror(path);
        exit(2);
    }
    fclose(fp);
}

static void module(const char *rel, const char *text)
{
    write_file(rel, text, strlen(text));
}

static void test_require(void)
{
    snprintf(lib, sizeof(lib), "/tmp/gust-flow-lib-XXXXXX");
    if (mkdtemp(lib) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    char sub[300];
    snprintf(sub, sizeof(sub), "%s/geo", lib);
    mkdir(sub, 0700);
    snprintf(sub, sizeof(sub), "%s/dir.lua", lib);
    mkdir(sub, 0700);
    module("util.lua",
           "loads = (loads or 0) + 1\nlocal M = {}\nfunction M.twice(x) return 2 * x end\nreturn M\n");
    module("geo/eu.lua", "return { FR = 'France', name = ... }\n");
    module("noreturn.lua", "x = 1\n");
    module("broken.lua", "local M = {}\n\nerror('broken on purpose')\n");
    module("syntax.lua", "return {\n  x = = 1 }\n");
    module("loop_a.lua", "return require('loop_b')\n");
    module("loop_b.lua", "return require('loop_a')\n");
    module("escape.lua", "return io.open('/etc/passwd')\n");
    write_file("bytecode.lua", "\033LJ\002\000\000\000", 7);

    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    struct gust_flow_opts opts = {.lua_path = lib};
    const char *script =
        "local util = require('util')\n"
        "return { on_event = function(ev)\n"
        "  if ev.name then require(ev.name) return end\n"
        "  local again = require('util')\n"
        "  local eu = require('geo.eu')\n"
        "  emit('ev.x', { twice = util.twice(21), same = again == util, loads = loads,\n"
        "    fr = eu.FR, arg = eu.name, noreturn = require('noreturn'), package = package })\n"
        "end }";
    CHECK(flow_from_text_opts(script, opts, &f, &err) == 0);
    CHECK(run(f, "{}", NULL, &out, &err) == 0);
    static const char *const fields[] = {"\"loads\":1",   "\"twice\":42",      "\"noreturn\":true",
                                         "\"same\":true", "\"fr\":\"France\"", "\"arg\":\"geo.eu\""};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        CHECK_CONTAINS(out.v[0].payload, fields[i]);
    }
    CHECK(strstr(out.v[0].payload, "package") == NULL); /* type(package) is nil: the key is absent */
    static const struct {
        const char *name, *error;
    } bad[] = {
        {"../secret", "require: invalid module name '../secret': empty part between dots"},
        {"/etc/passwd", "require: invalid module name '/etc/passwd': use letters, digits, '_' and '-'"},
        {"geo/eu", "invalid module name 'geo/eu'"},
        {"a..b", "empty part between dots"},
        {".hidden", "empty part between dots"},
        {"", "a module name is 1 to 128 characters"},
        {"ffi", "require: module 'ffi' not found: no file "},
        {"dir", "require: module 'dir' not found"},
        {"bytecode", "require: module 'bytecode': "},
        {"syntax", "syntax.lua:2: unexpected symbol near '='"},
        {"broken", "broken.lua:3: broken on purpose"},
        {"loop_a", "require: module 'loop_a' requires itself while loading (a loop)"},
        {"escape", "escape.lua:1: attempt to index global 'io' (a nil value)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[256];
        snprintf(json, sizeof(json), "{\"name\": \"%s\"}", bad[i].name);
        CHECK(run(f, json, NULL, &out, &err) == GUST_ECONFIG);
        CHECK_CONTAINS(err.msg, bad[i].error);
    }
    CHECK_CONTAINS(err.msg, "stack traceback"); /* errors in modules keep their traceback */
    /* Bytecode is refused as such, and a module that failed is tried again, not a loop. */
    CHECK(run(f, "{\"name\": \"bytecode\"}", NULL, &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "attempt to load chunk with wrong mode");
    CHECK(run(f, "{\"name\": \"broken\"}", NULL, &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "broken on purpose");
    CHECK(run(f, "{\"name\": \"loop_b\"}", NULL, &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "module 'loop_b' requires itself");
    CHECK(run(f, "{\"name\": 7}", NULL, &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "require: the module name must be a string, not a number");
    gust_emits_free(&out);
    gust_flow_destroy(f);

    /* At load: a module that fails fails the script, naming where. */
    CHECK(flow_from_text_opts("local b = require('broken')\nreturn { on_event = print }", opts, &f, &err) ==
          GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "broken.lua:3: broken on purpose");
    opts.lua_path = NULL;
    CHECK(flow_from_text_opts("require('util')\nreturn { on_event = print }", opts, &f, &err) ==
          GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "require: module 'util' not found: no lua_path is set");

    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", lib);
    CHECK(system(cmd) == 0);
}

struct logged {
    int level[8];
    char text[8][GUST_FLOW_LOG_MAX + 1];
    size_t len[8];
    int n;
};

static void on_log(void *ud, int level, const char *text, size_t len)
{
    struct logged *l = ud;
    if (l->n < 8) {
        l->level[l->n] = level;
        memcpy(l->text[l->n], text, len + 1);
        l->len[l->n++] = len;
    }
}

static void test_log(void)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    struct logged l = {0};
    struct gust_flow_opts opts = {.log = on_log, .log_ud = &l};
    const char *script = "log.warn('loading')\n"
                         "return { on_event = function(ev)\n"
                         "  if ev.long then log.info(string.rep('\\226\\130\\172', 400)) return end\n"
                         "  log.info('text', 1.5, 1e15, nil, true, {a = {1, 2}}, null, array({}))\n"
                         "  log.error('ctl\\n\\t\\1', '\\255bad', {f = print})\n"
                         "  print('printed', ev.n)\n"
                         "end }";
    CHECK(flow_from_text_opts(script, opts, &f, &err) == 0);
    CHECK(l.n == 1 && l.level[0] == GUST_LOG_WARN);
    CHECK_STR(l.text[0], "loading");
    CHECK(run(f, "{\"n\": 7}", NULL, &out, &err) == 0);
    CHECK(l.n == 4);
    CHECK(l.level[1] == GUST_LOG_INFO && l.level[2] == GUST_LOG_ERROR && l.level[3] == GUST_LOG_INFO);
    CHECK_STR(l.text[1], "text 1.5 1000000000000000 nil true {\"a\":[1,2]} null []");
    CHECK(strncmp(l.text[2], "ctl\\n\\t\\x01 \\xFFbad table: 0x", 28) == 0);
    CHECK_STR(l.text[3], "printed 7");
    CHECK(run(f, "{\"long\": true}", NULL, &out, &err) == 0);
    CHECK(l.n == 5 && l.len[4] <= GUST_FLOW_LOG_MAX);
    CHECK(l.len[4] == 1023); /* 340 whole euro signs (never half of one), then "..." */
    CHECK(strcmp(l.text[4] + l.len[4] - 3, "...") == 0);
    CHECK(gust_utf8_valid(l.text[4], l.len[4]));
    gust_flow_destroy(f);

    /* No callback: the lines go nowhere. */
    CHECK(flow_from_text("return { on_event = function(ev) log.info('x') print('y') end }", 0, &f, &err) ==
          0);
    CHECK(run(f, "{}", NULL, &out, &err) == 0);
    gust_emits_free(&out);
    gust_flow_destroy(f);
}

/* reply(): kept in a call (status 200 unless given), only for a run that succeeds;
 * outside a call a warning in the event's log and nothing kept; misuse raises. */
static void test_reply(void)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    struct logged l = {0};
    struct gust_flow_opts opts = {.log = on_log, .log_ud = &l};
    const char *script = "return { on_event = function(ev)\n"
                         "  if ev.status then reply({ n = ev.n }, ev.status) elseif ev.n then reply({ n = ev.n }) end\n"
                         "  if ev.twice then reply(1) end\n"
                         "  if ev.none then reply() end\n"
                         "  if ev.fail then error('after the reply') end\n"
                         "  if ev.str then reply('text') end\n"
                         "end }";
    CHECK(flow_from_text_opts(script, opts, &f, &err) == 0);
    struct gust_flow_meta call = {.seq = 1, .call = 1};
    int status = 0;
    const char *json = NULL;
    size_t len = 0;
    CHECK(run(f, "{\"n\": 21}", &call, &out, &err) == 0);
    CHECK(gust_flow_reply(f, &status, &json, &len) == 1);
    CHECK(status == 200 && len == 8 && memcmp(json, "{\"n\":21}", len) == 0);
    CHECK(run(f, "{\"n\": 1, \"status\": 201}", &call, &out, &err) == 0);
    CHECK(gust_flow_reply(f, &status, &json, &len) == 1 && status == 201);
    CHECK(run(f, "{\"str\": true}", &call, &out, &err) == 0);
    CHECK(gust_flow_reply(f, &status, &json, &len) == 1 && len == 6 && memcmp(json, "\"text\"", 6) == 0);
    /* No reply this time: nothing kept from the last run. */
    CHECK(run(f, "{}", &call, &out, &err) == 0);
    CHECK(gust_flow_reply(f, &status, &json, &len) == 0);
    /* A run that fails after its reply answers nothing. */
    CHECK(run(f, "{\"n\": 2, \"fail\": true}", &call, &out, &err) == GUST_ECONFIG);
    CHECK(gust_flow_reply(f, &status, &json, &len) == 0);
    CHECK(run(f, "{\"n\": 2, \"twice\": true}", &call, &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "replied to already");
    CHECK(run(f, "{\"none\": true}", &call, &out, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "a value is needed");
    const char *bad[] = {"{\"n\": 1, \"status\": 99}", "{\"n\": 1, \"status\": 600}",
                         "{\"n\": 1, \"status\": 200.5}"};
    for (size_t i = 0; i < 3; i++) {
        CHECK(run(f, bad[i], &call, &out, &err) == GUST_ECONFIG);
        CHECK_CONTAINS(err.msg, "status must be an integer from 200 to 599");
    }
    /* Outside a call: said in the event's log, nothing kept. */
    CHECK(l.n == 0);
    CHECK(run(f, "{\"n\": 3}", NULL, &out, &err) == 0);
    CHECK(gust_flow_reply(f, &status, &json, &len) == 0);
    CHECK(l.n == 1 && l.level[0] == GUST_LOG_WARN);
    CHECK_CONTAINS(l.text[0], "reply: not a call");
    gust_emits_free(&out);
    gust_flow_destroy(f);
}

/* Every function a script can reach from its globals, and that none reads a clock:
 * the list is exact, so a library opened later has to be looked at and added here. */
static void test_reachable(void)
{
    struct gust_flow *f;
    struct gust_err err;
    struct gust_emits out = {0};
    const char *script = "local seen, names = {}, {}\n"
                         "local function walk(t, prefix)\n"
                         "  for k, v in pairs(t) do\n"
                         "    if type(k) == 'string' then\n"
                         "      if type(v) == 'function' then names[#names + 1] = prefix .. k\n"
                         "      elseif type(v) == 'table' and not seen[v] then seen[v] = true walk(v, prefix "
                         ".. k .. '.') end\n"
                         "    end\n"
                         "  end\n"
                         "end\n"
                         "return { on_event = function(ev)\n"
                         "  seen[_G] = true walk(_G, '') table.sort(names)\n"
                         "  emit('ev.names', { names = table.concat(names, ' ') })\n"
                         "end }";
    CHECK(flow_from_text(script, 0, &f, &err) == 0);
    CHECK(run(f, "{}", NULL, &out, &err) == 0);
    CHECK_STR(
        out.v[0].payload,
        "{\"names\":\"array assert bit.arshift bit.band bit.bnot bit.bor bit.bswap bit.bxor bit.lshift "
        "bit.rol bit.ror bit.rshift bit.tobit bit.tohex collectgarbage coroutine.create "
        "coroutine.isyieldable "
        "coroutine.resume coroutine.running coroutine.status coroutine.wrap coroutine.yield emit error "
        "gcinfo "
        "getfenv getmetatable ipairs json.array json.decode json.encode load loadstring log.error log.info "
        "log.warn math.abs math.acos math.asin math.atan math.atan2 math.ceil math.cos math.cosh math.deg "
        "math.exp math.floor math.fmod math.frexp math.ldexp math.log math.log10 math.max math.min math.modf "
        "math.pow math.rad math.random math.randomseed math.sin math.sinh math.sqrt math.tan math.tanh next "
        "pairs pcall print rawequal rawget rawset reply require secret select setfenv setmetatable state.del "
        "state.get state.incr state.set string.byte string.char string.find string.format string.gmatch string.gsub "
        "string.len string.lower string.match string.rep string.reverse string.sub string.upper table.concat "
        "table.foreach table.foreachi table.getn table.insert table.maxn table.move table.remove table.sort "
        "tonumber "
        "tostring type unpack xpcall\"}");
    gust_emits_free(&out);
    gust_flow_destroy(f);
}

int main(void)
{
    test_rfc3339();
    test_meta();
    test_emit_headers();
    test_require();
    test_log();
    test_reply();
    test_reachable();
    return check_result("test_api");
}
