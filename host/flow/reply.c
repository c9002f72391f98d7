/* reply(value [, status]): the answer to the request that waits for this event (a
 * POST /call, or a webhook with `respond flow`). The flow only keeps it: the unit
 * layer sends it, once the event's emits are stored, to where the message says the
 * request waits (gust_flow_reply). Outside a call (meta's `call` unset) it does
 * nothing and says so in the event's log: a request that gave up, a replay or a test
 * is not the script's error. */
#include <stdio.h>

#include <lauxlib.h>

#include "flow_int.h"

#define STATUS_MIN 200
#define STATUS_MAX 599

static int l_reply(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(1));
    if (f->out == NULL) {
        return luaL_error(L, "reply: only on_event can reply");
    }
    if (lua_isnone(L, 1) || lua_isnil(L, 1)) {
        return luaL_error(L, "reply: a value is needed (null for JSON null)");
    }
    int status = 200;
    if (!lua_isnoneornil(L, 2)) {
        lua_Number n = luaL_checknumber(L, 2);
        if (n != (lua_Number)(int)n || n < STATUS_MIN || n > STATUS_MAX) {
            return luaL_error(L, "reply: the status must be an integer from %d to %d", STATUS_MIN, STATUS_MAX);
        }
        status = (int)n;
    }
    if (lua_gettop(L) > 2) {
        return luaL_error(L, "reply: takes a value and a status, nothing more");
    }
    if (f->replied) {
        return luaL_error(L, "reply: this event has been replied to already");
    }
    /* Encoded now, as emit does: what the script changes afterwards is not sent, and
     * a value JSON cannot hold fails here, with the line that gave it. */
    f->enc.buf.len = 0;
    gust_json_encode(L, 1, &f->enc);
    if (!f->in_call) {
        if (f->log != NULL) {
            static const char why[] = "reply: not a call (no request waits for this event): nothing sent";
            f->log(f->log_ud, GUST_LOG_WARN, why, sizeof(why) - 1);
        }
        return 0;
    }
    f->reply.len = 0;
    if (gust_buf_append(&f->reply, f->enc.buf.data, f->enc.buf.len) != 0) {
        return luaL_error(L, "reply: not enough memory");
    }
    f->reply_status = status;
    f->replied = 1;
    return 0;
}

void gust_flow_open_reply(lua_State *L, struct gust_flow *f)
{
    lua_pushlightuserdata(L, f);
    lua_pushcclosure(L, l_reply, 1);
    lua_setglobal(L, "reply");
}

int gust_flow_reply(const struct gust_flow *f, int *status, const char **json, size_t *len)
{
    if (!f->replied) {
        return 0;
    }
    *status = f->reply_status;
    *json = f->reply.data;
    *len = f->reply.len;
    return 1;
}
