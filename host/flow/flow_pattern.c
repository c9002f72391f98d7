/* Lua 5.1 patterns for the sandbox: string.find, match, gmatch and gsub with LuaJIT
 * 2.1's results and error messages, but a matcher that counts its steps and checks the
 * flow's deadline every PATTERN_CHECK_STEPS of them, so that a pattern that
 * backtracks for ever (".-.-.-.-b" over 5000 characters) ends in the flow's timeout
 * like any Lua loop. LuaJIT's own matcher is C that never returns to the count hook.
 *
 * The pattern is read up to its first NUL, as LuaJIT reads it; subjects may hold NULs.
 * A subject's byte at its end is read as NUL (Lua strings are NUL-terminated), which
 * %f and %b rely on, as LuaJIT's do. Character classes are ASCII's, whatever the
 * process locale. gsub's result is bounded by the flow's build limit. */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "flow_int.h"

#define PATTERN_MAX_CAPTURES 32 /* LUA_MAXCAPTURES */
#define PATTERN_MAX_DEPTH 200   /* LuaJIT's LJ_MAX_XLEVEL: then "pattern too complex" */
#define PATTERN_CHECK_STEPS 4096

enum { CAP_OPEN = -1, CAP_POS = -2 };

struct pm {
    lua_State *L;
    struct gust_flow *f;
    const char *s0, *send; /* the subject */
    const char *pend;      /* the pattern's end (its first NUL) */
    int ncap;
    int depth;
    uint32_t steps;
    size_t max; /* gsub's result */
    struct {
        const char *at;
        ptrdiff_t len; /* or CAP_OPEN, CAP_POS */
    } cap[PATTERN_MAX_CAPTURES];
};

/* Costs n steps; every PATTERN_CHECK_STEPS, a look at the clock. */
static void spend(struct pm *m, uint32_t n)
{
    m->steps += n;
    if (m->steps >= PATTERN_CHECK_STEPS) {
        m->steps = 0;
        gust_flow_check_deadline(m->L, m->f);
    }
}

static inline int is_alpha(int c)
{
    return (unsigned)((c | 0x20) - 'a') < 26u;
}

static inline int is_digit(int c)
{
    return (unsigned)(c - '0') < 10u;
}

/* 1 or 0 for a class letter (lower case), -1 for any other letter. */
static inline int is_class(int c, int cls)
{
    switch (cls) {
    case 'a':
        return is_alpha(c);
    case 'c':
        return c < 32 || c == 127;
    case 'd':
        return is_digit(c);
    case 'g':
        return c > 32 && c < 127;
    case 'l':
        return (unsigned)(c - 'a') < 26u;
    case 'p':
        return c > 32 && c < 127 && !is_alpha(c) && !is_digit(c);
    case 's':
        return c == ' ' || (c >= '\t' && c <= '\r');
    case 'u':
        return (unsigned)(c - 'A') < 26u;
    case 'w':
        return is_alpha(c) || is_digit(c);
    case 'x':
        return is_digit(c) || (unsigned)((c | 0x20) - 'a') < 6u;
    default:
        return -1;
    }
}

/* Whether c is in the class after a '%': a letter class (upper case: its complement),
 * %z (NUL), or else the character itself. */
static inline int in_escape(int c, int cls)
{
    if ((cls >= 'a' && cls <= 'z') || (cls >= 'A' && cls <= 'Z')) {
        int lower = cls | 0x20;
        int r = lower == 'z' ? c == 0 : is_class(c, lower);
        if (r >= 0) {
            return cls == lower ? r : !r;
        }
    }
    return c == cls;
}

/* The set [ ... ] from its '[' at p to its ']' at close. */
static int in_set(int c, const char *p, const char *close)
{
    int want = 1;
    p++;
    if (*p == '^') {
        want = 0;
        p++;
    }
    for (; p < close; p++) {
        if (*p == '%') {
            p++;
            if (in_escape(c, (unsigned char)*p)) {
                return want;
            }
        } else if (p[1] == '-' && p + 2 < close) {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2]) {
                return want;
            }
            p += 2;
        } else if ((unsigned char)*p == c) {
            return want;
        }
    }
    return !want;
}

