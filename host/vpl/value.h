/* Values and events.
 *
 * A struct vval is a 16-byte view: scalars inline, strings/arrays/maps as pointers
 * into storage the value does not own. Storage is either an event block (below) or
 * the engine's per-event scratch arena, so evaluating an expression never frees.
 *
 * A struct vpl_event is a typeless bag of fields (the type travels beside it while it
 * is routed, so a filter stream can pass an event on under its own name without a
 * copy). Field keys are symbol ids interned by the program. An event is either
 * transient (built in the scratch arena while one input is processed) or frozen: one
 * malloc'd block holding the header, the fields and every byte they point to,
 * shared by reference count between the runs and windows that keep it. */
#ifndef VPL_VALUE_H
#define VPL_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum vtype {
    V_MISSING = 0, /* absent field or a function that could not compute ("none") */
    V_NULL,
    V_BOOL,
    V_INT,
    V_FLOAT,
    V_STR,
    V_ARR,
    V_MAP,
};

struct vkv;
struct vval {
    uint8_t t;  /* enum vtype */
    uint32_t n; /* string bytes, array or map entries */
    union {
        int64_t i; /* also V_BOOL */
        double f;
        const char *s;
        const struct vval *a;
        const struct vkv *m;
    } u;
};

struct vkv {
    const char *k;
    uint32_t klen;
    struct vval v;
};

struct vpl_event {
    int32_t refs; /* frozen: holders; transient: 0 */
    uint32_t nf;
    int64_t time;                 /* event time, epoch ms */
    union {                       /* refs tells which: a held event carries no pointer it can derive */
        size_t size;              /* frozen: bytes of the block */
        struct vpl_event *frozen; /* transient: the frozen copy made for holders, if any */
    };
    struct vval vals[]; /* nf values, then their nf field symbols (event_keys) */
};

/* The field symbols of ev: they follow the values, so an event is one block and
 * carries no pointers to its own parts (24 bytes of header instead of 40). */
static inline const uint32_t *event_keys(const struct vpl_event *ev)
{
    return (const uint32_t *)(ev->vals + ev->nf);
}

static inline struct vval v_missing(void)
{
    struct vval v = {0};
    return v;
}
static inline struct vval v_null(void)
{
    struct vval v = {.t = V_NULL};
    return v;
}
static inline struct vval v_bool(int b)
{
    struct vval v = {.t = V_BOOL, .u.i = b != 0};
    return v;
}
static inline struct vval v_int(int64_t i)
{
    struct vval v = {.t = V_INT, .u.i = i};
    return v;
}
static inline struct vval v_float(double f)
{
    struct vval v = {.t = V_FLOAT, .u.f = f};
    return v;
}
static inline struct vval v_str(const char *s, uint32_t n)
{
    struct vval v = {.t = V_STR, .n = n, .u.s = s};
    return v;
}
static inline int v_num(const struct vval *v)
{
    return v->t == V_INT || v->t == V_FLOAT;
}
static inline double v_as_f(const struct vval *v)
{
    return v->t == V_INT ? (double)v->u.i : v->u.f;
}

/* The field `key` of ev, or NULL. Events are small: a scan of the key array beats a
 * hash table for the 5-30 fields they carry. */
static inline const struct vval *event_get(const struct vpl_event *ev, uint32_t key)
{
    const uint32_t *keys = event_keys(ev);
    for (uint32_t i = 0; i < ev->nf; i++) {
        if (keys[i] == key) {
            return &ev->vals[i];
        }
    }
    return NULL;
}

/* A transient event in arena with room for `room` fields and none set (nf = 0), or
 * NULL on OOM. Fill vals[i] and event_keys_room(ev, room)[i], then event_seal(). */
struct vpl_event *event_new(struct arena *a, uint32_t room);
static inline uint32_t *event_keys_room(struct vpl_event *ev, uint32_t room)
{
    return (uint32_t *)(ev->vals + room);
}
/* Makes the first n of `room` fields the event's (n <= room). */
void event_seal(struct vpl_event *ev, uint32_t room, uint32_t n);

/* Field symbols, in no particular order. */
struct fieldset {
    uint32_t n;
    uint32_t sym[];
};

/* A frozen copy of ev (refs = 1) with the fields whose symbols are in keep, every
 * field when keep is NULL; NULL on OOM. */
struct vpl_event *event_freeze(const struct vpl_event *ev, const struct fieldset *keep);

/* A deep copy of v whose storage is in arena (program constants). */
int value_copy(struct arena *a, const struct vval *v, struct vval *out);

/* == semantics: ints and floats compare by value, everything else by type and
 * content; a missing operand is never equal. */
int value_eq(const struct vval *a, const struct vval *b);
/* Ordering for numbers (widened) and strings (bytewise): sets *out to -1/0/1 and
 * returns 1, or returns 0 when the two cannot be ordered. */
int value_order(const struct vval *a, const struct vval *b, int *out);

/* Shortest text that reads back as the same double. json != 0 forces a fraction
 * ("347.0"), as Varpulis writes floats; otherwise "347" (to_string, keys). Writes at
 * most 32 bytes including the NUL, returns the length. */
size_t format_double(double f, char out[32], int json);

/* Text of a value as to_string() and partition keys see it: strings raw, numbers as
 * text, containers as JSON, missing as "". */
int value_text(struct buf *b, const struct vval *v);

#endif
