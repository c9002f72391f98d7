/* The emits of a batch (struct gust_emits) and the checks of emit()'s options. */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>

#include "flow_int.h"

/* An emit's strings share one allocation, freed through the payload pointer: the
 * payload, the subject, then (aligned) the header array and the header strings. */
int gust_emits_push_with_headers(struct gust_emits *out, const char *subject, const char *payload, size_t len,
                                 const struct gust_header *headers, size_t nheaders)
{
    size_t slen = strlen(subject);
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 8;
        struct gust_emit *v = realloc(out->v, cap * sizeof(*v));
        if (v == NULL) {
            return GUST_ENOMEM;
        }
        out->v = v;
        out->cap = cap;
    }
    size_t size = len + 1 + slen + 1, array_at = 0, strings = 0;
    if (nheaders > 0) {
        size_t align = alignof(struct gust_header);
        array_at = (size + align - 1) / align * align;
        size = array_at + nheaders * sizeof(struct gust_header);
        for (size_t i = 0; i < nheaders; i++) {
            strings += strlen(headers[i].name) + 1 + strlen(headers[i].value) + 1;
        }
    }
    char *block = malloc(size + strings);
    if (block == NULL) {
        return GUST_ENOMEM;
    }
    memcpy(block, payload, len);
    block[len] = '\0';
    memcpy(block + len + 1, subject, slen);
    block[len + 1 + slen] = '\0';
    struct gust_header *h = NULL;
    if (nheaders > 0) {
        h = (struct gust_header *)(void *)(block + array_at);
        char *w = block + size;
        for (size_t i = 0; i < nheaders; i++) {
            size_t nl = strlen(headers[i].name) + 1, vl = strlen(headers[i].value) + 1;
            h[i].name = memcpy(w, headers[i].name, nl);
            h[i].value = memcpy(w + nl, headers[i].value, vl);
            w += nl + vl;
        }
    }
    out->v[out->n++] = (struct gust_emit){
        .subject = block + len + 1, .payload = block, .len = len, .headers = h, .nheaders = nheaders};
    return 0;
}

int gust_emits_push(struct gust_emits *out, const char *subject, const char *payload, size_t len)
{
    return gust_emits_push_with_headers(out, subject, payload, len, NULL, 0);
}

void gust_emits_truncate(struct gust_emits *e, size_t n)
{
    while (e->n > n) {
        free(e->v[--e->n].payload);
    }
}

void gust_emits_clear(struct gust_emits *e)
{
    gust_emits_truncate(e, 0);
}

void gust_emits_free(struct gust_emits *e)
{
    gust_emits_truncate(e, 0);
    free(e->v);
    *e = (struct gust_emits){0};
}

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