/* Where the single-character class at p ends. */
static const char *item_end(struct pm *m, const char *p)
{
    if (*p == '%') {
        if (p + 1 >= m->pend) {
            luaL_error(m->L, "malformed pattern (ends with '%%')");
        }
        return p + 2;
    }
    if (*p == '[') {
        const char *q = p + 1;
        if (*q == '^') {
            q++;
        }
        /* The first character is a member even when it is ']'. */
        do {
            if (q >= m->pend) {
                luaL_error(m->L, "malformed pattern (missing ']')");
            }
            if (*q++ == '%' && q < m->pend) {
                q++;
            }
        } while (*q != ']' || q >= m->pend);
        return q + 1;
    }
    return p + 1;
}

/* Whether the subject's character at s matches the class p..end (s < send). */
static inline int one(int c, const char *p, const char *end)
{
    switch (*p) {
    case '.':
        return 1;
    case '%':
        return in_escape(c, (unsigned char)p[1]);
    case '[':
        return in_set(c, p, end - 1);
    default:
        return (unsigned char)*p == c;
    }
}

static const char *match(struct pm *m, const char *s, const char *p);

static const char *greedy(struct pm *m, const char *s, const char *p, const char *end)
{
    ptrdiff_t n = 0;
    while (s + n < m->send && one((unsigned char)s[n], p, end)) {
        n++;
    }
    spend(m, (uint32_t)(n / 16));
    for (; n >= 0; n--) {
        const char *r = match(m, s + n, end + 1);
        if (r != NULL) {
            return r;
        }
    }
    return NULL;
}

static const char *lazy(struct pm *m, const char *s, const char *p, const char *end)
{
    for (;;) {
        const char *r = match(m, s, end + 1);
        if (r != NULL) {
            return r;
        }
        if (s < m->send && one((unsigned char)*s, p, end)) {
            s++;
        } else {
            return NULL;
        }
    }
}

static const char *balanced(struct pm *m, const char *s, const char *p)
{
    if (p >= m->pend || p + 1 >= m->pend) {
        luaL_error(m->L, "unbalanced pattern");
    }
    if (s >= m->send || *s != *p) {
        return NULL;
    }
    int open = 1;
    const char *start = s;
    while (++s < m->send) {
        if (*s == p[1]) {
            if (--open == 0) {
                spend(m, (uint32_t)((s - start) / 16));
                return s + 1;
            }
        } else if (*s == p[0]) {
            open++;
        }
    }
    spend(m, (uint32_t)((s - start) / 16));
    return NULL;
}

static const char *open_capture(struct pm *m, const char *s, const char *p, ptrdiff_t kind)
{
    if (m->ncap >= PATTERN_MAX_CAPTURES) {
        luaL_error(m->L, "too many captures");
    }
    m->cap[m->ncap].at = s;
    m->cap[m->ncap].len = kind;
    m->ncap++;
    const char *r = match(m, s, p);
    if (r == NULL) {
        m->ncap--;
    }
    return r;
}

static const char *close_capture(struct pm *m, const char *s, const char *p)
{
    int k = m->ncap - 1;
    while (k >= 0 && m->cap[k].len != CAP_OPEN) {
        k--;
    }
    if (k < 0) {
        luaL_error(m->L, "invalid pattern capture");
    }
    m->cap[k].len = s - m->cap[k].at;
    const char *r = match(m, s, p);
    if (r == NULL) {
        m->cap[k].len = CAP_OPEN;
    }
    return r;
}

static int capture_index(struct pm *m, int digit)
{
    int k = digit - '1';
    if (k < 0 || k >= m->ncap || m->cap[k].len == CAP_OPEN) {
        luaL_error(m->L, "invalid capture index");
    }
    return k;
}

