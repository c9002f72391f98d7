/* Bounds on what one call of the string and table libraries may do inside a flow: a
 * single C call runs to its end whatever the time limit says, so string.rep and
 * table.concat may not build more than the flow's build limit, table.sort compares
 * through Lua (where the count hook sees it, even with a C comparator or none), and
 * collectgarbage cannot stop the collector or change its pace. */
#include <stdint.h>

#include <lauxlib.h>
#include <lualib.h>

#include "flow_int.h"

static void over(lua_State *L, const char *what, size_t max)
{
    luaL_error(L, "%s: the result would be over %lu bytes", what, (unsigned long)max);
}

/* string.rep(s, n [, sep]); upvalues: the flow, LuaJIT's string.rep. */
static int l_rep(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(1));
    size_t len, seplen = 0;
    luaL_checklstring(L, 1, &len);
    lua_Number n = luaL_checknumber(L, 2);
    if (!lua_isnoneornil(L, 3)) {
        luaL_checklstring(L, 3, &seplen);
    }
    if (n >= 1) {
        double total = (double)len * n + (double)seplen * (n - 1);
        if (total > (double)gust_flow_build_max(f)) {
            over(L, "string.rep", gust_flow_build_max(f));
        }
        if (total == 0) {
            lua_pushliteral(L, ""); /* LuaJIT would loop n times for nothing */
            return 1;
        }
    }
    int top = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    lua_call(L, top, LUA_MULTRET);
    return lua_gettop(L);
}

/* table.concat(t [, sep [, i [, j]]]); upvalues: the flow, LuaJIT's table.concat. The
 * pieces are measured first; anything unusual (a hole, a table in it) is left to
 * LuaJIT's own, for its error. */
static int l_concat(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(1));
    luaL_checktype(L, 1, LUA_TTABLE);
    size_t seplen = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checklstring(L, 2, &seplen);
    }
    int64_t i = luaL_optint(L, 3, 1);
    int64_t j = lua_isnoneornil(L, 4) ? (int64_t)lua_objlen(L, 1) : (int64_t)luaL_checkint(L, 4);
    double total = 0, max = (double)gust_flow_build_max(f);
    for (int64_t k = i; k <= j; k++) {
        lua_rawgeti(L, 1, (int)k);
        int t = lua_type(L, -1);
        if (t != LUA_TSTRING && t != LUA_TNUMBER) {
            lua_pop(L, 1);
            break;
        }
        total += (double)lua_objlen(L, -1) + (k < j ? (double)seplen : 0);
        lua_pop(L, 1);
        if (total > max) {
            over(L, "table.concat", gust_flow_build_max(f));
        }
    }
    int top = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    lua_call(L, top, LUA_MULTRET);
    return lua_gettop(L);
}

/* collectgarbage([opt [, arg]]) with "collect" (the default), "count" and "step". */
static int l_collectgarbage(lua_State *L)
{
    static const char *const opts[] = {"collect", "count", "step", NULL};
    int o = luaL_checkoption(L, 1, "collect", opts);
    switch (o) {
    case 0:
        lua_gc(L, LUA_GCCOLLECT, 0);
        lua_pushinteger(L, 0);
        return 1;
    case 1:
        lua_pushnumber(L, lua_gc(L, LUA_GCCOUNT, 0) + lua_gc(L, LUA_GCCOUNTB, 0) / 1024.0);
        return 1;
    default:
        lua_pushboolean(L, lua_gc(L, LUA_GCSTEP, luaL_optint(L, 2, 0)));
        return 1;
    }
}

/* table.sort with every comparison a Lua call. */
static const char sort_wrapper[] = "local sort, type = ...\n"
                                   "local function lt(a, b) return a < b end\n"
                                   "return function(t, comp)\n"
                                   "  if comp == nil then return sort(t, lt) end\n"
                                   "  if type(comp) ~= 'function' then return sort(t, comp) end\n"
                                   "  return sort(t, function(a, b) return comp(a, b) end)\n"
                                   "end\n";

void gust_flow_open_caps(lua_State *L, struct gust_flow *f)
{
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_pushlightuserdata(L, f);
    lua_getfield(L, -2, "rep");
    lua_pushcclosure(L, l_rep, 2);
    lua_setfield(L, -2, "rep");
    lua_pop(L, 1);

    lua_getglobal(L, LUA_TABLIBNAME);
    lua_pushlightuserdata(L, f);
    lua_getfield(L, -2, "concat");
    lua_pushcclosure(L, l_concat, 2);
    lua_setfield(L, -2, "concat");
    if (luaL_loadbuffer(L, sort_wrapper, sizeof(sort_wrapper) - 1, "=table.sort") != 0) {
        lua_error(L);
    }
    lua_getfield(L, -2, "sort");
    lua_getglobal(L, "type");
    lua_call(L, 2, 1);
    lua_setfield(L, -2, "sort");
    lua_pop(L, 1);

    lua_pushcfunction(L, l_collectgarbage);
    lua_setglobal(L, "collectgarbage");
}
