/* Small building blocks shared by the compiler and the runtime: a bump arena, a
 * growable byte buffer, a string hash and error formatting. */
#ifndef VPL_UTIL_H
#define VPL_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vpl.h"

/* Bump allocator. Memory lives until arena_reset/arena_free; arena_reset keeps the
 * first chunk so a per-event arena stops calling malloc once it has warmed up. */
struct arena_chunk;
struct arena {
    struct arena_chunk *head;
    char *cur, *lim; /* the free part of head */
    size_t chunk_size;
};

void arena_init(struct arena *a, size_t chunk_size);
void *arena_alloc_slow(struct arena *a, size_t size);
/* 16-byte aligned; NULL on OOM. Inline: an event takes several small blocks, and the
 * call was a few percent of one. */
static inline void *arena_alloc(struct arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size - 1 < (size_t)(a->lim - a->cur)) { /* size 0 too takes the slow path, never NULL */
        void *p = a->cur;
        a->cur += size;
        return p;
    }
    return arena_alloc_slow(a, size);
}
char *arena_strndup(struct arena *a, const char *s, size_t len); /* NUL-terminated */

/* Writes the decimal digits of u, at least min_digits of them (zero-padded), so that they
 * end just before `end`; returns the first. Four digits a step, then two: numbers in
 * alerts are printed by hand because snprintf costs about a thousand instructions each. */
char *u64_digits(uint64_t u, char *end, int min_digits);
void arena_reset(struct arena *a);
void arena_free(struct arena *a);

struct buf {
    char *p;
    size_t len, cap;
};

/* Inline: alert JSON is written a few bytes at a time, and a call per piece was a
 * tenth of an alert's cost. buf_grow is the slow path. */
int buf_grow(struct buf *b, size_t extra);                 /* 0 or VPL_ENOMEM */
static inline int buf_reserve(struct buf *b, size_t extra) /* 0 or VPL_ENOMEM */
{
    return b->cap - b->len > extra ? 0 : buf_grow(b, extra);
}
static inline int buf_put(struct buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) != 0) {
        return VPL_ENOMEM;
    }
    if (n > 0) {
        memcpy(b->p + b->len, p, n);
    }
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}
static inline int buf_putc(struct buf *b, char c)
{
    if (buf_reserve(b, 1) != 0) {
        return VPL_ENOMEM;
    }
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
    return 0;
}
static inline int buf_puts(struct buf *b, const char *s)
{
    return buf_put(b, s, strlen(s));
}
void buf_free(struct buf *b);

uint64_t hash_bytes(const void *p, size_t n);

/* Fills err (may be NULL) with "line:col: message" and returns code. */
int vpl_err_at(struct vpl_error *err, int code, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