/* %1..%9 in a pattern: the text of capture k again. */
static const char *same_as_capture(struct pm *m, const char *s, int digit)
{
    int k = capture_index(m, digit);
    size_t len = (size_t)m->cap[k].len; /* a position capture: huge, never matches */
    spend(m, (uint32_t)(len > 65536 ? 4096 : len / 16));
    if ((size_t)(m->send - s) >= len && memcmp(m->cap[k].at, s, len) == 0) {
        return s + len;
    }
    return NULL;
}

/* Matches the pattern from p against the subject from s: the end of the match, or
 * NULL. The tail of a pattern loops here rather than recursing. */
static const char *match(struct pm *m, const char *s, const char *p)
{
    if (++m->depth > PATTERN_MAX_DEPTH) {
        luaL_error(m->L, "pattern too complex");
    }
    spend(m, 1);
    for (;;) {
        if (p >= m->pend) {
            break; /* the whole pattern matched */
        }
        if (*p == '(') {
            s = p[1] == ')' ? open_capture(m, s, p + 2, CAP_POS) : open_capture(m, s, p + 1, CAP_OPEN);
            break;
        }
        if (*p == ')') {
            s = close_capture(m, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == m->pend) {
            s = s == m->send ? s : NULL;
            break;
        }
        if (*p == '%' && p + 1 < m->pend && p[1] == 'b') {
            s = balanced(m, s, p + 2);
            if (s == NULL) {
                break;
            }
            p += 4;
            continue;
        }
        if (*p == '%' && p + 1 < m->pend && p[1] == 'f') {
            p += 2;
            if (p >= m->pend || *p != '[') {
                luaL_error(m->L, "missing '[' after '%%f' in pattern");
            }
            const char *end = item_end(m, p);
            int before = s == m->s0 ? 0 : (unsigned char)s[-1];
            int here = (unsigned char)*s; /* NUL at the end */
            if (in_set(before, p, end - 1) || !in_set(here, p, end - 1)) {
                s = NULL;
                break;
            }
            p = end;
            continue;
        }
        if (*p == '%' && p + 1 < m->pend && p[1] >= '0' && p[1] <= '9') {
            s = same_as_capture(m, s, (unsigned char)p[1]);
            if (s == NULL) {
                break;
            }
            p += 2;
            continue;
        }
        /* A single-character class, maybe with a repetition after it. */
        const char *end = item_end(m, p);
        int hit = s < m->send && one((unsigned char)*s, p, end);
        char rep = end < m->pend ? *end : '\0';
        if (rep == '?') {
            const char *r;
            if (hit && (r = match(m, s + 1, end + 1)) != NULL) {
                s = r;
                break;
            }
            p = end + 1;
            continue;
        }
        if (rep == '*') {
            s = greedy(m, s, p, end);
            break;
        }
        if (rep == '+') {
            s = hit ? greedy(m, s + 1, p, end) : NULL;
            break;
        }
        if (rep == '-') {
            s = lazy(m, s, p, end);
            break;
        }
        if (!hit) {
            s = NULL;
            break;
        }
        s++;
        p = end;
    }
    m->depth--;
    return s;
}

/* Pushes capture i (the whole match s..e when the pattern has none and i is 0). */
static void push_capture(struct pm *m, int i, const char *s, const char *e)
{
    if (i >= m->ncap) {
        if (i != 0) {
            luaL_error(m->L, "invalid capture index");
        }
        lua_pushlstring(m->L, s, (size_t)(e - s));
        return;
    }
    if (m->cap[i].len == CAP_OPEN) {
        luaL_error(m->L, "unfinished capture");
    }
    if (m->cap[i].len == CAP_POS) {
        lua_pushinteger(m->L, m->cap[i].at - m->s0 + 1);
    } else {
        lua_pushlstring(m->L, m->cap[i].at, (size_t)m->cap[i].len);
    }
}

/* Pushes every capture, or the whole match (s NULL: nothing for a pattern without
 * captures); returns how many. */
static int push_captures(struct pm *m, const char *s, const char *e)
{
    int n = m->ncap == 0 && s != NULL ? 1 : m->ncap;
    luaL_checkstack(m->L, n, "too many captures");
    for (int i = 0; i < n; i++) {
        push_capture(m, i, s, e);
    }
    return n;
}

static void pm_init(struct pm *m, lua_State *L, const char *s, size_t len, const char *p, size_t plen)
{
    m->L = L;
    m->f = lua_touserdata(L, lua_upvalueindex(1));
    m->s0 = s;
    m->send = s + len;
    m->pend = p + strnlen(p, plen);
    m->steps = 0;
    m->max = gust_flow_build_max(m->f);
}

/* A match from s: its end or NULL, with fresh captures. */
static const char *match_at(struct pm *m, const char *s, const char *p)
{
    m->ncap = 0;
    m->depth = 0;
    return match(m, s, p);
}

static int has_specials(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (strchr("^$*+?.([%-", p[i]) != NULL && p[i] != '\0') {
            return 1;
        }
    }
    return 0;
}

