/* Small building blocks shared by the compiler and the runtime: a bump arena, a
 * growable byte buffer, a string hash and error formatting. */
#ifndef VPL_UTIL_H
#define VPL_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "vpl.h"

/* Bump allocator. Memory lives until arena_reset/arena_free; arena_reset keeps the
 * first chunk so a per-event arena stops calling malloc once it has warmed up. */
struct arena_chunk;
struct arena {
    struct arena_chunk *head;
    size_t chunk_size;
};

void arena_init(struct arena *a, size_t chunk_size);
void *arena_alloc(struct arena *a, size_t size); /* 16-byte aligned; NULL on OOM */
char *arena_strndup(struct arena *a, const char *s, size_t len); /* NUL-terminated */
void arena_reset(struct arena *a);
void arena_free(struct arena *a);

struct buf {
    char *p;
    size_t len, cap;
};

int buf_reserve(struct buf *b, size_t extra); /* 0 or VPL_ENOMEM */
int buf_put(struct buf *b, const void *p, size_t n);
int buf_putc(struct buf *b, char c);
int buf_puts(struct buf *b, const char *s);
void buf_free(struct buf *b);

uint64_t hash_bytes(const void *p, size_t n);

/* Fills err (may be NULL) with "line:col: message" and returns code. */
int vpl_err_at(struct vpl_error *err, int code, uint32_t line, uint32_t col,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
