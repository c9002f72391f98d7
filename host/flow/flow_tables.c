/* The script's `tables`: one read-only userdata per lookup table (tables.h), made once
 * per flow. Indexing one finds the row in the shared table and decodes just that row
 * into a fresh Lua table, so a script may change what it got without changing the
 * table, and nothing is copied per flow or per event. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "flow_int.h"
#include "tables.h"

struct proxy {
    const struct gust_table *tb;
};

/* The text a key is looked up by: a string as it is, a number as JSON writes it (so
 * tables.t[42] finds the row keyed "42"), a bignum by its digits. NULL: no such key
 * can exist. */
static const char *key_text(lua_State *L, struct gust_flow *f, int idx, char *buf, size_t *len)
{
    switch (lua_type(L, idx)) {
    case LUA_TSTRING:
        return lua_tolstring(L, idx, len);
    case LUA_TNUMBER:
        *len = gust_json_fmt_number(lua_tonumber(L, idx), buf, f->enc.c_locale);
        return *len > 0 ? buf : NULL;
    case LUA_TUSERDATA:
        if (lua_getmetatable(L, idx)) {
            int bignum = lua_topointer(L, -1) == f->enc.tags.bignum;
            lua_pop(L, 1);
            if (bignum) {
                const char *s = lua_touserdata(L, idx);
                *len = strlen(s);
                return s;
            }
        }
        return NULL;
    default:
        return NULL;
    }
}

/* tables.NAME[key]; upvalues: the tags, then the flow (a decoder closure). */
static int l_row(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(4));
    const struct proxy *p = lua_touserdata(L, 1);
    char buf[32];
    size_t len = 0;
    const char *key = key_text(L, f, 2, buf, &len);
    size_t json_len;
    const char *json = key != NULL ? gust_table_find(p->tb, key, len, &json_len) : NULL;
    lua_settop(L, 2);
    if (json == NULL) {
        lua_pushnil(L);
        return 1;
    }
    if (gust_json_decode(&f->dec, json, json_len, 0) != 0) { /* the loader wrote it: cannot happen */
        return luaL_error(L, "tables.%s: a row does not decode: %s", gust_table_name(p->tb), f->dec.msg);
    }
    return 1;
}

static int l_rows(lua_State *L)
{
    const struct proxy *p = lua_touserdata(L, 1);
    lua_pushnumber(L, (lua_Number)gust_table_rows(p->tb));
    return 1;
}

static int l_read_only(lua_State *L)
{
    const struct proxy *p = lua_touserdata(L, 1);
    return luaL_error(L, "tables.%s is read-only", gust_table_name(p->tb));
}

static int l_tostring(lua_State *L)
{
    const struct proxy *p = lua_touserdata(L, 1);
    lua_pushfstring(L, "lookup table '%s' (%d rows)", gust_table_name(p->tb), (int)gust_table_rows(p->tb));
    return 1;
}

/* tables.NAME; upvalue 1: the proxies by name, 2: the flow. */
static int l_table(lua_State *L)
{
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    if (!lua_isnil(L, -1)) {
        return 1;
    }
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(2));
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    size_t n = f->tables != NULL ? gust_tables_count(f->tables) : 0;
    for (size_t i = 0; i < n; i++) {
        luaL_addstring(&b, i > 0 ? ", " : "");
        luaL_addstring(&b, gust_table_name(gust_tables_at(f->tables, i)));
    }
    if (n == 0) {
        luaL_addstring(&b, "none are configured");
    }
    luaL_pushresult(&b);
    return luaL_error(L, "tables: no lookup table '%s' (tables: %s)", luaL_optstring(L, 2, "?"),
                      lua_tostring(L, -1));
}

static int l_tables_read_only(lua_State *L)
{
    return luaL_error(L, "tables is read-only");
}

void gust_flow_open_tables(lua_State *L, struct gust_flow *f)
{
    /* One metatable for every proxy of this flow. */
    lua_createtable(L, 0, 5);
    int mt = lua_gettop(L);
    gust_flow_push_decoder(L, f, l_row, 1);
    lua_setfield(L, mt, "__index");
    lua_pushcfunction(L, l_rows);
    lua_setfield(L, mt, "__len");
    lua_pushcfunction(L, l_read_only);
    lua_setfield(L, mt, "__newindex");
    lua_pushcfunction(L, l_tostring);
    lua_setfield(L, mt, "__tostring");
    lua_pushboolean(L, 0);
    lua_setfield(L, mt, "__metatable");

    lua_newtable(L);
    int proxies = lua_gettop(L);
    size_t n = f->tables != NULL ? gust_tables_count(f->tables) : 0;
    for (size_t i = 0; i < n; i++) {
        const struct gust_table *tb = gust_tables_at(f->tables, i);
        struct proxy *p = lua_newuserdata(L, sizeof(*p));
        p->tb = tb;
        lua_pushvalue(L, mt);
        lua_setmetatable(L, -2);
        lua_setfield(L, proxies, gust_table_name(tb));
    }

    /* tables itself: empty, so every read goes through __index, and read-only. */
    lua_newtable(L);
    lua_createtable(L, 0, 3);
    lua_pushvalue(L, proxies);
    lua_pushlightuserdata(L, f);
    lua_pushcclosure(L, l_table, 2);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_tables_read_only);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_setglobal(L, "tables");
    lua_settop(L, mt - 1);
}
