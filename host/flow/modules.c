/* require(name): the flow's own modules, from its lua_path, as text, in its sandbox.
 *
 * Lua's package library is not opened: its searchers would read LUA_PATH and
 * LUA_CPATH, load C modules and bytecode, and offer package.loadlib. This require
 * knows one directory and one form: a name of letters, digits, '_' and '-' in
 * dot-separated parts becomes DIR/part/part.lua, so it cannot name a file outside DIR
 * (no "..", no "/", no absolute path), and the file loads in text mode only. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "flow_int.h"

#define MODULE_NAME_MAX 128

/* Marks a module whose chunk is running, so that a module requiring itself (directly
 * or round a loop) is an error rather than an endless recursion. */
static const char loading_mark;

/* Why `name` cannot name a module, or NULL. */
static const char *name_problem(const char *name, size_t len)
{
    if (len == 0 || len > MODULE_NAME_MAX) {
        return "a module name is 1 to 128 characters";
    }
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (c == '.') {
            if (i == 0 || i + 1 == len || name[i + 1] == '.') {
                return "empty part between dots";
            }
        } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                     c == '-')) {
            return "use letters, digits, '_' and '-', with dots between directories";
        }
    }
    return NULL;
}

/* require(name); upvalue 1: the flow. */
static int l_require(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(1));
    if (lua_type(L, 1) != LUA_TSTRING) {
        return luaL_error(L, "require: the module name must be a string, not a %s", luaL_typename(L, 1));
    }
    size_t len;
    const char *name = lua_tolstring(L, 1, &len);
    const char *why = name_problem(name, len);
    if (why != NULL) {
        return luaL_error(L, "require: invalid module name '%s': %s", name, why);
    }
    lua_settop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref_loaded); /* 2 */
    lua_pushvalue(L, 1);
    lua_rawget(L, 2);
    if (lua_touserdata(L, -1) == (void *)&loading_mark) {
        return luaL_error(L, "require: module '%s' requires itself while loading (a loop)", name);
    }
    if (!lua_isnil(L, -1)) {
        return 1;
    }
    lua_pop(L, 1);
    if (f->lua_path == NULL) {
        return luaL_error(L, "require: module '%s' not found: no lua_path is set", name);
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, f->lua_path);
    luaL_addchar(&b, '/');
    for (size_t i = 0; i < len; i++) {
        luaL_addchar(&b, name[i] == '.' ? '/' : name[i]);
    }
    luaL_addstring(&b, ".lua");
    luaL_pushresult(&b); /* 3 */
    const char *path = lua_tostring(L, 3);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        return luaL_error(L, "require: module '%s' not found: no file %s", name, path);
    }
    if (luaL_loadfilex(L, path, "t") != 0) { /* 4: the chunk */
        /* Syntax errors name the path already; a refused bytecode file does not. */
        const char *msg = lua_tostring(L, -1);
        return luaL_error(L, "require: module '%s': %s%s%s", name, strstr(msg, path) ? "" : path,
                          strstr(msg, path) ? "" : ": ", msg);
    }
    lua_pushvalue(L, 1);
    lua_pushlightuserdata(L, (void *)&loading_mark);
    lua_rawset(L, 2);
    f->modules_loading++;
    /* Not protected: an error here goes on up with its full traceback. The mark it
     * leaves is cleared at the start of the next call into the script. */
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    f->modules_loading--;
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, 2);
    return 1;
}

void gust_flow_modules_reset(lua_State *L, struct gust_flow *f)
{
    if (f->modules_loading == 0) {
        return;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref_loaded);
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
        int mark = lua_touserdata(L, -1) == (void *)&loading_mark;
        lua_pop(L, 1);
        if (mark) {
            lua_pushvalue(L, -1);
            lua_pushnil(L);
            lua_rawset(L, -4); /* clearing a field during lua_next is allowed */
        }
    }
    lua_pop(L, 1);
    f->modules_loading = 0;
}

void gust_flow_open_require(lua_State *L, struct gust_flow *f)
{
    lua_newtable(L);
    f->ref_loaded = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, f);
    lua_pushcclosure(L, l_require, 1);
    lua_setglobal(L, "require");
}
