/* Internal interfaces between the files of the flow runtime; nothing outside
 * host/flow/ (and its unit tests) includes this. */
#ifndef GUST_FLOW_INT_H
#define GUST_FLOW_INT_H

#include <locale.h>
#include <stddef.h>

#include <lua.h>
#include <yajl/yajl_parse.h>

#include "../common/buf.h"
#include "gust/err.h"

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
};

/* Appends the JSON text of the value at `idx` to enc->buf. Raises a Lua error when the
 * value cannot be encoded (the buffer then holds a partial text). */
void gust_json_encode(lua_State *L, int idx, struct gust_json_enc *enc);

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

#endif
