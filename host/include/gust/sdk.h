/* libgust-sdk: what plugins share, linked statically into each (and into the host).
 * `pkg-config --cflags --libs gust-plugin` gives the flags; docs/PLUGINS.md the guide.
 *
 *   gust/sdk.h     errors (gust/err.h), buffers, JSON output, checks and fields,
 *                  sink templates, clocks and
 *                  RFC 3339 time, HTTP header lines, binding an instance's config
 *   gust/source.h  the source runner: a schedule thread and publishing with back-pressure
 *   gust/sock.h    a TCP client connection, optionally TLS */
#ifndef GUST_SDK_H
#define GUST_SDK_H

#include <stddef.h>
#include <stdint.h>

#include "gust/api.h"
#include "gust/err.h"
#include "gust/schema.h"

/* --- buffers --- */

/* A growable byte buffer; {0} is an empty one. */
struct gust_buf {
    char *data;
    size_t len;
    size_t cap;
};

/* Each returns 0, or GUST_ENOMEM leaving the buffer as it was. */
int gust_buf_reserve(struct gust_buf *b, size_t extra);
int gust_buf_append(struct gust_buf *b, const void *data, size_t len);
int gust_buf_printf(struct gust_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gust_buf_free(struct gust_buf *b);

/* --- JSON --- */

/* Appends s[0..len) as a quoted JSON string. s must be valid UTF-8; quotes,
 * backslashes and control characters are escaped. Returns 0 or GUST_ENOMEM. */
int gust_json_append_string(struct gust_buf *out, const char *s, size_t len);
/* 1 when s[0..len) is valid UTF-8 (no overlongs, no surrogates, at most U+10FFFF). */
int gust_utf8_valid(const char *s, size_t len);
/* Appends s[0..len) in standard base64, quoted. */
int gust_json_append_base64(struct gust_buf *out, const unsigned char *s, size_t len);
/* Standard base64 s[0..len) (padded, no white space) decoded into a new buffer (free
 * it), its size in *out_len; NULL when malformed or out of memory. */
unsigned char *gust_base64_decode(const char *s, size_t len, size_t *out_len);

enum gust_json_kind { GUST_JSON_OBJECT = 1, GUST_JSON_ARRAY, GUST_JSON_SCALAR };

/* Checks that data[0..len) is exactly one JSON value with valid UTF-8 (white space
 * around it allowed), with yajl's event parser: no tree, no recursion, so a deep
 * document costs memory in proportion to its size, never stack. Returns its kind, or 0
 * with the reason (one line) in why. When keys is given (a NULL-terminated list), a
 * top-level object key equal to one of them is reported in *clash (borrowed from keys),
 * NULL otherwise. */
int gust_json_check(const char *data, size_t len, const char *const *keys, const char **clash, char *why,
                    size_t why_size);
/* Calls fn for each element of the JSON array in data (which gust_json_check found to
 * be an array), with the element's exact bytes. Stops when fn returns nonzero and
 * returns that. */
int gust_json_each(const char *data, size_t len, int (*fn)(void *ud, const char *elem, size_t elen),
                   void *ud);

/* Reading fields of a JSON payload in place, with nothing allocated (json_fields.c): for
 * per-message paths, where a yajl parser per message costs more than the work. It accepts
 * what yajl accepts (see json_fields.c for the two corner cases it refuses). */
enum {
    GUST_JV_NONE, GUST_JV_NULL, GUST_JV_TRUE, GUST_JV_FALSE, GUST_JV_NUMBER, GUST_JV_STRING,
    GUST_JV_CONTAINER, /* an object or an array inside the value */
    GUST_JV_OBJECT,    /* the whole value is an object (only as *root) */
};
#define GUST_JSON_FIELD_DEPTH 8
struct gust_json_field {
    const char *const *path; /* object keys from the top, NULL-terminated, at most GUST_JSON_FIELD_DEPTH */
    /* Filled by the scan: the first value at path. */
    int type;         /* GUST_JV_*: NONE when there is none */
    const char *text; /* a number or literal as written; a string's bytes between its quotes */
    size_t len;
    int escaped; /* the string holds escapes: gust_json_unescape it */
};
/* 0 when data[0..len) is one JSON value (white space around it allowed), -1 otherwise;
 * *root is its type. Fills fields (may be NULL when nfields is 0); text points into data. */
int gust_json_scan(const void *data, size_t len, struct gust_json_field *fields, size_t nfields, int *root);
/* Decodes a string's escapes (s, len from a field) into out as UTF-8 and NUL-terminates
 * it; -1 when out is too small. */
int gust_json_unescape(const char *s, size_t len, char *out, size_t outsz, size_t *outlen);

/* --- templates --- */

/* A sink key made from each message (tpl.c): literal text with placeholders
 *   {subject}       the message's subject (or what the sink's subject_fn makes of it)
 *   {payload.a.b}   field a.b of the JSON payload: a string as is (escapes decoded), a
 *                   number as written, true or false; missing, null, an object or an
 *                   array fails the message (the sink rejects it: a dead letter)
 * e.g. mqtt_out's `topic "site/{payload.site}"`, kafka_out's `key "{payload.id}"`. */
struct gust_msg;
struct gust_tpl;
/* Fills why (one line, without the key's name) on failure. */
int gust_tpl_compile(const char *spec, struct gust_tpl **out, char *why, size_t whysz);
/* How a sink writes {subject} (mqtt_out: as a topic); returns the length written, -1 when
 * out has no room. NULL: the subject as is. */
typedef int (*gust_tpl_subject_fn)(void *ud, const char *subject, char *out, size_t outsz);
/* Writes m's value into out (NUL-terminated); -1 with why filled when it cannot. */
int gust_tpl_render(const struct gust_tpl *t, const struct gust_msg *m, gust_tpl_subject_fn subject_fn, void *ud,
                    char *out, size_t outsz, char *why, size_t whysz);
void gust_tpl_free(struct gust_tpl *t);

/* --- time --- */

/* ms since the epoch (CLOCK_REALTIME), and CLOCK_MONOTONIC ms (for deadlines). */
int64_t gust_clock_wall_ms(void);
int64_t gust_clock_mono_ms(void);
/* CLOCK_MONOTONIC ns, for durations measured finely (flow timeouts, latencies). */
uint64_t gust_clock_mono_ns(void);

/* "2026-11-29T23:49:03.123Z": UTC, milliseconds. */
#define GUST_RFC3339_SIZE 32
/* Writes epoch_ms into out (NUL-terminated); returns the length (24). */
size_t gust_rfc3339_ms(int64_t epoch_ms, char out[GUST_RFC3339_SIZE]);

/* --- HTTP header lines --- */

/* NULL when line is a usable "Name: value" header as a user writes it in host.conf (a
 * name of visible characters, a colon, no line break anywhere), else what is wrong with
 * it ("is not \"Name: value\"", ...), for an error that names the key, not the value
 * (it may hold a secret). */
const char *gust_http_header_problem(const char *line);
/* 1 when line's name (up to its colon) is name, in any case: "content-type: x" is
 * "Content-Type". */
int gust_http_header_is(const char *line, const char *name);

/* --- configuration --- */

/* Binds the GUST_K_BOUND keys of a plugin type's schema from the instance's cfg into out
 * (call it from create; strings stay valid until destroy). Needs a host of ABI 1.1. */
static inline int gust_sdk_bind(const struct gust_host_api *api, const struct gust_cfg *cfg,
                                const struct gust_schema_key *schema, void *out, struct gust_err *err)
{
    if (!GUST_API_HAS(api, cfg_bind)) {
        return gust_err_set(err, GUST_EABI, "this host cannot bind configuration (it needs plugin ABI 1.1)");
    }
    return api->cfg_bind(cfg, schema, sizeof(struct gust_schema_key), out, err);
}

#endif
