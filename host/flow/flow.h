/* The flow runtime: one LuaJIT state running one user script.
 *
 * A flow script returns a table:
 *
 *     return {
 *       source = "ev.orders",              -- optional: the subject it consumes
 *       on_event = function(ev)            -- ev: the event decoded into Lua tables
 *         emit("ev.orders.out", { id = ev.id })
 *       end,
 *     }
 *
 * The script sees the base, table, string, math and bit libraries (no io, os, ffi,
 * jit, require, debug, dofile/loadfile, string.dump; load/loadstring accept text
 * only) plus:
 *
 *   emit(subject, table)  encode `table` as JSON now and queue it for `subject`;
 *                         raises an error for an invalid subject (empty token,
 *                         wildcard, space or control character) or a value JSON
 *                         cannot hold (function, NaN, infinity, cycle, bad UTF-8)
 *   null                  the JSON null (a sentinel, distinct from nil)
 *   array(t)              marks t as a JSON array (so an empty t encodes as [])
 *                         and returns it
 *   json.encode(v)        v as JSON text; json.decode(s) the value of s, or
 *                         nil plus a message; json.null and json.array as above
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
 * and may run on different threads at once. */
#ifndef GUST_FLOW_H
#define GUST_FLOW_H

#include <stddef.h>

#include "gust/err.h"

/* One message produced by emit(). Both strings are NUL-terminated and owned by the
 * struct gust_emits holding them: the caller reads them and never frees them. */
struct gust_emit {
    char *subject;
    char *payload; /* JSON text of `len` bytes */
    size_t len;
};

/* The emits of one or more events, in emit order. Owned by the caller, who zero-fills
 * it before first use and reuses it between calls. */
struct gust_emits {
    struct gust_emit *v;
    size_t n, cap;
};

/* Appends a copy of `subject` (NUL-terminated) and of `len` bytes of `payload`, both
 * borrowed; for units that emit without a script (a relay). Returns 0 or
 * GUST_ENOMEM, leaving `e` unchanged on failure. */
int gust_emits_push(struct gust_emits *e, const char *subject, const char *payload, size_t len);
/* Frees every emit's strings and sets n to 0, keeping the array for reuse. */
void gust_emits_clear(struct gust_emits *e);
/* Frees everything; `e` is zero-filled afterwards, ready for reuse. */
void gust_emits_free(struct gust_emits *e);

struct gust_flow_opts {
    const char *script_path; /* borrowed; copied by gust_flow_create */
    long timeout_ms;         /* limit for one on_event call (and the script's load); 0: 1000 */
};

struct gust_flow;

/* Loads and runs the script once. Fails with GUST_ECONFIG and a message naming
 * file:line on a syntax error, a runtime error, a load that runs past the timeout, or
 * a returned value that is not a table with an on_event function (or has a `source`
 * that is not a string); GUST_ENOMEM when out of memory. On success *out is a new
 * flow owned by the caller (free it with gust_flow_destroy). `opts` is borrowed, `err`
 * may be NULL. */
int gust_flow_create(const struct gust_flow_opts *opts, struct gust_flow **out, struct gust_err *err);

/* The `source` field of the script's table, or NULL. Owned by the flow. */
const char *gust_flow_source(const struct gust_flow *f);

/* Decodes one event (`json`, `len` bytes, borrowed, need not be NUL-terminated),
 * calls on_event and appends what it emits to `out` (borrowed). Returns:
 *   0             success (it may have emitted nothing);
 *   GUST_EINVAL   the input is not one valid JSON object (UTF-8 checked): the script
 *                 did not run, retrying cannot help, dead-letter it at once;
 *   GUST_ECONFIG  the script failed: a Lua error (from error(), a bad emit, ...);
 *                 err->msg holds the message with its file:line and a traceback;
 *   GUST_ETIMEOUT the script ran past timeout_ms and was stopped;
 *   GUST_ENOMEM   out of memory.
 * Any code but 0 and GUST_EINVAL is a failure of the script on this event: retry,
 * then dead-letter. On any failure the emits of this event are removed from `out`
 * (those of earlier calls stay). The flow stays usable after every failure. */
int gust_flow_run(struct gust_flow *f, const char *json, size_t len, struct gust_emits *out,
                  struct gust_err *err);

/* Closes the Lua state and frees the flow. NULL is a no-op. */
void gust_flow_destroy(struct gust_flow *f);

/* The golden-test runner behind `gust test-flow`: argv[0] is the command name, then
 * SCRIPT CASE.json... Each case is {"input": {...}, "expect_emits": [{"subject": s,
 * "payload": {...}}...]} or {"input": {...}, "expect_error": "substring"}, with an
 * optional "timeout_ms" and "description"; expect_error also matches an error loading
 * the script. Prints `PASS name` or `FAIL name: why` per case, then
 * `N passed, N failed`; returns 0 when all pass, 1 when one fails, 2 on bad usage. */
int gust_flow_test_main(int argc, char **argv);

#endif
