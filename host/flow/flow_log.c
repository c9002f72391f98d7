/* The script's log.info/warn/error and print: one line each, handed to the flow's log
 * callback (flow.h). The line is made safe here, once, for every place it goes (gust's
 * log, /events, a golden test): valid UTF-8, no control characters, bounded. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "../common/json_out.h"
#include "flow_int.h"

/* Encodes the table at index 1 into the flow's encoder buffer; called protected, so a
 * table JSON cannot hold (a function inside, a cycle) is logged by tostring instead. */
static int encode_protected(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, 2);
    f->enc.buf.len = 0;
    gust_json_encode(L, 1, &f->enc);
    return 0;
}

/* Appends the text of the value at idx to f->line. */
static void append_value(lua_State *L, struct gust_flow *f, int idx)
{
    char text[64];
    size_t len;
    int type = lua_type(L, idx);
    if (type == LUA_TSTRING) {
        const char *s = lua_tolstring(L, idx, &len);
        gust_buf_append(&f->line, s, len);
        return;
    }
    if (type == LUA_TNUMBER &&
        (len = gust_json_fmt_number(lua_tonumber(L, idx), text, f->enc.c_locale)) > 0) {
        gust_buf_append(&f->line, text, len);
        return;
    }
    if (type == LUA_TTABLE || type == LUA_TUSERDATA ||
        (type == LUA_TLIGHTUSERDATA && lua_touserdata(L, idx) == NULL)) {
        lua_pushcfunction(L, encode_protected);
        lua_pushvalue(L, idx);
        lua_pushlightuserdata(L, f);
        if (lua_pcall(L, 2, 0, 0) == 0) {
            gust_buf_append(&f->line, f->enc.buf.data, f->enc.buf.len);
            return;
        }
        lua_pop(L, 1);
    }
    if (luaL_callmeta(L, idx, "__tostring") && lua_isstring(L, -1)) {
        const char *s = lua_tolstring(L, -1, &len);
        gust_buf_append(&f->line, s, len);
        lua_pop(L, 1);
        return;
    }
    switch (type) {
    case LUA_TNIL:
        gust_buf_append(&f->line, "nil", 3);
        return;
    case LUA_TBOOLEAN:
        len = (size_t)snprintf(text, sizeof(text), "%s", lua_toboolean(L, idx) ? "true" : "false");
        break;
    case LUA_TNUMBER: /* NaN, infinities */
        len = (size_t)snprintf(text, sizeof(text), "%s", lua_tostring(L, idx));
        break;
    default:
        len = (size_t)snprintf(text, sizeof(text), "%s: %p", luaL_typename(L, idx), lua_topointer(L, idx));
    }
    gust_buf_append(&f->line, text, len);
}

/* The length of the valid UTF-8 sequence at s (avail bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    size_t n = s[0] < 0x80             ? 1
               : (s[0] & 0xe0) == 0xc0 ? 2
               : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    return n > 0 && n <= avail && gust_utf8_valid((const char *)s, n) ? n : 0;
}

/* f->line made safe into out: control characters and bytes that are not UTF-8
 * written as \n, \r, \t or \xNN, the whole cut at GUST_FLOW_LOG_MAX bytes with "...". */
static void make_safe(const struct gust_buf *in, struct gust_buf *out)
{
    out->len = 0;
    const unsigned char *s = (const unsigned char *)in->data;
    for (size_t i = 0; i < in->len;) {
        char esc[8];
        const char *piece = esc;
        size_t n = utf8_len(s + i, in->len - i), step = n;
        if (n == 0 || s[i] < 0x20 || s[i] == 0x7f) {
            step = 1;
            n = s[i] == '\n' ? 2 : s[i] == '\r' ? 2 : s[i] == '\t' ? 2 : 4;
            if (n == 2) {
                esc[0] = '\\';
                esc[1] = s[i] == '\n' ? 'n' : s[i] == '\r' ? 'r' : 't';
            } else {
                snprintf(esc, sizeof(esc), "\\x%02X", s[i]);
            }
        } else {
            piece = (const char *)s + i;
        }
        if (out->len + n > GUST_FLOW_LOG_MAX - 3) {
            gust_buf_append(out, "...", 3);
            break;
        }
        gust_buf_append(out, piece, n);
        i += step;
    }
    gust_buf_append(out, "", 1);
    out->len--; /* NUL-terminated, not counted */
}

static int log_at(lua_State *L, int level)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(1));
    int n = lua_gettop(L);
    f->line.len = 0;
    for (int i = 1; i <= n; i++) {
        if (i > 1) {
            gust_buf_append(&f->line, " ", 1);
        }
        append_value(L, f, i);
    }
    if (f->log != NULL) {
        make_safe(&f->line, &f->line_out);
        f->log(f->log_ud, level, f->line_out.data != NULL ? f->line_out.data : "", f->line_out.len);
    }
    return 0;
}

static int l_info(lua_State *L)
{
    return log_at(L, GUST_LOG_INFO);
}

static int l_warn(lua_State *L)
{
    return log_at(L, GUST_LOG_WARN);
}

static int l_error(lua_State *L)
{
    return log_at(L, GUST_LOG_ERROR);
}

void gust_flow_open_log(lua_State *L, struct gust_flow *f)
{
    static const luaL_Reg fns[] = {{"info", l_info}, {"warn", l_warn}, {"error", l_error}};
    lua_createtable(L, 0, 3);
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        lua_pushlightuserdata(L, f);
        lua_pushcclosure(L, fns[i].func, 1);
        lua_setfield(L, -2, fns[i].name);
    }
    lua_getfield(L, -1, "info");
    lua_setglobal(L, "print"); /* not to gust's stdout: a log line like the others */
    lua_setglobal(L, "log");
}
