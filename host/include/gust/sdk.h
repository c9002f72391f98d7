/* libgust-sdk: what plugins share, linked statically into each (and into the host).
 * `pkg-config --cflags --libs gust-plugin` gives the flags; docs/PLUGINS.md the guide.
 *
 *   gust/sdk.h     errors (gust/err.h), buffers, JSON output, checks and fields,
 *                  sink templates, HMAC signatures, clocks and
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

/* v in decimal at out (room for 20 bytes; no NUL): the count of digits. For the paths
 * that write a number per message, where snprintf's parsing of its format shows. */
static inline size_t gust_u64_dec(uint64_t v, char *out)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        out[i] = tmp[n - 1 - i];
    }
    return n;
}

/* --- files --- */

/* Appends the contents of path to out. Returns 0, GUST_EIO (errno says why) or
 * GUST_ENOMEM; out keeps what it had read. */
int gust_file_read(const char *path, struct gust_buf *out);

/* --- JSON --- */

/* Appends s[0..len) as a quoted JSON string. s must be valid UTF-8; quotes,
 * backslashes and control characters are escaped. Returns 0 or GUST_ENOMEM. */
int gust_json_append_string(struct gust_buf *out, const char *s, size_t len);
/* 1 when s[0..len) is valid UTF-8 (no overlongs, no surrogates, at most U+10FFFF). */
int gust_utf8_valid(const char *s, size_t len);
/* Appends s[0..len) in standard base64 (padded), quoted. */
int gust_json_append_base64(struct gust_buf *out, const unsigned char *s, size_t len);
/* Appends s[0..len) in standard base64 (padded), unquoted. Returns 0 or GUST_ENOMEM. */
int gust_base64_append(struct gust_buf *out, const unsigned char *s, size_t len);
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
 *   {subject.N}     token N of the subject, from 0 ({subject.1} of ev.orders.fr: orders)
 *   {payload.a.b}   field a.b of the JSON payload: a string as its text (escapes
 *                   decoded), a number as written (7, not 7.0), anything else (true,
 *                   false, null, an object, an array) as compact JSON
 *   {env.X}         the environment variable X, read once by gust_tpl_compile (unset
 *                   without a default: a compile error)
 *   {NAME:-text}    any of them with a default, for a missing field or token (or a
 *                   null field)
 * A missing value without a default fails the message (the sink rejects it: a dead
 * letter, with the reason). A value holding '{' is quoted in host.conf (a bare word ends
 * at '{'). e.g. mqtt_out's `topic "site/{payload.site}"`, http_out's
 * `url "http://api/orders/{payload.country}"`, kafka_out's `key "{payload.id}"`. */
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
/* gust_tpl_render_as's flags: how the values (not the template's own text) are written. */
enum {
    GUST_TPL_URL = 1,    /* percent-encoded, all but A-Z a-z 0-9 - . _ ~ (a path segment, a
                            query value: "a/b c" is a%2Fb%20c) */
    GUST_TPL_HEADER = 2, /* refused when holding CR, LF or NUL (it would end a header line) */
};
/* gust_tpl_render with flags (GUST_TPL_*; 0 is gust_tpl_render). */
int gust_tpl_render_as(const struct gust_tpl *t, const struct gust_msg *m, int flags, gust_tpl_subject_fn subject_fn,
                       void *ud, char *out, size_t outsz, char *why, size_t whysz);
void gust_tpl_free(struct gust_tpl *t);

/* --- time --- */

/* ms since the epoch (CLOCK_REALTIME), and CLOCK_MONOTONIC ms (for deadlines). */
int64_t gust_clock_wall_ms(void);
int64_t gust_clock_mono_ms(void);
/* CLOCK_MONOTONIC ns, for durations measured finely (flow timeouts, latencies). */
uint64_t gust_clock_mono_ns(void);
/* ns since the epoch (CLOCK_REALTIME), for span times. */
int64_t gust_clock_wall_ns(void);
/* Sets *at to the CLOCK_REALTIME time ms from now: a deadline for pthread_cond_timedwait,
 * whose default clock that is. */
struct timespec;
void gust_clock_deadline(int64_t ms, struct timespec *at);

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

/* --- signatures (hmac.c) --- */

/* The one HMAC of Gust: webhooks verify incoming signatures with it, http_out signs its
 * requests with it. */
#define GUST_HMAC_MAX 32 /* SHA-256's size; SHA-1's is 20 */
/* HMAC-SHA256 (HMAC-SHA1 with sha1) under key[0..keylen) of the concatenation of
 * parts[i][0..lens[i]), i < n, into mac. Returns the MAC's length, 0 when OpenSSL failed. */
size_t gust_hmac(const unsigned char *key, size_t keylen, int sha1, const char *const *parts, const size_t *lens,
                 size_t n, unsigned char mac[GUST_HMAC_MAX]);
/* A Standard Webhooks secret as its text is written, "whsec_<base64>" (or the base64
 * alone), decoded into a new buffer (wipe and free it), its size in *out_len; NULL when
 * it is not that (or empty, or out of memory). */
unsigned char *gust_whsec_decode(const char *text, size_t len, size_t *out_len);
/* Appends s[0..len) as lowercase hex. Returns 0 or GUST_ENOMEM. */
int gust_hex_append(struct gust_buf *out, const unsigned char *s, size_t len);

/* --- rate limits --- */

/* The one rate limiter of the sinks (http_out's `rate`; mqtt_out and the broker sinks
 * can take it as it is). Not thread-safe: one per sender, or behind the caller's lock.
 * It limits one process: a cluster of P processes sharing a consumer sends up to P times
 * the rate (give each process its share). */

/* "200/s", "10/m", "5/h", "2.5/s": the rate in events per second into *per_sec.
 * -1 when it is not such a rate (a positive number, '/', s, m or h). */
int gust_rate_parse(const char *text, double *per_sec);

/* A token bucket: per_sec tokens a second, holding up to burst (at least 1), full at
 * start. {0} is not a bucket: init it. */
struct gust_bucket {
    double tokens, burst, per_ms;
    int64_t at_ms;
};
void gust_bucket_init(struct gust_bucket *b, double per_sec, double burst, int64_t now_ms);
/* Takes n tokens at now_ms (a monotonic clock: gust_clock_mono_ms) and returns 0, or
 * takes nothing and returns how many ms to wait before they are there (>= 1). n above
 * the burst is taken from a full bucket, leaving it in debt (the rate still holds). */
int64_t gust_bucket_take(struct gust_bucket *b, double n, int64_t now_ms);

/* One bucket per key (a rendered `rate_key`), the max_keys used last kept (LRU); a key
 * pushed out comes back with a full bucket. */
struct gust_limiter;
/* Returns 0, GUST_EINVAL (per_sec <= 0, max_keys 0) or GUST_ENOMEM. */
int gust_limiter_create(struct gust_limiter **out, double per_sec, double burst, size_t max_keys);
/* gust_bucket_take on key[0..len)'s bucket (made full when new). */
int64_t gust_limiter_take(struct gust_limiter *l, const char *key, size_t len, double n, int64_t now_ms);
/* How many keys it holds now. */
size_t gust_limiter_keys(const struct gust_limiter *l);
/* NULL is a no-op. */
void gust_limiter_destroy(struct gust_limiter *l);

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
