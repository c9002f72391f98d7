#include "ingest_subject.h"

#include <string.h>

#include "../conf/subject.h"

#define SUBJECT_PREFIX "ev."

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

int gust_ingest_subject(const char *base, size_t len, char out[GUST_INGEST_SUBJECT_MAX])
{
    size_t n = sizeof(SUBJECT_PREFIX) - 1;
    memcpy(out, SUBJECT_PREFIX, n);
    for (size_t i = 0; i < len; i++) {
        char c = base[i];
        if (c == '%') {
            int hi = i + 2 < len ? hex_value(base[i + 1]) : -1;
            int lo = hi >= 0 ? hex_value(base[i + 2]) : -1;
            if (lo < 0) {
                return 0;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (n + 1 >= GUST_INGEST_SUBJECT_MAX) {
            return 0;
        }
        out[n++] = c;
    }
    out[n] = '\0';
    size_t p = sizeof(SUBJECT_PREFIX) - 1;
    return n > p && memchr(out, '\0', n) == NULL && gust_subject_valid(out + p, n - p, 0);
}
