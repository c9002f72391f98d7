/* The script's `state` table and the per-batch staging behind it (state.h).
 *
 * Each key a batch touches gets an entry: the value as the batch sees it now, the
 * revision the store gave when it was read, and the messages that touched it. A
 * message's first touch of an entry saves how the entry was (an undo record), so a
 * message whose run fails leaves the entries as they were before it. A message the
 * store says was applied to a key already (a redelivery) leaves the entry alone. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "flow_int.h"

static struct gust_flow *flow_of(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

static struct gust_flow_state *state_of(lua_State *L, struct gust_flow *f)
{
    if (!f->state.has_store) {
        luaL_error(L, "state: this flow has no state store (durable state is not available here)");
    }
    if (f->out == NULL) {
        luaL_error(L, "state: only on_event can use state");
    }
    return &f->state;
}

/* The key argument: a string of 1..GUST_STATE_KEY_MAX bytes without NUL. */
static const char *check_key(lua_State *L, const char *fn, size_t *len)
{
    if (lua_type(L, 1) != LUA_TSTRING) {
        luaL_error(L, "%s: the key must be a string, not a %s", fn, luaL_typename(L, 1));
    }
    const char *key = lua_tolstring(L, 1, len);
    if (*len == 0 || *len > GUST_STATE_KEY_MAX || strlen(key) != *len) {
        luaL_error(L, "%s: a key is 1 to %d bytes, without NUL", fn, GUST_STATE_KEY_MAX);
    }
    return key;
}

static void *grow_array(lua_State *L, void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return p;
    }
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need) {
        n *= 2;
    }
    void *q = realloc(p, n * elem);
    if (q == NULL) {
        luaL_error(L, "state: not enough memory");
    }
    *cap = n;
    return q;
}

/* The entry of key, made when the batch has none; with `need_value`, one whose value
 * is known (read from the store unless a message of the batch wrote it). */
static struct state_entry *entry(lua_State *L, struct gust_flow *f, const char *fn, const char *key,
                                 size_t len, int need_value)
{
    struct gust_flow_state *s = &f->state;
    uint32_t h = gust_key_hash(key, len);
    size_t i = gust_keyidx_find(&s->index, s->v, sizeof(*s->v), key, len, h);
    if (i == SIZE_MAX) {
        s->v = grow_array(L, s->v, &s->cap, s->n + 1, sizeof(*s->v));
        /* Room for every entry in the writes' view, so that taking it cannot fail. */
        s->out = grow_array(L, s->out, &s->cap_out, s->n + 1, sizeof(*s->out));
        char *copy = malloc(len + 1);
        if (copy == NULL) {
            luaL_error(L, "state: not enough memory");
        }
        memcpy(copy, key, len);
        copy[len] = '\0';
        s->v[s->n] = (struct state_entry){.key = {.s = copy, .len = len, .hash = h}};
        if (gust_keyidx_add(&s->index, s->v, sizeof(*s->v), s->n + 1, s->n) != 0) {
            free(copy);
            luaL_error(L, "state: not enough memory");
        }
        i = s->n++;
    }
    struct state_entry *e = &s->v[i];
    if ((need_value || s->store.read_first) && !e->written && !e->has_revision) {
        struct gust_state_value got = {0};
        struct gust_err err = {{0}};
        if (s->store.read(s->store.ud, key, len, s->now_ms, &got, &err) != 0) {
            luaL_error(L, "%s: the state store failed: %s", fn, err.msg);
        }
        char *stored = NULL;
        if (got.napplied > 0 && got.json != NULL && (stored = malloc(got.len + 1)) == NULL) {
            free(got.json);
            free(got.applied);
            luaL_error(L, "state: not enough memory");
        }
        if (stored != NULL) {
            memcpy(stored, got.json, got.len + 1);
        }
        e->json = got.json;
        e->len = got.len;
        e->expires_ms = got.expires_ms;
        e->revision = got.revision;
        e->has_revision = 1;
        e->applied = got.applied;
        e->napplied = got.napplied;
        e->stored_json = stored;
        e->stored_len = got.len;
        e->stored_expires_ms = got.expires_ms;
    }
    return e;
}

/* Whether the running message was applied to e before (state.h): a binary search of
 * the ranges the store gave. */
static int applied_before(const struct gust_flow_state *s, const struct state_entry *e)
{
    size_t lo = 0, hi = e->napplied;
    while (s->seq != 0 && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->seq < e->applied[2 * mid]) {
            hi = mid;
        } else if (s->seq > e->applied[2 * mid + 1]) {
            lo = mid + 1;
        } else {
            return 1;
        }
    }
    return 0;
}

/* An operation of a message applied before: counted, and it changes nothing. */
static int skip(struct gust_flow_state *s, const struct state_entry *e)
{
    if (!applied_before(s, e)) {
        return 0;
    }
    s->skipped++;
    return 1;
}

