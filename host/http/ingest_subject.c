#include "ingest_subject.h"

#include <string.h>

#include "../conf/subject.h"

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

int gust_ingest_subject(const char *prefix, const char *base, size_t len, char out[GUST_INGEST_SUBJECT_MAX])
{
    size_t p = strlen(prefix), n = p;
    if (p >= GUST_INGEST_SUBJECT_MAX) {
        return 0;
    }
    memcpy(out, prefix, p);
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
    return n > p && memchr(out, '\0', n) == NULL && gust_subject_valid(out + p, n - p, 0);
}
