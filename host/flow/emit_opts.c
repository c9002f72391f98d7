/* The checks of emit()'s options (its headers). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>

#include "flow_int.h"

/* NATS headers travel as "Name: value" lines: a name is printable ASCII without ':'
 * or spaces. Names starting with "Nats-" steer JetStream (Nats-Msg-Id, Nats-Expected-*,
 * Nats-Rollup, ...) and belong to the core. Returns why `s` is not a usable name. */
static const char *header_name_problem(const char *s, size_t len)
{
    if (len == 0) {
        return "an empty name";
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || c == ':') {
            return "a name holds ':', a space, a control or a non-ASCII character";
        }
    }
    if (len >= 5 && strncasecmp(s, "Nats-", 5) == 0) {
        return "names starting with Nats- are reserved for the bus";
    }
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct gust_header *)a)->name, ((const struct gust_header *)b)->name);
}

size_t gust_flow_emit_options(lua_State *L, int idx, struct gust_buf *headers)
{
    headers->len = 0;
    if (lua_isnoneornil(L, idx)) {
        return 0;
    }
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            luaL_error(L, "emit: options are named (headers = ...), not keyed by a %s", luaL_typename(L, -2));
        }
        if (strcmp(lua_tostring(L, -2), "headers") != 0) {
            luaL_error(L, "emit: unknown option '%s' (options: headers)", lua_tostring(L, -2));
        }
        lua_pop(L, 1);
    }
    lua_getfield(L, idx, "headers");
    int at = lua_gettop(L);
    if (lua_isnil(L, at)) {
        lua_pop(L, 1);
        return 0;
    }
    if (!lua_istable(L, at)) {
        luaL_error(L, "emit: headers must be a table of name = value strings");
    }
    size_t n = 0, bytes = 0;
    lua_pushnil(L);
    while (lua_next(L, at) != 0) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            luaL_error(L, "emit: a header name must be a string, not a %s", luaL_typename(L, -2));
        }
        size_t nlen, vlen;
        const char *name = lua_tolstring(L, -2, &nlen);
        const char *why = header_name_problem(name, nlen);
        if (why != NULL) {
            luaL_error(L, "emit: invalid header name '%s': %s", name, why);
        }
        if (lua_type(L, -1) != LUA_TSTRING) {
            luaL_error(L, "emit: header '%s' must be a string, not a %s", name, luaL_typename(L, -1));
        }
        const char *value = lua_tolstring(L, -1, &vlen);
        if (strlen(value) != vlen || strpbrk(value, "\r\n") != NULL) {
            luaL_error(L, "emit: header '%s': a value cannot hold CR, LF or NUL", name);
        }
        bytes += nlen + vlen;
        if (++n > GUST_EMIT_MAX_HEADERS || bytes > GUST_EMIT_MAX_HEADER_BYTES) {
            luaL_error(L, "emit: too many headers (at most %d, %d bytes in all)", GUST_EMIT_MAX_HEADERS,
                       GUST_EMIT_MAX_HEADER_BYTES);
        }
        struct gust_header h = {.name = name, .value = value};
        if (gust_buf_append(headers, &h, sizeof(h)) != 0) {
            luaL_error(L, "emit: not enough memory");
        }
        lua_pop(L, 1);
    }
    /* The table stays on the stack (at `at`) until emit returns: its strings with it. */
    qsort(headers->data, n, sizeof(struct gust_header), by_name);
    return n;
}
