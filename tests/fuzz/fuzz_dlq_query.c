/* libFuzzer target: the DLQ routes' query string and JSON body (host/http/dlq_query.c,
 * query.c). The first byte says where the query ends and the body begins. What is
 * accepted names a unit as one subject token (no dot, wildcard, space, control
 * character or NUL) that fits, and every parameter's decoded value stays within its
 * buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/http/dlq_query.h"
#include "../../host/http/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    size_t split = data[0] < size - 1 ? data[0] : size - 1;
    const char *query = (const char *)data + 1, *body = query + split;
    size_t blen = size - 1 - split;

    char v[8];
    long n = gust_query_get(query, split, "unit", v, sizeof(v));
    if (n >= 0 && strnlen(v, sizeof(v)) >= sizeof(v)) {
        abort(); /* not terminated within the buffer */
    }
    struct gust_dlq_query q = {.limit = 50};
    const char *bad = gust_dlq_query_parse(query, split, body, blen, &q);
    if (bad != NULL) {
        return 0;
    }
    size_t ul = strnlen(q.unit, sizeof(q.unit));
    if (ul >= sizeof(q.unit)) {
        abort();
    }
    for (size_t i = 0; i < ul; i++) {
        unsigned char c = (unsigned char)q.unit[i];
        if (c <= ' ' || c == 0x7f || c == '.' || c == '*' || c == '>') {
            abort();
        }
    }
    if (q.limit == 0) {
        abort();
    }
    return 0;
}