/* Marks e touched by the running message, saving it first the first time. */
static void touch(lua_State *L, struct gust_flow_state *s, struct state_entry *e)
{
    if (e->nmsgs > 0 && e->msgs[e->nmsgs - 1] == s->msg) {
        return;
    }
    s->undo = grow_array(L, s->undo, &s->cap_undo, s->nundo + 1, sizeof(*s->undo));
    e->msgs = grow_array(L, e->msgs, &e->cap_msgs, e->nmsgs + 1, sizeof(*e->msgs));
    s->undo[s->nundo++] = (struct state_undo){.entry = (size_t)(e - s->v),
                                              .json = e->json,
                                              .len = e->len,
                                              .expires_ms = e->expires_ms,
                                              .written = e->written,
                                              .nmsgs = e->nmsgs};
    e->undo_holds = 1;
    e->msgs[e->nmsgs++] = s->msg;
}

/* Replaces e's value with a copy of json[0..len) (NULL: absent). */
static void put_value(lua_State *L, struct state_entry *e, const char *json, size_t len, int64_t expires_ms)
{
    char *copy = NULL;
    if (json != NULL) {
        copy = malloc(len + 1);
        if (copy == NULL) {
            luaL_error(L, "state: not enough memory");
        }
        memcpy(copy, json, len);
        copy[len] = '\0';
    }
    if (!e->undo_holds) {
        free(e->json);
    }
    e->undo_holds = 0;
    e->json = copy;
    e->len = len;
    e->expires_ms = expires_ms;
    e->written = 1;
}

/* Whether e's value can be seen by the running message: present, and not expired at
 * its stored time (when that is unknown, nothing expires). */
static int visible_at(const struct gust_flow_state *s, const char *json, int64_t expires_ms)
{
    return json != NULL && (expires_ms == 0 || s->now_ms == 0 || s->now_ms < expires_ms);
}

static int visible(const struct gust_flow_state *s, const struct state_entry *e)
{
    return visible_at(s, e->json, e->expires_ms);
}

/* Reads json[0..len) as a JSON number into *v: all the text, finite (strtod alone
 * would also take "nan", " 1" or "0x10"). */
static int json_number(const struct gust_flow *f, const char *json, size_t len, double *v)
{
    char *end;
    *v = strtod_l(json, &end, f->enc.c_locale);
    return end == json + len && isfinite(*v) && (json[0] == '-' || (json[0] >= '0' && json[0] <= '9'));
}

/* state.get(k); upvalues: the flow, then the tags (a decoder closure). */
static int l_get(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(4));
    struct gust_flow_state *s = state_of(L, f);
    size_t len;
    const char *key = check_key(L, "state.get", &len);
    struct state_entry *e = entry(L, f, "state.get", key, len, 1);
    const char *json = e->json;
    size_t json_len = e->len;
    if (skip(s, e)) {
        json = visible_at(s, e->stored_json, e->stored_expires_ms) ? e->stored_json : NULL;
        json_len = e->stored_len;
    } else {
        touch(L, s, e);
        json = visible(s, e) ? e->json : NULL;
    }
    if (json == NULL) {
        lua_pushnil(L);
        return 1;
    }
    lua_settop(L, 1);
    if (gust_json_decode(&f->dec, json, json_len, 0) != 0) {
        return luaL_error(L, "state.get: the stored value of '%s' is not JSON: %s", key, f->dec.msg);
    }
    return 1;
}

/* state.set(k, v [, ttl]) */
static int l_set(lua_State *L)
{
    struct gust_flow *f = flow_of(L);
    struct gust_flow_state *s = state_of(L, f);
    size_t len;
    const char *key = check_key(L, "state.set", &len);
    if (lua_isnoneornil(L, 2)) {
        return luaL_error(L, "state.set: the value is nil (state.del removes a key)");
    }
    int64_t expires_ms = 0;
    if (!lua_isnoneornil(L, 3)) {
        lua_Number ttl = luaL_checknumber(L, 3);
        if (!(ttl > 0) || ttl > 1e12) {
            return luaL_error(L, "state.set: ttl must be a positive number of seconds");
        }
        if (s->now_ms == 0) {
            return luaL_error(L, "state.set: a ttl counts from meta.time, which this message does not have");
        }
        expires_ms = s->now_ms + (int64_t)ceil(ttl * 1000);
    }
    lua_settop(L, 2);
    f->enc.buf.len = 0;
    gust_json_encode(L, 2, &f->enc);
    if (f->enc.buf.len > GUST_STATE_VALUE_MAX) {
        return luaL_error(L, "state.set: the value of '%s' is %d bytes of JSON, more than %d", key,
                          (int)f->enc.buf.len, GUST_STATE_VALUE_MAX);
    }
    struct state_entry *e = entry(L, f, "state.set", key, len, 0);
    if (skip(s, e)) {
        return 0;
    }
    touch(L, s, e);
    put_value(L, e, f->enc.buf.data, f->enc.buf.len, expires_ms);
    return 0;
}

