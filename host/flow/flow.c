/* The flow runtime: a LuaJIT state per flow, its globals (emit, null, array, json;
 * meta, state, require, tables and log come from their own files), one event per
 * gust_flow_run, and the time limit. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <luajit.h>

#include "flow.h"
#include "flow_int.h"
#include "tables.h"

/* The time limit is a count hook, so the JIT compiler is off: LuaJIT never runs
 * hooks inside compiled traces (Debian's build lacks LUAJIT_ENABLE_CHECKHOOK), and
 * `while true do end` compiles at once and would then run forever.
 *
 * Measured on the orders flow (bench-flow; instructions per event under callgrind,
 * since wall time on the shared 2-core machine varied by +-15% between runs):
 * JIT on, no hook 53.3k; JIT off, no hook 53.2k; JIT off with this hook 55.9k
 * (HOOK_COUNT 10000: 55.8k). Decoding, encoding and the C API calls dominate; the
 * script's own glue gains nothing from traces. So the JIT buys nothing here and the
 * limit costs 5%. Wall-clock rates of the same three builds (best of five) agreed
 * within that noise: 213k, 217k, 223k events per CPU second (hook, no hook, JIT).
 *
 * The hook runs every HOOK_COUNT VM instructions (a few microseconds) and reads the
 * clock. A C call never returns to it while it runs, so those that could run long
 * have bounds of their own: the pattern functions look at the clock as they go
 * (flow_pattern.c), what one call may build is bounded (flow_caps.c, the JSON
 * encoder), table.sort compares through Lua, and past the deadline the allocator
 * refuses large blocks (flow_alloc.c). */
#define HOOK_COUNT 1000
#define DEFAULT_TIMEOUT_MS 1000

/* The hook finds its flow under this key in the registry. */
static const char flow_key;

static void arm_deadline(struct gust_flow *f)
{
    f->deadline_ns = gust_clock_mono_ns() + (uint64_t)f->timeout_ms * 1000000u;
    f->alloc.deadline_ns = f->deadline_ns;
}

static void on_hook(lua_State *L, lua_Debug *ar);

/* Raises the timeout, naming the line running at `level` (0 from the hook, 1 from a C
 * function the script called). */
static void raise_timeout(lua_State *L, struct gust_flow *f, int level)
{
    /* From now on fail at every instruction, so a pcall in the script cannot swallow
     * the timeout and carry on: the error reaches on_event's caller. */
    if (!f->timed_out) {
        f->timed_out = 1;
        lua_sethook(L, on_hook, LUA_MASKCOUNT, 1);
    }
    lua_Debug ar;
    if (lua_getstack(L, level, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
        lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
    } else {
        lua_pushliteral(L, "");
    }
    lua_pushfstring(L, "timeout: the script ran longer than %d ms", (int)f->timeout_ms);
    lua_concat(L, 2);
    lua_error(L);
}

static void on_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_pushlightuserdata(L, (void *)&flow_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    struct gust_flow *f = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (!f->timed_out && gust_clock_mono_ns() < f->deadline_ns) {
        return;
    }
    raise_timeout(L, f, 0);
}

void gust_flow_check_deadline(lua_State *L, struct gust_flow *f)
{
    if (f->timed_out || gust_clock_mono_ns() >= f->deadline_ns) {
        raise_timeout(L, f, 1);
    }
}

size_t gust_flow_build_max(const struct gust_flow *f)
{
    return f->build_max;
}

/* The JSON encoder's periodic look at the clock. */
static void encoder_check(lua_State *L, void *ud)
{
    gust_flow_check_deadline(L, ud);
}

static void reset_hook(struct gust_flow *f)
{
    if (f->timed_out) {
        f->timed_out = 0;
        lua_sethook(f->L, on_hook, LUA_MASKCOUNT, HOOK_COUNT);
    }
}

/* Message handler of every protected call into the script: the error with its
 * traceback, while the failing stack is still there to walk. */
static int add_traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* A NATS subject without wildcards: non-empty tokens separated by '.', no spaces
 * or control characters. Returns why `s` is not one, or NULL. */
static const char *subject_problem(const char *s, size_t len)
{
    size_t token = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.') {
            if (token == 0) {
                return "empty token";
            }
            token = 0;
        } else if (c == '*' || c == '>') {
            return "wildcards are not allowed";
        } else if (c <= ' ' || c == 0x7f) {
            return "spaces and control characters are not allowed";
        } else {
            token++;
        }
    }
    return token == 0 ? "empty token" : NULL;
}

