/* on_event's second argument: what the caller knows of the message (flow.h).
 *
 * A fresh plain table per event, so a script may keep it or change it. It costs a
 * table, its strings and the RFC 3339 text (4k instructions an event on the orders
 * event, a tenth of decoding and encoding it), so it is built only for an on_event
 * that takes it: one declared with a second parameter, or with `...`. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "flow_int.h"
#include "gust/sdk.h"

int gust_flow_wants_meta(lua_State *L, int idx)
{
    if (lua_iscfunction(L, idx)) {
        return 1;
    }
    int top = lua_gettop(L);
    lua_pushvalue(L, idx);
    lua_pushcfunction(L, luaopen_debug);
    lua_pushstring(L, LUA_DBLIBNAME);
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "getinfo");
    lua_pushvalue(L, top + 1);
    lua_pushliteral(L, "u");
    lua_call(L, 2, 1);
    lua_getfield(L, -1, "nparams");
    lua_getfield(L, -2, "isvararg");
    int wants = lua_tonumber(L, -2) >= 2 || lua_toboolean(L, -1);
    lua_settop(L, top);
    /* Nothing of the debug library stays reachable. */
    lua_pushnil(L);
    lua_setglobal(L, LUA_DBLIBNAME);
    lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
    if (lua_istable(L, -1)) {
        lua_pushnil(L);
        lua_setfield(L, -2, LUA_DBLIBNAME);
    }
    lua_settop(L, top);
    return wants;
}

/* The headers as a table, or nil when there are none (the wrapper makes {} then). */
static void push_headers(lua_State *L, const struct gust_flow_meta *m)
{
    if (m == NULL || m->nheaders == 0) {
        lua_pushnil(L);
        return;
    }
    lua_createtable(L, 0, (int)m->nheaders);
    int t = lua_gettop(L);
    for (size_t i = 0; i < m->nheaders; i++) {
        const struct gust_header *h = &m->headers[i];
        lua_pushstring(L, h->name);
        lua_pushvalue(L, -1);
        lua_rawget(L, t);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_pushstring(L, h->value);
        } else { /* repeated: the values in order, as an HTTP field list */
            lua_pushliteral(L, ", ");
            lua_pushstring(L, h->value);
            lua_concat(L, 3);
        }
        lua_rawset(L, t);
    }
}

/* on_event behind a wrapper that builds meta from plain arguments. A table
 * constructor with constant keys is a template the VM copies with its keys in place;
 * building the same table with the C API (seven rawsets) cost twice as much. */
/* meta.headers keeps the names as the message carries them (a webhook's as the client
 * sent them), and a name looked up in another case finds them too: HTTP names have no
 * case, and a proxy (or HTTP/2) may lowercase them. The metatable costs a lookup only
 * when the exact name misses, and cannot be read or replaced by the script. */
static const char wrapper[] =
    "local on_event = ...\n"
    "local setmetatable, next, type, lower = setmetatable, next, type, string.lower\n"
    "local any_case = { __metatable = false, __index = function(t, k)\n"
    "  if type(k) ~= 'string' then return nil end\n"
    "  k = lower(k)\n"
    "  for n, v in next, t do\n"
    "    if lower(n) == k then return v end\n"
    "  end\n"
    "end }\n"
    "return function(ev, subject, seq, time, time_rfc3339, attempt, unit, headers)\n"
    "  return on_event(ev, {subject = subject, seq = seq, time = time,\n"
    "    time_rfc3339 = time_rfc3339, attempt = attempt, unit = unit,\n"
    "    headers = headers and setmetatable(headers, any_case) or {}})\n"
    "end\n";

void gust_flow_wrap_on_event(lua_State *L)
{
    if (luaL_loadbuffer(L, wrapper, sizeof(wrapper) - 1, "=meta") != 0) {
        lua_error(L);
    }
    lua_insert(L, -2);
    lua_call(L, 1, 1);
}

int gust_flow_push_meta(lua_State *L, const struct gust_flow_meta *m)
{
    if (m == NULL) {
        for (int i = 0; i < 7; i++) {
            lua_pushnil(L);
        }
        return 7;
    }
    if (m->subject != NULL) {
        lua_pushstring(L, m->subject);
    } else {
        lua_pushnil(L);
    }
    if (m->seq != 0) {
        lua_pushnumber(L, (lua_Number)m->seq);
    } else {
        lua_pushnil(L);
    }
    if (m->time_ms != 0) {
        char text[GUST_RFC3339_SIZE];
        size_t len = gust_rfc3339_ms(m->time_ms, text);
        lua_pushnumber(L, (lua_Number)m->time_ms);
        lua_pushlstring(L, text, len);
    } else {
        lua_pushnil(L);
        lua_pushnil(L);
    }
    if (m->attempt != 0) {
        lua_pushnumber(L, (lua_Number)m->attempt);
    } else {
        lua_pushnil(L);
    }
    if (m->unit != NULL) {
        lua_pushstring(L, m->unit);
    } else {
        lua_pushnil(L);
    }
    push_headers(L, m);
    return 7;
}
