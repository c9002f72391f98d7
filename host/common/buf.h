/* A growable byte buffer. */
#ifndef GUST_COMMON_BUF_H
#define GUST_COMMON_BUF_H

#include <stddef.h>

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

#endif
