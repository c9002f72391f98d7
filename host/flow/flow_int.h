/* Internal interfaces between the files of the flow runtime; nothing outside
 * host/flow/ (and its unit tests) includes this. */
#ifndef GUST_FLOW_INT_H
#define GUST_FLOW_INT_H

#include <locale.h>
#include <stddef.h>
#include <stdint.h>

#include <lua.h>
#include <yajl/yajl_parse.h>

#include "../common/buf.h"
#include "flow.h"
#include "gust/err.h"
#include "keyidx.h"

/* Deepest nesting of arrays and objects accepted when decoding or encoding. Encoding
 * deeper than this is almost always a table that contains itself. */
#define GUST_JSON_MAX_DEPTH 200

/* The three metatables that tag decoded values live in upvalues 1..3 of the C
 * closures that decode (the event decoder and json.decode), in this order. */
enum {
    GUST_UV_ARRAY = 1,
    GUST_UV_OBJECT,
    GUST_UV_BIGNUM,
};

/* The identity of those metatables, for the encoder's checks (lua_topointer). */
struct gust_json_tags {
    const void *array, *object, *bignum;
};

/* The decoder's state, owned by the flow. It keeps its yajl handle between decodes;
 * an out-of-memory error that unwinds through yajl leaves `reusable` at 0, so the
 * next decode replaces the handle, and the flow frees it at the end. */
struct gust_json_dec {
    lua_State *L;
    yajl_handle h;
    int reusable;      /* h finished its last parse cleanly */
    locale_t c_locale; /* numbers parse the same whatever the process locale */
    int depth;
    int want_object;  /* the top-level value must be an object */
    int done;         /* the top-level value is complete */
    const char *fail; /* why a callback stopped the parse */
    /* Per open container: its kind and how many members it has so far. */
    unsigned char is_array[GUST_JSON_MAX_DEPTH];
    int count[GUST_JSON_MAX_DEPTH];
    /* Per depth, [0] object, [1] array: the size of the last one closed. */
    int size_hint[GUST_JSON_MAX_DEPTH][2];
    char *fixed; /* a copy of the text with lone surrogate escapes replaced; owned */
    size_t fixed_cap;
    char msg[200];
};

/* Decodes `len` bytes of JSON into a Lua value pushed on d->L, tagging tables and
 * boxing big numbers with the metatables in the running C closure's upvalues. Must be
 * called from such a closure (it may raise a Lua memory error). Returns 0, or
 * GUST_EINVAL with the reason in d->msg (the Lua stack then holds partial values
 * above its entry top, which the caller discards). */
int gust_json_decode(struct gust_json_dec *d, const char *s, size_t len, int want_object);
/* Frees the yajl handle. */
void gust_json_dec_release(struct gust_json_dec *d);

/* The encoder's state, owned by the flow: its buffer keeps its capacity between
 * calls (len = 0 starts a new text). */
struct gust_json_enc {
    struct gust_json_tags tags;
    struct gust_buf buf;
    locale_t c_locale;
    size_t max; /* the longest text (0: no bound): longer raises an error */
    /* Called every so many tables (NULL: never): raises the timeout when it is due. */
    void (*check)(lua_State *L, void *ud);
    void *check_ud;
};

/* Appends the JSON text of the value at `idx` to enc->buf. Raises a Lua error when the
 * value cannot be encoded (the buffer then holds a partial text). */
void gust_json_encode(lua_State *L, int idx, struct gust_json_enc *enc);
/* The same into `out` (emit() writes into the emits arena): enc->max bounds the text
 * this call appends, not what out held before. */
void gust_json_encode_into(lua_State *L, int idx, struct gust_json_enc *enc, struct gust_buf *out);

/* Writes the JSON text of a finite double into out (at least 32 bytes) and returns
 * its length; returns 0 for NaN and infinities, which JSON cannot hold. */
size_t gust_json_fmt_number(double x, char *out, locale_t c_locale);

/* The bignum metamethods: __tostring, __eq and __concat. */
int gust_json_lua_bignum_tostring(lua_State *L);
int gust_json_lua_bignum_eq(lua_State *L);
int gust_json_lua_bignum_concat(lua_State *L);

/* Opens the libraries a flow may use and removes or replaces what could escape the
 * sandbox. Raises a Lua error on failure (call it protected). */
int gust_flow_open_sandbox(lua_State *L);

/* ---- durable state staging (state.c) ---- */

struct state_entry {
    struct gust_key key; /* first, for the index; NUL-terminated */
    char *json;          /* the value as the batch sees it now; NULL: absent */
    size_t len;
    int64_t expires_ms;
    int written;      /* a message of the batch set or deleted it */
    int has_revision; /* the store was read */
    int undo_holds;   /* json is also the running message's undo record's (do not free) */
    uint64_t revision;
    size_t *msgs; /* messages that touched it */
    size_t nmsgs, cap_msgs;
    /* What the store said was applied to it already (state.h), and, when that is not
     * empty, the value as stored, for the messages among them. */
    uint64_t *applied;
    size_t napplied;
    char *stored_json; /* NULL: absent */
    size_t stored_len;
    int64_t stored_expires_ms;
};

/* How an entry was before the running message first touched it. */
struct state_undo {
    size_t entry;
    char *json;
    size_t len;
    int64_t expires_ms;
    int written;
    size_t nmsgs;
};

struct gust_flow_state {
    struct gust_state_store store;
    int has_store;
    struct state_entry *v; /* in the order keys were first touched */
    size_t n, cap;
    struct gust_keyidx index;
    struct state_undo *undo; /* the running message's first touches */
    size_t nundo, cap_undo;
    size_t msg;     /* the running message's batch index */
    size_t run;     /* runs since the batch began */
    int64_t now_ms; /* the running message's stored time (0: unknown) */
    uint64_t seq;   /* the running message's stream sequence (0: unknown) */
    uint64_t skipped; /* operations that were no-ops: their message was applied already */
    struct gust_state_write *out;
    size_t cap_out;
};

