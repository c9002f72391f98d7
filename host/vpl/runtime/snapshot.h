/* The pieces of the snapshot format that engine.c (header, clocks, counters), seq.c
 * (runs) and window.c (windows) share: varint writers and bounds-checked readers, and
 * the table of the events the state holds, each written once however many runs and
 * windows share it. The layout is in snapshot.c. */
#ifndef VPL_RUNTIME_SNAPSHOT_H
#define VPL_RUNTIME_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"
#include "value.h"

struct snap_w {
    struct buf b;
    int oom;
    /* the events referenced so far, by pointer: index = position in v */
    const struct vpl_event **v;
    uint32_t n, cap;
    uint32_t *slot; /* open addressing over v: index + 1, 0 empty */
    uint32_t nslot; /* power of two */
};

void snap_put_u8(struct snap_w *w, uint8_t v);
void snap_put_uv(struct snap_w *w, uint64_t v); /* LEB128 */
void snap_put_sv(struct snap_w *w, int64_t v);  /* zigzag LEB128 */
void snap_put_bytes(struct snap_w *w, const void *p, size_t n); /* length, then bytes */
/* Writes the index of ev in the event table, adding it when new. */
void snap_put_event(struct snap_w *w, const struct vpl_event *ev);

struct snap_r {
    const uint8_t *p, *end;
    int bad;
    char why[160];
    struct vpl_event **ev; /* the event table, frozen; one reference each of its own */
    uint64_t nev;
    uint32_t depth, max_depth;
};

/* Readers return 0 (or NULL) once r->bad is set; the first failure's reason stays. */
int snap_fail(struct snap_r *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint8_t snap_get_u8(struct snap_r *r);
uint64_t snap_get_uv(struct snap_r *r);
int64_t snap_get_sv(struct snap_r *r);
/* A count of items of at least one byte each, at most max: a corrupt count cannot make
 * the reader allocate more than the input could describe. */
uint64_t snap_get_count(struct snap_r *r, uint64_t max, const char *what);
/* Borrowed from the input. */
const char *snap_get_bytes(struct snap_r *r, uint32_t *len, uint32_t max);
/* An event of the table, with a new reference for the caller. */
struct vpl_event *snap_get_event(struct snap_r *r);

#endif
