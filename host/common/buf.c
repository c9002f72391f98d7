#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/err.h"

int gust_buf_reserve(struct gust_buf *b, size_t extra)
{
    if (b->len + extra <= b->cap) {
        return 0;
    }
    size_t cap = b->cap != 0 ? b->cap : 256;
    while (cap < b->len + extra) {
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        return GUST_ENOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int gust_buf_append(struct gust_buf *b, const void *data, size_t len)
{
    if (len == 0) { /* also for an empty buffer, whose data is NULL: NULL + 0 is undefined */
        return 0;
    }
    if (gust_buf_reserve(b, len) != 0) {
        return GUST_ENOMEM;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

int gust_buf_printf(struct gust_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || gust_buf_reserve(b, (size_t)n + 1) != 0) {
        return GUST_ENOMEM;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void gust_buf_free(struct gust_buf *b)
{
    free(b->data);
    *b = (struct gust_buf){0};
}
