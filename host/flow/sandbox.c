/* The libraries a flow script may use, and nothing that reaches outside its state:
 * no files, processes, FFI, C modules, bytecode or code that runs behind the
 * timeout's back. */
#include <lauxlib.h>
#include <lualib.h>

#include "flow_int.h"

/* load(ld [, chunkname]) and loadstring(s [, chunkname]) for text chunks only:
 * hand-made bytecode can corrupt memory, since LuaJIT does not verify it. */
static int safe_load(lua_State *L)
{
    size_t len;
    const char *s;
    lua_settop(L, 2); /* the chunk name stays at 2, whatever the reader leaves above */
    if (lua_type(L, 1) == LUA_TSTRING) {
        s = lua_tolstring(L, 1, &len);
    } else {
        /* A reader function: gather its pieces, then load them as one text. */
        luaL_checktype(L, 1, LUA_TFUNCTION);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (;;) {
            lua_pushvalue(L, 1);
            lua_call(L, 0, 1);
            if (lua_isnil(L, -1) || (lua_isstring(L, -1) && lua_objlen(L, -1) == 0)) {
                lua_pop(L, 1);
                break;
            }
            if (!lua_isstring(L, -1)) {
                return luaL_error(L, "reader function must return a string");
            }
            luaL_addvalue(&b);
        }
        luaL_pushresult(&b);
        s = lua_tolstring(L, -1, &len);
    }
    const char *name = luaL_optstring(L, 2, "=(load)");
    if (luaL_loadbufferx(L, s, len, name, "t") != 0) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    return 1;
}

/* xpcall as pcall plus a handler called after the stack has unwound. LuaJIT runs the
 * handler of its own xpcall while the hook that raised the timeout is still marked
 * active, so a handler that loops forever would never be stopped. Without the debug
 * library a handler cannot tell the difference. An error in the handler gives the
 * message LuaJIT's xpcall gives. */
static const char safe_xpcall[] = "local pcall = pcall\n"
                                  "local function finish(handler, ok, ...)\n"
                                  "  if ok then return true, ... end\n"
                                  "  local handled, result = pcall(handler, (...))\n"
                                  "  return false, handled and result or 'error in error handling'\n"
                                  "end\n"
                                  "return function(f, handler, ...)\n"
                                  "  return finish(handler, pcall(f, ...))\n"
                                  "end\n";

int gust_flow_open_sandbox(lua_State *L)
{
    static const luaL_Reg libs[] = {
        {"", luaopen_base}, /* in LuaJIT this also opens coroutine */
        {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string},
        {LUA_MATHLIBNAME, luaopen_math},
        {LUA_BITLIBNAME, luaopen_bit},
    };
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
        lua_pushcfunction(L, libs[i].func);
        lua_pushstring(L, libs[i].name);
        lua_call(L, 1, 0);
    }
    /* Files, and newproxy: its __gc would run script code at any allocation,
     * outside on_event and its time limit. */
    static const char *const removed[] = {"dofile", "loadfile", "newproxy"};
    for (size_t i = 0; i < sizeof(removed) / sizeof(removed[0]); i++) {
        lua_pushnil(L);
        lua_setglobal(L, removed[i]);
    }
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump"); /* bytecode is of no use without a bytecode loader */
    lua_pop(L, 1);
    lua_pushcfunction(L, safe_load);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "load");
    lua_setglobal(L, "loadstring");
    if (luaL_loadbuffer(L, safe_xpcall, sizeof(safe_xpcall) - 1, "=xpcall") != 0) {
        return lua_error(L);
    }
    lua_call(L, 0, 1);
    lua_setglobal(L, "xpcall");
    return 0;
}
