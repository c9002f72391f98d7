#include "http_header.h"

#include <ctype.h>
#include <string.h>

const char *gust_http_header_problem(const char *h)
{
    const char *colon = strchr(h, ':');

    if (!colon || colon == h) {
        return "is not \"Name: value\"";
    }
    for (const char *p = h; p < colon; p++) {
        if (!isgraph((unsigned char)*p)) {
            return "has a space or control character in its name";
        }
    }
    if (strpbrk(h, "\r\n")) {
        return "holds a line break";
    }
    return NULL;
}
