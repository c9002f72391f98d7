/* secret("PATH#KEY"): a value from the host's secret store (host/secret/), for a flow
 * that calls an API itself or signs what it emits. Resolved while the script loads
 * (top level, or a module it requires), as a configuration is: in on_event it raises.
 * The store is found by name in the process (host/common/secret_ref.h), so the runtime
 * links nothing of the host; without one (a test runner) it raises. An
 * unresolved secret fails the load, naming the reference, never a value: the host then
 * keeps that unit from starting. */
#include <lauxlib.h>
#include <string.h>

#include "../common/secret_ref.h"
#include "flow_int.h"

static int l_secret(lua_State *L)
{
    struct gust_flow *f = lua_touserdata(L, lua_upvalueindex(1));
    size_t rlen;
    const char *ref = luaL_checklstring(L, 1, &rlen);
    if (f->loaded) {
        return luaL_error(L, "secret(\"%s\"): only while the script loads (keep the value in a local)", ref);
    }
    char val[8192], why[400];
    size_t n = 0;
    int rc = gust_secret_ref_value(ref, rlen, val, sizeof(val), &n, why, sizeof(why));
    if (rc == -2) {
        return luaL_error(L, "{secret:%s}: longer than %d bytes", ref, (int)sizeof(val) - 1);
    }
    if (rc != 0) {
        return luaL_error(L, "%s", why);
    }
    lua_pushlstring(L, val, n);
    explicit_bzero(val, n);
    return 1;
}

void gust_flow_open_secret(lua_State *L, struct gust_flow *f)
{
    lua_pushlightuserdata(L, f);
    lua_pushcclosure(L, l_secret, 1);
    lua_setglobal(L, "secret");
}
