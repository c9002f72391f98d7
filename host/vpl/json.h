/* JSON in and out.
 *
 * Decoding follows Varpulis's EventDecoder: "event_type" names the type and is not a
 * field; event time is "@timestamp" (RFC 3339), else integer "ts", else integer
 * "timestamp", else the arrival time; those keys stay fields. Top-level keys no
 * expression of the program reads are skipped while parsing, so unused parts of a
 * payload cost no memory. The decoder is a single pass of its own (no yajl: the
 * callbacks, the per-event handle and a symbol-table lookup for every key were over
 * half the engine's time); it accepts RFC 8259 JSON as the flow decoder does (well-formed
 * UTF-8, white space only space, tab, CR and LF; a lone surrogate escape becomes U+FFFD:
 * tests/vpl/SPEC_NOTES.md). It builds the event in the caller's scratch arena and keeps no
 * state between events. */
#ifndef VPL_JSON_H
#define VPL_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "symtab.h"
#include "util.h"
#include "value.h"

struct decoder;

struct decoded {
    struct vpl_event *ev; /* transient: in the arena, its strings there or in the input */
    const char *type;     /* event_type, or NULL when the payload has none */
    uint32_t type_len;
    int has_time;
    uint64_t truncated; /* fields, elements or string bytes dropped by the limits */
};

/* `syms` and `limits` are borrowed for the decoder's life. */
struct decoder *decoder_create(const struct symtab *syms, const struct vpl_limits *limits);
void decoder_destroy(struct decoder *d);

/* 0, VPL_EJSON (message in err[0..errlen)) or VPL_ENOMEM. The event's strings are
 * slices (not NUL-terminated) of json where they had no escapes, of the arena where
 * they had: json must outlive the event, as the arena must. */
int decoder_run(struct decoder *d, struct arena *a, const char *json, size_t len,
                struct decoded *out, char *err, size_t errlen);

/* The program symbol named name[0..len), or NULL: symtab_find with the decoder's
 * own table, remembering the last name asked (a feed asks for its type every event). */
const struct sym *decoder_find(struct decoder *d, const char *name, size_t len);

/* The double strtod would return for s[0..n) (an optional sign, digits with an
 * optional fraction and exponent), when that is cheap to get exactly: 1 and *out
 * set, or 0 and the caller uses strtod. */
int decimal_to_double(const char *s, size_t n, double *out);

int json_write_string(struct buf *b, const char *s, size_t n);
int json_write_value(struct buf *b, const struct vval *v);

#endif
