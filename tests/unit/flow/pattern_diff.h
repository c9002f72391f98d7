/* Runs one string-library call in two Lua states, LuaJIT's own string library and a
 * flow's (Gust's matcher, flow_pattern.c), and compares what they give: the values
 * (type and text of each) or the error message. Shared by test_pattern.c (a corpus)
 * and tests/fuzz/fuzz_pattern.c (random patterns). */
#ifndef GUST_TEST_PATTERN_DIFF_H
#define GUST_TEST_PATTERN_DIFF_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "flow.h"
#include "flow_int.h"

/* op(s, p, a) in a protected call; the results, each as "type:text", joined by "\1".
 * gsub's a chooses the replacement: "f" a function of the captures, "t" a table,
 * anything else the replacement string a (with its "%"s). gmatch gives up to 50
 * rounds of its first three values. */
static const char pd_harness[] =
    "local op, s, p, a, n = ...\n"
    "local function show(...)\n"
    "  local out = {}\n"
    "  for i = 1, select('#', ...) do local v = select(i, ...); out[i] = type(v) .. ':' .. tostring(v) end\n"
    "  return table.concat(out, '\\1')\n"
    "end\n"
    "local function call()\n"
    "  if op == 'gmatch' then\n"
    "    local out, k = {}, 0\n"
    "    for x, y, z in string.gmatch(s, p) do\n"
    "      k = k + 1; out[k] = show(x, y, z); if k >= 50 then break end\n"
    "    end\n"
    "    return table.concat(out, '\\2')\n"
    "  elseif op == 'gsub' then\n"
    "    local r = a\n"
    "    if a == 'f' then r = function(...) return (select('#', ...) % 2 == 0) and show(...) or nil end\n"
    "    elseif a == 't' then r = setmetatable({}, {__index = function(_, k) return #tostring(k) % 2 == 0 "
    "and 'T' or false end})\n"
    "    end\n"
    "    return string.gsub(s, p, r, n)\n"
    "  elseif op == 'find_plain' then\n"
    "    return string.find(s, p, n, true)\n"
    "  end\n"
    "  return string[op](s, p, n)\n"
    "end\n"
    "return show(pcall(call))\n";

struct pattern_diff {
    lua_State *ref;        /* LuaJIT's string library */
    struct gust_flow *own; /* a flow: its state has the matcher */
    int ref_fn, own_fn;
    char got_ref[4096], got_own[4096];
};

static int pd_load(lua_State *L)
{
    if (luaL_loadbuffer(L, pd_harness, sizeof(pd_harness) - 1, "=harness") != 0) {
        fprintf(stderr, "harness: %s\n", lua_tostring(L, -1));
        return LUA_NOREF;
    }
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

static int pd_open(struct pattern_diff *d)
{
    memset(d, 0, sizeof(*d));
    d->ref = luaL_newstate();
    luaL_openlibs(d->ref);
    static const char script[] = "return { on_event = function() end }";
    struct gust_flow_opts o = {
        .script_path = "pattern.lua", .script_text = script, .script_len = sizeof(script) - 1};
    struct gust_err err = {{0}};
    if (d->ref == NULL || gust_flow_create(&o, &d->own, &err) != 0) {
        fprintf(stderr, "pattern_diff: %s\n", err.msg);
        return -1;
    }
    /* The matcher checks the deadline: none here. */
    d->own->deadline_ns = UINT64_MAX;
    d->ref_fn = pd_load(d->ref);
    d->own_fn = pd_load(d->own->L);
    return d->ref_fn == LUA_NOREF || d->own_fn == LUA_NOREF ? -1 : 0;
}

static void pd_close(struct pattern_diff *d)
{
    gust_flow_destroy(d->own);
    lua_close(d->ref);
}

static void pd_call(lua_State *L, int fn, const char *op, const char *s, size_t slen, const char *p,
                    size_t plen, const char *a, size_t alen, int n, char *out, size_t size)
{
    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, fn);
    lua_pushstring(L, op);
    lua_pushlstring(L, s, slen);
    lua_pushlstring(L, p, plen);
    lua_pushlstring(L, a, alen);
    if (n == INT32_MIN) {
        lua_pushnil(L);
    } else {
        lua_pushinteger(L, n);
    }
    if (lua_pcall(L, 5, 1, 0) != 0) {
        snprintf(out, size, "harness error: %s", lua_tostring(L, -1));
    } else {
        size_t len;
        const char *r = lua_tolstring(L, -1, &len);
        if (len >= size) {
            len = size - 1;
        }
        memcpy(out, r, len);
        out[len] = '\0';
        /* Make embedded NULs visible in the report. */
        for (size_t i = 0; i < len; i++) {
            out[i] = out[i] == '\0' ? '@' : out[i];
        }
    }
    lua_settop(L, 0);
}

/* Returns 1 when both states give the same. n: the third argument (init, or gsub's
 * max), INT32_MIN for none. */
static int pd_same(struct pattern_diff *d, const char *op, const char *s, size_t slen, const char *p,
                   size_t plen, const char *a, size_t alen, int n)
{
    pd_call(d->ref, d->ref_fn, op, s, slen, p, plen, a, alen, n, d->got_ref, sizeof(d->got_ref));
    pd_call(d->own->L, d->own_fn, op, s, slen, p, plen, a, alen, n, d->got_own, sizeof(d->got_own));
    return strcmp(d->got_ref, d->got_own) == 0;
}

#endif