/* emit(subject, table [, options]); upvalue 1: the flow. */
static int l_emit(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(1));
    size_t slen;
    const char *subject = luaL_checklstring(L, 1, &slen);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (f->out == NULL) {
        return luaL_error(L, "emit: only on_event can emit");
    }
    const char *why = subject_problem(subject, slen);
    if (why != NULL) {
        return luaL_error(L, "emit: invalid subject '%s': %s", subject, why);
    }
    size_t nheaders = gust_flow_emit_options(L, 3, &f->headers);
    /* Straight into the arena the bus publishes from; an error out of the encoder
     * leaves the emit open, and the arena drops it (gust_flow_run aborts it). */
    gust_json_encode_into(L, 2, &f->enc, gust_emits_begin(f->out));
    if (gust_emits_end(f->out, subject, (const struct gust_header *)(void *)f->headers.data, nheaders) != 0) {
        return luaL_error(L, "emit: not enough memory");
    }
    return 0;
}

/* array(t): tags t as a JSON array; upvalue 1: the array metatable. */
static int l_array(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_setmetatable(L, 1);
    return 1;
}

/* json.encode(v); upvalue 1: the flow. */
static int l_json_encode(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(1));
    luaL_checkany(L, 1);
    f->enc.buf.len = 0;
    gust_json_encode(L, 1, &f->enc);
    lua_pushlstring(L, f->enc.buf.data, f->enc.buf.len);
    return 1;
}

/* json.decode(s) -> value, or nil and a message; upvalues: the tags, then the flow. */
static int l_json_decode(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(4));
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    if (gust_json_decode(&f->dec, s, len, 0) != 0) {
        lua_settop(L, 1);
        lua_pushnil(L);
        lua_pushstring(L, f->dec.msg);
        return 2;
    }
    return 1;
}

/* The event decoder, called protected by gust_flow_run: the event table (then, for an
 * on_event that takes meta, what its wrapper builds meta from), or nothing when the
 * input is not one JSON object (f->dec.msg says why). */
static int decode_event(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(4));
    if (gust_json_decode(&f->dec, f->in, f->in_len, 1) != 0) {
        return 0;
    }
    return f->wants_meta ? 1 + gust_flow_push_meta(L, f->in_meta) : 1;
}

void gust_flow_push_decoder(lua_State *L, struct gust_flow *f, lua_CFunction fn, int mt_base)
{
    for (int i = 0; i < 3; i++) {
        lua_pushvalue(L, mt_base + i);
    }
    lua_pushlightuserdata(L, f);
    lua_pushcclosure(L, fn, 4);
}

/* The last line holding code in the chunk at idx: where its final return is, the
 * place to point at when the returned value is wrong. */
static int last_code_line(lua_State *L, int idx)
{
    lua_Debug ar;
    int last = 0;
    lua_pushvalue(L, idx);
    lua_getinfo(L, ">L", &ar); /* pushes a table whose keys are the lines with code */
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
        lua_pop(L, 1);
        if (lua_tonumber(L, -1) > last) {
            last = (int)lua_tonumber(L, -1);
        }
    }
    lua_pop(L, 1);
    return last;
}

/* Builds the script's world, then loads and runs the script; called protected, its
 * error message is the one gust_flow_create reports. */