/* string.find and string.match. */
static int find_or_match(lua_State *L, int find)
{
    size_t len, plen;
    const char *s = luaL_checklstring(L, 1, &len);
    const char *p = luaL_checklstring(L, 2, &plen);
    lua_Integer init = luaL_optinteger(L, 3, 1);
    /* LuaJIT reads init as a 32-bit integer. */
    int32_t start = (int32_t)init;
    if (start < 0) {
        start += (int32_t)len;
    } else {
        start--;
    }
    if (start < 0) {
        start = 0;
    }
    size_t at = (size_t)start > len ? len : (size_t)start;
    if (find && (lua_toboolean(L, 4) || !has_specials(p, plen))) {
        /* A plain search (the pattern whole, NULs included, as LuaJIT's). */
        const char *hit = NULL;
        if (plen == 0) {
            hit = s + at;
        } else if (plen <= len - at) {
            hit = memmem(s + at, len - at, p, plen);
        }
        if (hit == NULL) {
            lua_pushnil(L);
            return 1;
        }
        lua_pushinteger(L, hit - s + 1);
        lua_pushinteger(L, hit - s + (lua_Integer)plen);
        return 2;
    }
    struct pm m;
    pm_init(&m, L, s, len, p, plen);
    int anchored = *p == '^';
    if (anchored) {
        p++;
    }
    const char *from = s + at;
    do {
        const char *e = match_at(&m, from, p);
        if (e != NULL) {
            if (!find) {
                return push_captures(&m, from, e);
            }
            lua_pushinteger(L, from - s + 1);
            lua_pushinteger(L, e - s);
            return 2 + push_captures(&m, NULL, NULL);
        }
    } while (from++ < m.send && !anchored);
    lua_pushnil(L);
    return 1;
}

static int l_find(lua_State *L)
{
    return find_or_match(L, 1);
}

static int l_match(lua_State *L)
{
    return find_or_match(L, 0);
}

/* The iterator gmatch returns; upvalues: the flow, the subject, the pattern, the
 * offset where the next search starts. */
static int gmatch_next(lua_State *L)
{
    size_t len, plen;
    const char *s = lua_tolstring(L, lua_upvalueindex(2), &len);
    const char *p = lua_tolstring(L, lua_upvalueindex(3), &plen);
    size_t at = (size_t)lua_tointeger(L, lua_upvalueindex(4));
    struct pm m;
    pm_init(&m, L, s, len, p, plen);
    for (const char *from = s + at; from <= m.send; from++) {
        const char *e = match_at(&m, from, p);
        if (e != NULL) {
            /* An empty match moves on by one, so the loop ends. */
            lua_pushinteger(L, (e - s) + (e == from));
            lua_replace(L, lua_upvalueindex(4));
            return push_captures(&m, from, e);
        }
    }
    return 0;
}

static int l_gmatch(lua_State *L)
{
    luaL_checkstring(L, 1);
    luaL_checkstring(L, 2);
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, gmatch_next, 4);
    return 1;
}

/* gsub's result, kept within the flow's build limit. */
static void over(lua_State *L, size_t max)
{
    luaL_error(L, "gsub: the result would be over %lu bytes", (unsigned long)max);
}

