/* Small memory helpers shared by every layer (header only: the flow and VPL libraries
 * build without the rest of the host). */
#ifndef GUST_COMMON_MEM_H
#define GUST_COMMON_MEM_H

#include <stdlib.h>
#include <string.h>

/* A copy of len bytes with a NUL after them, or NULL when out of memory. Unlike
 * strndup it copies NULs inside the bytes too (JSON strings may hold them). */
static inline char *gust_memdup(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

#endif