/* ---- bounds (flow_alloc.c, flow_pattern.c, flow_caps.c) ---- */

/* The Lua heap of one flow, counted by its allocator (gust_flow_alloc, a lua_Alloc
 * whose ud is this struct). */
struct gust_flow_alloc {
    size_t used, peak;
    size_t max;           /* memory_max: refuse what would go over it (0: no bound) */
    uint64_t deadline_ns; /* while a run is on: refuse large allocations after it */
    uint64_t refused;     /* allocations refused for max ... */
    uint64_t late;        /* ... and for the deadline */
};
void *gust_flow_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* Installs the matcher in place of string.find, match, gmatch and gsub. */
void gust_flow_open_patterns(lua_State *L, struct gust_flow *f);
/* Installs the bounded string.rep and table.concat, table.sort through Lua, and a
 * collectgarbage that cannot stop the collector. */
void gust_flow_open_caps(lua_State *L, struct gust_flow *f);
/* Raises the flow's timeout error when its deadline has passed (from a C function
 * called by the script). */
void gust_flow_check_deadline(lua_State *L, struct gust_flow *f);
/* The most bytes one call may build (a string, a JSON text). */
size_t gust_flow_build_max(const struct gust_flow *f);

/* ---- the flow ---- */

struct gust_flow {
    lua_State *L; /* NULL after a rebuild that failed (rebuild_error says why) */
    char *path;
    char *text; /* the script's text, kept to rebuild the state (owned) */
    size_t text_len;
    struct gust_flow_alloc alloc;
    size_t build_max;
    uint64_t memory_failures; /* runs that went over memory_max */
    char *rebuild_error;
    char *source;
    char *lua_path;
    long timeout_ms;
    uint64_t deadline_ns;
    int timed_out;    /* the hook raised the timeout during this call */
    int ref_on_event; /* registry references */
    int ref_decode_event;
    int ref_traceback;
    int ref_loaded;      /* require's modules by name (modules.c) */
    int wants_meta;      /* on_event takes a second argument */
    int modules_loading; /* modules whose chunk is running (marked in ref_loaded) */
    int loaded;          /* the script has run: secret() refuses from now on (flow_secret.c) */
    const char *in;      /* the event being decoded and what is known of it; borrowed */
    size_t in_len;       /* during a run */
    const struct gust_flow_meta *in_meta;
    struct gust_emits *out; /* where emit() appends; non-NULL only during a run */
    struct gust_json_dec dec;
    struct gust_json_enc enc;
    struct gust_tables *tables; /* a reference, or NULL */
    gust_flow_log_fn log;
    void *log_ud;
    struct gust_buf line;     /* a log line being built ... */
    struct gust_buf line_out; /* ... and made safe */
    struct gust_buf headers;  /* an emit's headers being checked */
    int in_call;              /* during a run: a request waits for this event's reply */
    int replied;              /* the last run called reply() in a call ... */
    int reply_status;         /* ... with this status ... */
    struct gust_buf reply;    /* ... and this JSON text */
    struct gust_flow_state state;
};

/* Pushes the closures' common upvalues the decoders want: the three tag metatables
 * (at mt_base..mt_base+2 on the stack) and the flow, then the C closure. */
void gust_flow_push_decoder(lua_State *L, struct gust_flow *f, lua_CFunction fn, int mt_base);

/* Each sets up one part of the script's world as globals; called from the protected
 * setup with the tag metatables at stack indices 1..3. Raise Lua errors on failure. */
void gust_flow_open_state(lua_State *L, struct gust_flow *f);
void gust_flow_open_require(lua_State *L, struct gust_flow *f);
void gust_flow_open_tables(lua_State *L, struct gust_flow *f);
void gust_flow_open_log(lua_State *L, struct gust_flow *f);
void gust_flow_open_reply(lua_State *L, struct gust_flow *f);
/* flow_secret.c: secret("PATH#KEY"), while the script loads. */
void gust_flow_open_secret(lua_State *L, struct gust_flow *f);

/* Clears the marks of modules whose loading an error interrupted; called before each
 * call into the script. */
void gust_flow_modules_reset(lua_State *L, struct gust_flow *f);

/* Replaces the function on top of the stack with a wrapper that takes the event and
 * the values gust_flow_push_meta pushes, and calls it with the event and meta. */
void gust_flow_wrap_on_event(lua_State *L);
/* Pushes what the wrapper takes after the event (meta NULL: nothing known); returns
 * how many. May raise a memory error (call it protected). */
int gust_flow_push_meta(lua_State *L, const struct gust_flow_meta *meta);
/* Whether the function at idx takes meta: a second parameter, or any number of them.
 * Only then does a run build meta, which costs a table and its strings per event. Uses
 * the debug library (LuaJIT's C API does not tell), opened for this and removed. */
int gust_flow_wants_meta(lua_State *L, int idx);

/* Reads emit()'s options table at idx into `headers` (an array of struct gust_header
 * sorted by name, whose strings are the table's own: valid while it is on the stack);
 * returns how many. Raises a Lua error naming the problem. */
size_t gust_flow_emit_options(lua_State *L, int idx, struct gust_buf *headers);

/* The state staging around each run: run_begin before on_event (message index, stored
 * time and stream sequence), run_end after it (ok 0: undo what the message did). */
void gust_flow_state_run_begin(struct gust_flow_state *s, int64_t now_ms, uint64_t seq);
void gust_flow_state_run_end(struct gust_flow_state *s, int ok);
void gust_flow_state_free(struct gust_flow_state *s);

#endif
