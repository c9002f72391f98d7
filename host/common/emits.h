/* The emits of a batch: what a unit's handler produces for the bus (a flow's emit(), a
 * relay's forwarded messages, a detect unit's alerts), kept in one arena per batch so
 * that building them costs no allocation once the arena is warm.
 *
 * Every emit's bytes (its payload, its subject, its header strings) are appended to one
 * growing buffer; each emit is a record of where they are. Clearing keeps the buffer and
 * the arrays for the next batch. A writer may also produce a payload in place
 * (gust_emits_begin/end): a flow's JSON encoder writes straight into the arena, and the
 * bus publishes from it, so a payload is written once on its way to the bus.
 *
 * Here, in common/, because both sides use it: the flow runtime writes emits, the unit
 * layer (the consumer core and its handlers) reads and publishes them.
 *
 * Threads: one set of emits belongs to one thread at a time (a unit's). */
#ifndef GUST_COMMON_EMITS_H
#define GUST_COMMON_EMITS_H

#include <stddef.h>
#include <stdint.h>

#include "gust/msg.h" /* struct gust_header */
#include "gust/sdk.h" /* struct gust_buf */

/* One emit. Every string is NUL-terminated (the payload too, after its `len` bytes)
 * and lives in the arena: read them, never free or keep them. The pointers are valid
 * until the emits are next changed (the arena may move as it grows). */
struct gust_emit {
    const char *subject;
    const char *payload; /* JSON text of `len` bytes */
    size_t len;
    const struct gust_header *headers; /* nheaders, sorted by name; NULL when none */
    size_t nheaders;
    /* The arena's own: where the emit's bytes start (the payload, then the subject,
     * then the header strings) and the index of its first header. */
    size_t at, first_header;
};

/* Where a header's name and value are in the arena. */
struct gust_emit_header_at {
    size_t name, value;
};

/* The emits of one or more events, in emit order. Owned by the caller, who zero-fills
 * it before first use and reuses it between calls. */
struct gust_emits {
    struct gust_emit *v;
    size_t n, cap;
    struct gust_buf bytes; /* the arena; bytes.len past `used` only while one is open */
    size_t used;           /* the bytes of the n emits */
    /* Every emit's headers, end to end: where their strings are, and the same as
     * pointers (what the emits' `headers` point into). */
    struct gust_emit_header_at *hat;
    struct gust_header *hv;
    size_t nh, hcap;
    uintptr_t base_bytes, base_hv; /* bytes.data and hv when the pointers were last set */
    size_t open_at;                /* gust_emits_begin: where the open emit's payload starts */
};

/* Appends a copy of `subject` (NUL-terminated), of `len` bytes of `payload` and of the
 * headers[0..nheaders) (NULL when 0), all borrowed. Returns 0 or GUST_ENOMEM, leaving
 * `e` unchanged on failure. gust_emits_push is the same without headers. */
int gust_emits_push_with_headers(struct gust_emits *e, const char *subject, const char *payload, size_t len,
                                 const struct gust_header *headers, size_t nheaders);
int gust_emits_push(struct gust_emits *e, const char *subject, const char *payload, size_t len);

/* Opens an emit whose payload the caller writes in place: append it to the returned
 * buffer (gust_buf_append, gust_buf_reserve and writing at len are all fine; nothing
 * before its len at this call may change), then gust_emits_end. A writer that fails
 * half-way (a Lua error out of an encoder) need not close it: the next begin, push,
 * truncate or gust_emits_abort drops what it wrote. */
struct gust_buf *gust_emits_begin(struct gust_emits *e);
/* Closes the open emit: the bytes written since gust_emits_begin are its payload, sent
 * to `subject` with headers[0..nheaders) (both borrowed, copied). 0 or GUST_ENOMEM (the
 * emit is dropped, `e` otherwise unchanged). */
int gust_emits_end(struct gust_emits *e, const char *subject, const struct gust_header *headers,
                   size_t nheaders);
/* Drops an emit left open (if any), making the emits readable again. */
void gust_emits_abort(struct gust_emits *e);

/* Drops the emits beyond the first n (and any open one). */
void gust_emits_truncate(struct gust_emits *e, size_t n);
/* Drops every emit, keeping the arena for reuse (unless one batch grew it past
 * GUST_EMITS_KEEP_BYTES: that much is not held on to for good). */
void gust_emits_clear(struct gust_emits *e);
/* Frees everything; `e` is zero-filled afterwards, ready for reuse. */
void gust_emits_free(struct gust_emits *e);

#define GUST_EMITS_KEEP_BYTES ((size_t)4 << 20)

#endif