static void add(struct pm *m, luaL_Buffer *b, size_t *total, const char *s, size_t n)
{
    *total += n;
    if (*total > m->max) {
        over(m->L, m->max);
    }
    luaL_addlstring(b, s, n);
}

/* Adds the string on top of the stack (luaL_Buffer wants it there, and pops it). */
static void add_top(struct pm *m, luaL_Buffer *b, size_t *total)
{
    *total += lua_objlen(m->L, -1);
    if (*total > m->max) {
        over(m->L, m->max);
    }
    luaL_addvalue(b);
}

/* The replacement of the match s..e (the value at 3 is a string, table or function). */
static void replace(struct pm *m, luaL_Buffer *b, size_t *total, const char *s, const char *e)
{
    lua_State *L = m->L;
    int type = lua_type(L, 3);
    if (type == LUA_TSTRING || type == LUA_TNUMBER) {
        size_t rlen;
        const char *r = lua_tolstring(L, 3, &rlen);
        for (size_t i = 0; i < rlen; i++) {
            if (r[i] != '%') {
                add(m, b, total, r + i, 1);
                continue;
            }
            i++; /* "%" at the very end adds the NUL after it, as LuaJIT's */
            char c = r[i];
            if (c < '0' || c > '9') {
                add(m, b, total, &r[i], 1);
            } else if (c == '0') {
                add(m, b, total, s, (size_t)(e - s));
            } else {
                push_capture(m, c - '1', s, e);
                lua_tostring(L, -1); /* a position capture becomes its text */
                add_top(m, b, total);
            }
        }
        return;
    }
    if (type == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = push_captures(m, s, e);
        lua_call(L, n, 1);
    } else {
        push_capture(m, 0, s, e);
        lua_gettable(L, 3);
    }
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        add(m, b, total, s, (size_t)(e - s)); /* the match stays */
        return;
    }
    if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    }
    lua_tostring(L, -1);
    add_top(m, b, total);
}

static int l_gsub(lua_State *L)
{
    size_t len, plen;
    const char *s = luaL_checklstring(L, 1, &len);
    const char *p = luaL_checklstring(L, 2, &plen);
    int type = lua_type(L, 3);
    int max = luaL_optint(L, 4, (int)(len + 1));
    if (type != LUA_TNUMBER && type != LUA_TSTRING && type != LUA_TFUNCTION && type != LUA_TTABLE) {
        luaL_argerror(L, 3, "string/function/table expected");
    }
    lua_settop(L, 3);
    struct pm m;
    pm_init(&m, L, s, len, p, plen);
    int anchored = *p == '^';
    if (anchored) {
        p++;
    }
    /* The buffer's pieces live on the stack above 3, where the replacement is read. */
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    size_t total = 0;
    int n = 0;
    const char *from = s;
    while (n < max) {
        const char *e = match_at(&m, from, p);
        if (e != NULL) {
            n++;
            replace(&m, &b, &total, from, e);
        }
        if (e != NULL && e > from) {
            from = e;
        } else if (from < m.send) {
            if (++total > m.max) {
                over(L, m.max);
            }
            luaL_addchar(&b, *from++);
        } else {
            break;
        }
        if (anchored) {
            break;
        }
        spend(&m, 1);
    }
    add(&m, &b, &total, from, (size_t)(m.send - from));
    luaL_pushresult(&b);
    lua_pushinteger(L, n);
    return 2;
}

void gust_flow_open_patterns(lua_State *L, struct gust_flow *f)
{
    static const luaL_Reg fns[] = {
        {"find", l_find}, {"match", l_match}, {"gmatch", l_gmatch}, {"gsub", l_gsub}};
    lua_getglobal(L, LUA_STRLIBNAME);
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        lua_pushlightuserdata(L, f);
        lua_pushcclosure(L, fns[i].func, 1);
        lua_setfield(L, -2, fns[i].name);
    }
    lua_pop(L, 1);
}