static int setup(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, 1);
    lua_settop(L, 0);
    f->loaded = 0;
    gust_flow_open_sandbox(L);
    gust_flow_open_patterns(L, f);
    gust_flow_open_caps(L, f);

    lua_pushlightuserdata(L, (void *)&flow_key);
    lua_pushlightuserdata(L, f);
    lua_rawset(L, LUA_REGISTRYINDEX);

    /* Tags at 1, 2, 3: array, object, bignum (the order of GUST_UV_*). */
    lua_newtable(L);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushcfunction(L, gust_json_lua_bignum_tostring);
    lua_setfield(L, 3, "__tostring");
    lua_pushcfunction(L, gust_json_lua_bignum_eq);
    lua_setfield(L, 3, "__eq");
    lua_pushcfunction(L, gust_json_lua_bignum_concat);
    lua_setfield(L, 3, "__concat");
    lua_pushboolean(L, 0); /* getmetatable() hides it, so the script cannot call those */
    lua_setfield(L, 3, "__metatable");
    f->enc.tags = (struct gust_json_tags){
        .array = lua_topointer(L, 1),
        .object = lua_topointer(L, 2),
        .bignum = lua_topointer(L, 3),
    };

    lua_pushlightuserdata(L, NULL);
    lua_setglobal(L, "null");
    lua_pushvalue(L, 1);
    lua_pushcclosure(L, l_array, 1);
    lua_setglobal(L, "array");
    lua_pushlightuserdata(L, f);
    lua_pushcclosure(L, l_emit, 1);
    lua_setglobal(L, "emit");
    lua_newtable(L);
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    lua_getglobal(L, "array");
    lua_setfield(L, -2, "array");
    lua_pushlightuserdata(L, f);
    lua_pushcclosure(L, l_json_encode, 1);
    lua_setfield(L, -2, "encode");
    gust_flow_push_decoder(L, f, l_json_decode, 1);
    lua_setfield(L, -2, "decode");
    lua_setglobal(L, "json");
    gust_flow_open_state(L, f);
    gust_flow_open_require(L, f);
    gust_flow_open_tables(L, f);
    gust_flow_open_log(L, f);
    gust_flow_open_reply(L, f);
    gust_flow_open_secret(L, f);

    gust_flow_push_decoder(L, f, decode_event, 1);
    f->ref_decode_event = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushcfunction(L, add_traceback);
    f->ref_traceback = luaL_ref(L, LUA_REGISTRYINDEX);

    /* Text only, like load(): a precompiled script would skip the bytecode check. */
    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref_traceback);
    lua_pushfstring(L, "@%s", f->path);
    int loaded = luaL_loadbufferx(L, f->text, f->text_len, lua_tostring(L, -1), "t");
    lua_remove(L, -2);
    if (loaded != 0) {
        /* Syntax errors start with the path already, a refused bytecode file not. */
        const char *msg = lua_tostring(L, -1);
        if (strstr(msg, f->path) == NULL) {
            lua_pushfstring(L, "%s: %s", f->path, msg);
        }
        return lua_error(L);
    }
    int last_line = last_code_line(L, 2);
    arm_deadline(f);
    if (lua_pcall(L, 0, 1, 1) != 0) {
        return lua_error(L);
    }
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "on_event");
    }
    if (!lua_istable(L, 2) || !lua_isfunction(L, -1)) {
        return luaL_error(L, "%s:%d: the script must return a table with an on_event function", f->path,
                          last_line);
    }
    f->wants_meta = gust_flow_wants_meta(L, -1);
    if (f->wants_meta) {
        gust_flow_wrap_on_event(L);
    }
    f->ref_on_event = luaL_ref(L, LUA_REGISTRYINDEX);
    f->loaded = 1;
    lua_getfield(L, 2, "source");
    if (!lua_isnil(L, -1) && f->source == NULL) { /* a rebuild runs the same script */
        if (lua_type(L, -1) != LUA_TSTRING) {
            return luaL_error(L, "%s:%d: the field source must be a string", f->path, last_line);
        }
        f->source = strdup(lua_tostring(L, -1));
        if (f->source == NULL) {
            return luaL_error(L, "not enough memory");
        }
    }
    return 0;
}

/* The script's text: given, or read from its file (kept, for rebuilds). */
static int read_script(struct gust_flow *f, const struct gust_flow_opts *opts, struct gust_err *err)
{
    if (opts->script_text != NULL) {
        f->text = malloc(opts->script_len + 1);
        if (f->text == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "flow: not enough memory");
        }
        memcpy(f->text, opts->script_text, opts->script_len);
        f->text[opts->script_len] = '\0';
        f->text_len = opts->script_len;
        return 0;
    }
    FILE *fp = fopen(opts->script_path, "rb");
    if (fp == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "cannot open %s: %s", opts->script_path, strerror(errno));
    }
    struct gust_buf b = {0};
    char chunk[8192];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
        if (gust_buf_append(&b, chunk, n) != 0) {
            rc = gust_err_set(err, GUST_ENOMEM, "flow: not enough memory");
            break;
        }
    }
    if (rc == 0 && ferror(fp)) {
        rc = gust_err_set(err, GUST_ECONFIG, "cannot read %s: %s", opts->script_path, strerror(errno));
    }
    fclose(fp);
    if (rc == 0 && gust_buf_append(&b, "", 1) != 0) {
        rc = gust_err_set(err, GUST_ENOMEM, "flow: not enough memory");
    }
    if (rc != 0) {
        gust_buf_free(&b);
        return rc;
    }
    f->text = b.data;
    f->text_len = b.len - 1;
    return 0;
}

