/* The flow runtime: one LuaJIT state running one user script.
 *
 * A flow script returns a table:
 *
 *     return {
 *       source = "ev.orders",              -- optional: the subject it consumes
 *       on_event = function(ev, meta)      -- ev: the event decoded into Lua tables
 *         emit("ev.orders.out", { id = ev.id, seen = meta.time })
 *       end,
 *     }
 *
 * The script sees the base, table, string, math and bit libraries (no io, os, ffi,
 * jit, debug, package, dofile/loadfile, string.dump; load/loadstring accept text
 * only; nothing reads a clock) plus the bounds that keep one call from running past
 * the timeout: string.find/match/gmatch/gsub (and their method forms) are Gust's own
 * matcher with LuaJIT's results, which checks the clock as it goes; string.rep,
 * table.concat, gsub and JSON texts build at most GUST_FLOW_BUILD_MAX bytes (an
 * error beyond); table.sort compares through Lua; collectgarbage takes "collect",
 * "count" and "step" only. Plus:
 *
 *   meta                  on_event's second argument, a fresh table per event:
 *                         subject, seq (stream sequence), time (when the stream
 *                         stored the message, ms since the epoch), time_rfc3339
 *                         ("2026-11-29T23:49:03.123Z", UTC), attempt (1 on the first
 *                         delivery), unit, headers (name -> value; a name given more
 *                         than once has its values joined by ", "). A field the
 *                         caller does not know is nil (headers is then {}).
 *   emit(subject, table [, {headers = {name = value, ...}}])
 *                         encode `table` as JSON now and queue it for `subject`, with
 *                         those headers; raises an error for an invalid subject (empty
 *                         token, wildcard, space or control character), a value JSON
 *                         cannot hold (function, NaN, infinity, cycle, bad UTF-8), an
 *                         unknown option, or a bad header (a name that is empty, has
 *                         ':', spaces, control or non-ASCII characters, or starts with
 *                         "Nats-", which the bus reserves; a value that is not a string
 *                         or holds CR, LF or NUL; more than GUST_EMIT_MAX_HEADERS, or
 *                         more than GUST_EMIT_MAX_HEADER_BYTES in all)
 *   null                  the JSON null (a sentinel, distinct from nil)
 *   array(t)              marks t as a JSON array (so an empty t encodes as [])
 *                         and returns it
 *   json.encode(v)        v as JSON text; json.decode(s) the value of s, or
 *                         nil plus a message; json.null and json.array as above
 *   state.get(k)          the value of key k (a string) in the flow's durable state,
 *                         decoded (a copy: change it with state.set), or nil;
 *   state.set(k, v [, ttl])  stages v (any JSON value but nil; ttl: seconds after the
 *                         message's meta.time when it expires); state.incr(k [, n])
 *                         adds n (default 1) to a number (absent: 0) and returns the
 *                         sum, keeping the key's expiry; state.del(k). See state.h
 *                         (a redelivered message the store says was applied to a key
 *                         already changes nothing there). Without a store
 *                         (opts.state NULL) these raise an error.
 *   require(name)         loads lua_path/name.lua (dots in name are directories;
 *                         names are letters, digits, '_' and '-'), text only, in this
 *                         same sandbox, once per flow; returns what the module returns
 *   tables.NAME[key]      the row of lookup table NAME (tables.h) as a fresh table, or
 *                         nil; #tables.NAME its number of rows; unknown NAME: an error
 *   log.info(...), log.warn(...), log.error(...)
 *                         one log line of the arguments (strings as they are, other
 *                         values as JSON, else tostring) joined by spaces; control
 *                         characters and invalid UTF-8 are escaped (\n, \xNN) and the
 *                         line is cut at GUST_FLOW_LOG_MAX bytes; print(...) is
 *                         log.info(...)
 *
 * JSON <-> Lua, both directions:
 *   - objects and arrays become tables tagged with a metatable, so [] stays [] and
 *     {} stays {} when re-encoded; a table tagged as an array encodes t[1..#t] (use
 *     null, not nil, for holes) and one tagged as an object all its keys; an
 *     untagged table encodes as an array when its
 *     keys are exactly 1..n (n > 0) and as an object otherwise (so an untagged
 *     empty table is {}); integral number keys of an object become strings;
 *   - integers within +-2^53 are Lua numbers; larger integers, and numbers a double
 *     cannot hold, overflowing to infinity (1e400) or underflowing to zero (1e-400),
 *     become a "bignum": an immutable userdata that keeps the original text, encodes
 *     back verbatim, converts with tostring() and `..`, and compares equal (==) to a
 *     bignum with the same text;
 *   - other numbers are doubles, rounded to the nearest (a subnormal such as 5e-324
 *     included), and -0 stays -0; an integral double within +-2^53 prints as an
 *     integer (347, 1000000000000000, -0), any other as the shortest text that reads
 *     back as the same double (70.7, 4.5, 1764400000000.123, 1e+300);
 *   - input must be JSON as RFC 8259 has it: UTF-8 that is well formed (no overlong
 *     form, no surrogate, nothing above U+10FFFF), white space only space, tab, CR and
 *     LF, nothing after the value (a string still open there included); anything else
 *     is refused as invalid JSON. A \u escape of a lone surrogate (valid JSON, but no
 *     character) becomes U+FFFD, the replacement character, and nothing around it is
 *     lost; the VPL decoder follows the same rule;
 *   - strings pass through unchanged otherwise, and are checked on output too: what a
 *     flow emits is always well-formed UTF-8; object key order is not kept.
 *
 * Threads: a flow belongs to one thread at a time; different flows share nothing
 * but their (immutable) lookup tables and may run on different threads at once. */
