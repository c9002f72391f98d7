/* Query strings: one parameter's value, %-decoded. Pure: the routes and the fuzzer use it. */
#ifndef GUST_HTTP_QUERY_H
#define GUST_HTTP_QUERY_H

#include <stddef.h>

/* The value of parameter name in q[0..len) (the text after '?': "a=1&b=x%20y"), with
 * '+' as a space and %XX decoded, NUL-terminated into out (cut to size - 1 bytes; size
 * at least 1). A parameter without '=' has the empty value. Returns -1 when the
 * parameter is not there, else the length of the whole decoded value: at least size
 * when it was cut. A decoded value may hold a NUL (%00): compare the length with
 * strlen(out) where that matters. */
long gust_query_get(const char *q, size_t len, const char *name, char *out, size_t size);

#endif