static int on_panic(lua_State *L)
{
    fprintf(stderr, "flow: unprotected Lua error: %s\n", lua_tostring(L, -1));
    abort();
}

/* A new Lua state for the flow, its script loaded and run. Returns 0, or fails as
 * gust_flow_create says (f->L then NULL). */
static int build_state(struct gust_flow *f, struct gust_err *err)
{
    f->alloc.used = 0;
    f->alloc.refused = f->alloc.late = 0;
    f->timed_out = 0;
    f->modules_loading = 0;
    /* LuaJIT's lua_newstate does not survive a refusal of its first blocks: the bound
     * applies from the first allocation after them. */
    size_t max = f->alloc.max;
    f->alloc.max = 0;
    f->L = lua_newstate(gust_flow_alloc, &f->alloc);
    f->alloc.max = max;
    if (f->L == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "flow: not enough memory for a Lua state");
    }
    lua_atpanic(f->L, on_panic);
    f->dec.L = f->L;
    f->dec.reusable = 0;
    luaJIT_setmode(f->L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    lua_sethook(f->L, on_hook, LUA_MASKCOUNT, HOOK_COUNT);

    int status = lua_cpcall(f->L, setup, f);
    f->alloc.deadline_ns = 0;
    if (status != 0) {
        const char *msg = lua_tostring(f->L, -1);
        int rc;
        if (f->alloc.refused > 0) {
            rc = gust_err_set(err, GUST_ENOMEM,
                              "%s: loading the script took the Lua heap over memory_max (%zu bytes)", f->path,
                              f->alloc.max);
        } else {
            rc = gust_err_set(err, status == LUA_ERRMEM ? GUST_ENOMEM : GUST_ECONFIG, "%s",
                              msg != NULL ? msg : "flow: loading the script failed");
        }
        lua_close(f->L);
        f->L = NULL;
        return rc;
    }
    reset_hook(f);
    lua_settop(f->L, 0);
    return 0;
}

int gust_flow_create(const struct gust_flow_opts *opts, struct gust_flow **out, struct gust_err *err)
{
    int rc;
    *out = NULL;
    struct gust_flow *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "flow: not enough memory");
    }
    f->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
    f->alloc.max = opts->memory_max;
    f->build_max = opts->memory_max > 0 && opts->memory_max < GUST_FLOW_BUILD_MAX ? opts->memory_max
                                                                                  : GUST_FLOW_BUILD_MAX;
    f->enc.max = f->build_max;
    f->enc.check = encoder_check;
    f->enc.check_ud = f;
    f->path = strdup(opts->script_path);
    f->lua_path = opts->lua_path != NULL ? strdup(opts->lua_path) : NULL;
    f->tables = gust_tables_ref(opts->tables);
    if (opts->state != NULL) {
        f->state.store = *opts->state;
        f->state.has_store = 1;
    }
    f->log = opts->log;
    f->log_ud = opts->log_ud;
    f->enc.c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (f->path == NULL || (opts->lua_path != NULL && f->lua_path == NULL) ||
        f->enc.c_locale == (locale_t)0) {
        rc = gust_err_set(err, GUST_ENOMEM, "flow: not enough memory");
        goto fail;
    }
    f->dec.c_locale = f->enc.c_locale;
    if ((rc = read_script(f, opts, err)) != 0 || (rc = build_state(f, err)) != 0) {
        goto fail;
    }
    *out = f;
    return 0;

fail:
    gust_flow_destroy(f);
    return rc;
}

/* After a run that went over memory_max: a new state, so that what the old one holds
 * (and the allocator's pages) goes back to the system. */
static void rebuild(struct gust_flow *f)
{
    lua_close(f->L);
    f->L = NULL;
    malloc_trim(0);
    struct gust_err err = {{0}};
    free(f->rebuild_error);
    f->rebuild_error = NULL;
    if (build_state(f, &err) != 0) {
        f->rebuild_error = strdup(err.msg);
    }
}

void gust_flow_collect(struct gust_flow *f)
{
    if (f->L != NULL) {
        lua_gc(f->L, LUA_GCCOLLECT, 0);
    }
}