/* state.incr(k [, n]) -> the new value */
static int l_incr(lua_State *L)
{
    struct gust_flow *f = flow_of(L);
    struct gust_flow_state *s = state_of(L, f);
    size_t len;
    const char *key = check_key(L, "state.incr", &len);
    lua_Number n = luaL_optnumber(L, 2, 1);
    if (!isfinite(n)) {
        return luaL_error(L, "state.incr: the increment must be a finite number");
    }
    struct state_entry *e = entry(L, f, "state.incr", key, len, 1);
    if (skip(s, e)) {
        double stored;
        int known = visible_at(s, e->stored_json, e->stored_expires_ms) &&
                    json_number(f, e->stored_json, e->stored_len, &stored);
        lua_pushnumber(L, known ? stored : n);
        return 1;
    }
    touch(L, s, e);
    lua_Number sum = n;
    int64_t expires_ms = 0;
    if (visible(s, e)) {
        double v;
        if (!json_number(f, e->json, e->len, &v)) {
            return luaL_error(L, "state.incr: the value of '%s' is not a number", key);
        }
        sum = v + n;
        expires_ms = e->expires_ms;
    }
    char text[32];
    size_t tlen = gust_json_fmt_number(sum, text, f->enc.c_locale);
    if (tlen == 0) {
        return luaL_error(L, "state.incr: the sum for '%s' is not a finite number", key);
    }
    put_value(L, e, text, tlen, expires_ms);
    lua_pushnumber(L, sum);
    return 1;
}

/* state.del(k) */
static int l_del(lua_State *L)
{
    struct gust_flow *f = flow_of(L);
    struct gust_flow_state *s = state_of(L, f);
    size_t len;
    const char *key = check_key(L, "state.del", &len);
    struct state_entry *e = entry(L, f, "state.del", key, len, 0);
    if (skip(s, e)) {
        return 0;
    }
    touch(L, s, e);
    put_value(L, e, NULL, 0, 0);
    return 0;
}

void gust_flow_open_state(lua_State *L, struct gust_flow *f)
{
    lua_createtable(L, 0, 4);
    gust_flow_push_decoder(L, f, l_get, 1);
    lua_setfield(L, -2, "get");
    static const luaL_Reg fns[] = {{"set", l_set}, {"incr", l_incr}, {"del", l_del}};
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        lua_pushlightuserdata(L, f);
        lua_pushcclosure(L, fns[i].func, 1);
        lua_setfield(L, -2, fns[i].name);
    }
    lua_setglobal(L, "state");
}

void gust_flow_state_run_begin(struct gust_flow_state *s, int64_t now_ms, uint64_t seq)
{
    s->msg = s->run++;
    s->now_ms = now_ms;
    s->seq = seq;
    s->nundo = 0;
}

void gust_flow_state_run_end(struct gust_flow_state *s, int ok)
{
    for (size_t k = s->nundo; k-- > 0;) {
        const struct state_undo *u = &s->undo[k];
        struct state_entry *e = &s->v[u->entry];
        if (ok) {
            if (!e->undo_holds) {
                free(u->json); /* replaced: the message's own value stays */
            }
        } else {
            if (!e->undo_holds) {
                free(e->json);
            }
            e->json = u->json;
            e->len = u->len;
            e->expires_ms = u->expires_ms;
            e->written = u->written;
            e->nmsgs = u->nmsgs;
        }
        e->undo_holds = 0;
    }
    s->nundo = 0;
}

static void clear_entries(struct gust_flow_state *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free((char *)s->v[i].key.s);
        free(s->v[i].json);
        free(s->v[i].msgs);
        free(s->v[i].applied);
        free(s->v[i].stored_json);
    }
    s->n = 0;
    gust_keyidx_clear(&s->index);
}

void gust_flow_state_begin(struct gust_flow *f)
{
    struct gust_flow_state *s = &f->state;
    gust_flow_state_run_end(s, 1); /* nothing is running: keep what is there, then drop it */
    clear_entries(s);
    s->run = 0;
}

size_t gust_flow_state_writes(struct gust_flow *f, const struct gust_state_write **out)
{
    struct gust_flow_state *s = &f->state;
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct state_entry *e = &s->v[i];
        if (e->written) {
            s->out[k++] = (struct gust_state_write){.key = e->key.s,
                                                    .key_len = e->key.len,
                                                    .json = e->json,
                                                    .len = e->len,
                                                    .expires_ms = e->expires_ms,
                                                    .has_revision = e->has_revision,
                                                    .revision = e->revision,
                                                    .msgs = e->msgs,
                                                    .nmsgs = e->nmsgs,
                                                    .applied = e->applied,
                                                    .napplied = e->napplied};
        }
    }
    *out = s->out;
    return k;
}

uint64_t gust_flow_state_skipped(const struct gust_flow *f)
{
    return f->state.skipped;
}

void gust_flow_state_free(struct gust_flow_state *s)
{
    gust_flow_state_run_end(s, 1);
    clear_entries(s);
    free(s->v);
    gust_keyidx_free(&s->index);
    free(s->undo);
    free(s->out);
}