#ifndef GUST_FLOW_H
#define GUST_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "../common/emits.h" /* struct gust_emits: where emit() writes */
#include "gust/err.h"
#include "gust/plugin.h" /* struct gust_header, enum gust_log_level */
#include "state.h"

#define GUST_EMIT_MAX_HEADERS 64
#define GUST_EMIT_MAX_HEADER_BYTES 8192 /* names and values of one emit, in all */
#define GUST_FLOW_LOG_MAX 1024          /* bytes of one log line */
/* The most one call may build: a string of string.rep, table.concat or gsub, a JSON
 * text (emit, json.encode); memory_max when that is smaller. */
#define GUST_FLOW_BUILD_MAX ((size_t)256 << 20)

struct gust_tables;

/* Where a flow's log lines go: level is an enum gust_log_level (ERROR, WARN, INFO);
 * text is text_len bytes of valid UTF-8 without control characters, NUL-terminated.
 * Called on the flow's thread, during gust_flow_create (the script's top level) or
 * gust_flow_run. */
typedef void (*gust_flow_log_fn)(void *ud, int level, const char *text, size_t text_len);

struct gust_flow_opts {
    const char *script_path;              /* borrowed; copied by gust_flow_create */
    const char *script_text;              /* NULL: read script_path; else the script itself
                                             (script_len bytes, borrowed), named script_path */
    size_t script_len;
    long timeout_ms;                      /* limit for one on_event call (and the script's load); 0: 1000 */
    size_t memory_max;                    /* bound of the Lua heap in bytes; 0: none */
    const char *lua_path;                 /* require's directory (copied); NULL: require finds nothing */
    struct gust_tables *tables;           /* lookup tables (the flow takes a reference); NULL: none */
    const struct gust_state_store *state; /* copied; NULL: no durable state */
    gust_flow_log_fn log;                 /* NULL: log lines are dropped */
    void *log_ud;
};

/* What the caller knows of the message it runs, for the script's `meta`. Every field
 * is borrowed for the call; a zero or NULL field is unknown (nil in meta). */
struct gust_flow_meta {
    const char *subject;
    uint64_t seq;    /* stream sequence */
    int64_t time_ms; /* when the stream stored it, ms since the epoch */
    uint32_t attempt;
    const char *unit;
    const struct gust_header *headers;
    size_t nheaders;
    int call; /* a request waits for the event's reply (reply() keeps it; else it only logs) */
};

struct gust_flow;

/* Loads and runs the script once. Fails with GUST_ECONFIG and a message naming
 * file:line on a syntax error, a runtime error (a module that fails to load
 * included), a load that runs past the timeout, or a returned value that is not a
 * table with an on_event function (or has a `source` that is not a string);
 * GUST_ENOMEM when out of memory. On success *out is a new flow owned by the caller
 * (free it with gust_flow_destroy). `opts` is borrowed, `err` may be NULL. */
int gust_flow_create(const struct gust_flow_opts *opts, struct gust_flow **out, struct gust_err *err);

/* Whether on_event takes meta (a second parameter, or ...): only then do the caller's
 * message headers matter. */
int gust_flow_uses_meta(const struct gust_flow *f);

/* The `source` field of the script's table, or NULL. Owned by the flow. */
const char *gust_flow_source(const struct gust_flow *f);