size_t gust_flow_heap_bytes(const struct gust_flow *f)
{
    return f->alloc.used;
}

uint64_t gust_flow_memory_failures(const struct gust_flow *f)
{
    return f->memory_failures;
}

int gust_flow_uses_meta(const struct gust_flow *f)
{
    return f->wants_meta;
}

const char *gust_flow_source(const struct gust_flow *f)
{
    return f->source;
}

int gust_flow_run(struct gust_flow *f, const char *json, size_t len, const struct gust_flow_meta *meta,
                  struct gust_emits *out, struct gust_err *err)
{
    if (f->L == NULL) {
        rebuild(f);
        if (f->L == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "flow: its Lua state could not be rebuilt: %s",
                                f->rebuild_error != NULL ? f->rebuild_error : "not enough memory");
        }
    }
    lua_State *L = f->L;
    size_t first_emit = out->n;
    int rc = 0;
    f->replied = 0;
    uint64_t refused = f->alloc.refused, late = f->alloc.late;
    gust_flow_state_run_begin(&f->state, meta != NULL ? meta->time_ms : 0, meta != NULL ? meta->seq : 0);
    gust_flow_modules_reset(L, f);

    lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref_traceback); /* 1 */
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref_decode_event);
    f->in = json;
    f->in_len = len;
    f->in_meta = meta;
    arm_deadline(f);
    int status = lua_pcall(L, 0, LUA_MULTRET, 0);
    f->in = NULL;
    f->in_meta = NULL;
    if (status != 0) {
        rc = gust_err_set(err, GUST_ENOMEM, "flow: not enough memory to decode the event");
        goto done;
    }
    if (lua_gettop(L) < 2) {
        rc = gust_err_set(err, GUST_EINVAL, "%s", f->dec.msg);
        goto done;
    }
    /* Stack: 1 the traceback handler, 2 the event, 3... meta's pieces. */
    int nargs = lua_gettop(L) - 1;
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref_on_event);
    lua_insert(L, 2);
    f->out = out;
    f->in_call = meta != NULL && meta->call;
    arm_deadline(f);
    status = lua_pcall(L, nargs, 0, 1);
    f->out = NULL;
    f->in_call = 0;
    /* An emit the script caught failing (pcall) left its bytes open in the arena. */
    gust_emits_abort(out);
    if (status != 0) {
        const char *msg = lua_tostring(L, -1);
        int timed_out = f->timed_out || f->alloc.late != late;
        int code = timed_out ? GUST_ETIMEOUT : status == LUA_ERRMEM ? GUST_ENOMEM : GUST_ECONFIG;
        if (timed_out && !f->timed_out) {
            rc = gust_err_set(err, code, "timeout: the script ran longer than %d ms", (int)f->timeout_ms);
        } else {
            rc = gust_err_set(err, code, "%s", msg != NULL ? msg : "the script failed");
        }
        gust_emits_truncate(out, first_emit);
        f->replied = 0; /* a failed event answers nothing */
        reset_hook(f);
    }
done:
    f->alloc.deadline_ns = 0;
    gust_flow_state_run_end(&f->state, rc == 0);
    lua_settop(L, 0);
    if (rc != 0 && rc != GUST_ETIMEOUT && f->alloc.refused != refused) {
        /* What the script built before the bound stays in its tables: start afresh. */
        f->memory_failures++;
        rc = gust_err_set(
            err, GUST_ENOMEM,
            "memory: the run took the flow's Lua heap over memory_max (%zu bytes); its Lua state "
            "was rebuilt",
            f->alloc.max);
        rebuild(f);
    }
    return rc;
}

void gust_flow_destroy(struct gust_flow *f)
{
    if (f == NULL) {
        return;
    }
    if (f->L != NULL) {
        lua_close(f->L);
    }
    free(f->text);
    free(f->rebuild_error);
    gust_json_dec_release(&f->dec);
    gust_buf_free(&f->enc.buf);
    gust_buf_free(&f->line);
    gust_buf_free(&f->line_out);
    gust_buf_free(&f->headers);
    gust_buf_free(&f->reply);
    gust_flow_state_free(&f->state);
    gust_tables_unref(f->tables);
    free(f->lua_path);
    if (f->enc.c_locale != (locale_t)0) {
        freelocale(f->enc.c_locale);
    }
    free(f->source);
    free(f->path);
    free(f);
}
