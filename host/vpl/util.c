#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
    struct arena_chunk *next;
    size_t size;
    _Alignas(16) char data[];
};

void arena_init(struct arena *a, size_t chunk_size)
{
    a->head = NULL;
    a->cur = a->lim = NULL;
    a->chunk_size = chunk_size;
}

/* arena_alloc when head has no room for size (a multiple of 16). */
void *arena_alloc_slow(struct arena *a, size_t size)
{
    size_t want = size > a->chunk_size / 4 ? size : a->chunk_size;
    struct arena_chunk *c = malloc(sizeof(*c) + want);
    if (c == NULL) {
        return NULL;
    }
    c->size = want;
    if (want == size && a->head != NULL) {
        /* A big one-off block goes behind the current chunk so the chunk's free
         * space stays usable. */
        c->next = a->head->next;
        a->head->next = c;
        return c->data;
    }
    c->next = a->head;
    a->head = c;
    a->cur = c->data + size;
    a->lim = c->data + want;
    return c->data;
}

char *arena_strndup(struct arena *a, const char *s, size_t len)
{
    char *p = arena_alloc(a, len + 1);
    if (p != NULL) {
        if (len > 0) {
            memcpy(p, s, len);
        }
        p[len] = '\0';
    }
    return p;
}

void arena_reset(struct arena *a)
{
    struct arena_chunk *keep = NULL;
    struct arena_chunk *c = a->head;
    while (c != NULL) {
        struct arena_chunk *next = c->next;
        if (keep == NULL && c->size == a->chunk_size) {
            keep = c;
        } else {
            free(c);
        }
        c = next;
    }
    if (keep != NULL) {
        keep->next = NULL;
    }
    a->head = keep;
    a->cur = keep != NULL ? keep->data : NULL;
    a->lim = keep != NULL ? keep->data + keep->size : NULL;
}

void arena_free(struct arena *a)
{
    struct arena_chunk *c = a->head;
    while (c != NULL) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->cur = a->lim = NULL;
}

int buf_grow(struct buf *b, size_t extra)
{
    if (b->cap - b->len > extra) {
        return 0;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= extra) {
        if (cap > SIZE_MAX / 2) {
            return VPL_ENOMEM;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (p == NULL) {
        return VPL_ENOMEM;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void buf_free(struct buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

uint64_t hash_bytes(const void *p, size_t n)
{
    /* FNV-1a with a final avalanche: keys are short (field names, partition keys)
     * and the map masks the low bits, so the mix matters more than the speed. */
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

int vpl_err_at(struct vpl_error *err, int code, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (err == NULL) {
        return code;
    }
    err->code = code;
    err->line = line;
    err->col = col;
    int n = line > 0 ? snprintf(err->msg, sizeof(err->msg), "%u:%u: ", line, col) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof(err->msg) - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

char *u64_digits(uint64_t u, char *end, int min_digits)
{
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char *q = end;
    while (u >= 10000) { /* four digits a step: one division by 10^4, then two pairs */
        uint32_t r = (uint32_t)(u % 10000);
        u /= 10000;
        q -= 4;
        memcpy(q, pairs + 2 * (r / 100), 2);
        memcpy(q + 2, pairs + 2 * (r % 100), 2);
    }
    if (u >= 100) {
        q -= 2;
        memcpy(q, pairs + 2 * (u % 100), 2);
        u /= 100;
    }
    if (u >= 10) {
        q -= 2;
        memcpy(q, pairs + 2 * u, 2);
    } else {
        *--q = (char)('0' + u);
    }
    while (end - q < min_digits) {
        *--q = '0';
    }
    return q;
}