/* Decodes one event (`json`, `len` bytes, borrowed, need not be NUL-terminated),
 * calls on_event(ev, meta) with `meta` (borrowed; NULL: nothing known) and appends
 * what it emits to `out` (borrowed). Returns:
 *   0             success (it may have emitted nothing);
 *   GUST_EINVAL   the input is not one valid JSON object (UTF-8 checked): the script
 *                 did not run, retrying cannot help, dead-letter it at once;
 *   GUST_ECONFIG  the script failed: a Lua error (from error(), a bad emit, ...);
 *                 err->msg holds the message with its file:line and a traceback;
 *   GUST_ETIMEOUT the script ran past timeout_ms and was stopped (whatever it ran:
 *                 string patterns, string.rep, table.sort, json.encode included);
 *   GUST_ENOMEM   out of memory, or the Lua heap went over memory_max: the Lua
 *                 state is then rebuilt (its globals start afresh).
 * Any code but 0 and GUST_EINVAL is a failure of the script on this event (a state
 * store that cannot be read included): retry, then dead-letter. On any failure the
 * emits of this event are removed from `out` (those of earlier calls stay) and its
 * state writes are undone. The flow stays usable after every failure. */
int gust_flow_run(struct gust_flow *f, const char *json, size_t len, const struct gust_flow_meta *meta,
                  struct gust_emits *out, struct gust_err *err);

/* After a gust_flow_run that returned 0: 1 when the script called reply(value [,
 * status]) in a call, with the status (200 unless given) and the value's JSON text
 * (owned by the flow, valid until its next run); 0 when it did not. */
int gust_flow_reply(const struct gust_flow *f, int *status, const char **json, size_t *len);

/* Starts a batch of durable state (state.h): forgets what the last batch staged and
 * read. The i-th gust_flow_run after it is message i of the batch. */
void gust_flow_state_begin(struct gust_flow *f);
/* The writes the batch has staged, in the order their keys were first touched; *out
 * is owned by the flow (valid as state.h says). Returns their number. */
size_t gust_flow_state_writes(struct gust_flow *f, const struct gust_state_write **out);

/* State operations that were no-ops because their message had been applied to the key
 * before (state.h), since the flow was made. */
uint64_t gust_flow_state_skipped(const struct gust_flow *f);

/* The bytes of the flow's Lua heap now, and the runs that failed for taking it over
 * memory_max (each then rebuilt the Lua state: the script's top level ran again;
 * durable state is in the store and stays). On the flow's thread. */
size_t gust_flow_heap_bytes(const struct gust_flow *f);
/* A full garbage collection: what a burst of events left in the Lua heap goes back to
 * the allocator (the flow's unit calls it once it is quiet). On the flow's thread. */
void gust_flow_collect(struct gust_flow *f);
uint64_t gust_flow_memory_failures(const struct gust_flow *f);

/* Closes the Lua state and frees the flow. NULL is a no-op. */
void gust_flow_destroy(struct gust_flow *f);

/* The golden-test runner behind `gust test-flow`. Each case file is a JSON object:
 *   "input"          the event (an object), required;
 *   "expect_emits"   [{"subject": s, "payload": {...}, "headers": {name: value}}...]
 *                    (headers optional: when given, exactly those), or
 *   "expect_error"   a substring of the error (of the run or of loading the script);
 *   "meta"           {"subject", "seq", "time" (ms), "attempt", "unit", "headers"}
 *                    (defaults: attempt 1, unit "test", the others unknown);
 *   "state"          the durable state before the event: {key: value};
 *   "expect_state"   the whole state after the event's writes are committed;
 *   "tables"         lookup tables for the case: {name: object or array of objects},
 *                    with "table_keys": {name: key field} for arrays;
 *   "expect_logs"    [{"level": "info"|"warn"|"error", "text": "..."}], exactly;
 *   "expect_reply"   {"body": any JSON, "status": 200..599 (default 200)}: the event runs
 *                    as a call and must reply() exactly that; null: as a call, no reply;
 *   "timeout_ms", "memory_max" (bytes; default none), "description".
 * Emitted payloads, headers, logs and state compare exactly: numbers by their text,
 * strings by every byte (\u0000 included); only object member order is free. Each
 * case runs on a fresh flow. Prints `PASS name` or `FAIL name: why` per case (a
 * failing case's log lines after it), then `N passed, N failed`; returns 0 when all
 * pass, 1 when one fails (a case file that is missing or malformed fails too). */
struct gust_flow_test_opts {
    const char *lua_path; /* NULL: the directory lib/ beside the script */
    /* Adds the lookup tables of a configuration to a case's set, skipping the names
     * the case gives itself (gust_tables_has); NULL: none. */
    int (*load_tables)(void *ud, struct gust_tables *t, struct gust_err *err);
    void *ud;
};
int gust_flow_test_run(const struct gust_flow_test_opts *opts, const char *script, char *const *cases,
                       int ncases);
/* argv[0] is the command name, then [--lua-path DIR] SCRIPT CASE.json...; returns
 * what gust_flow_test_run returns, or 2 on bad usage. */
int gust_flow_test_main(int argc, char **argv);

#endif
