#include "query.h"

#include <string.h>

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

long gust_query_get(const char *q, size_t len, const char *name, char *out, size_t size)
{
    const char *end = q + len;
    size_t nlen = strlen(name);
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp != NULL ? amp : end;
        const char *eq = memchr(q, '=', (size_t)(stop - q));
        const char *kend = eq != NULL ? eq : stop;
        if ((size_t)(kend - q) == nlen && memcmp(q, name, nlen) == 0) {
            size_t n = 0;
            for (const char *v = eq != NULL ? eq + 1 : stop; v < stop; v++) {
                char c = *v;
                if (c == '+') {
                    c = ' ';
                } else if (c == '%' && stop - v > 2 && hex_digit(v[1]) >= 0 && hex_digit(v[2]) >= 0) {
                    c = (char)(hex_digit(v[1]) * 16 + hex_digit(v[2]));
                    v += 2;
                }
                if (n + 1 < size) {
                    out[n] = c;
                }
                n++;
            }
            out[n + 1 < size ? n : size - 1] = '\0';
            return (long)n;
        }
        q = stop + 1;
    }
    return -1;
}
