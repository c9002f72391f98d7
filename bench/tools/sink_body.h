/* Pulling the two fields the counting sink needs out of a JSON body. */
#ifndef GUST_BENCH_SINK_BODY_H
#define GUST_BENCH_SINK_BODY_H

#include <stddef.h>
#include <stdint.h>

struct sink_fields {
    const char *id; /* borrowed from the body: a string's contents as written, or a number's text */
    size_t id_len;
    int has_t;
    int64_t t_us; /* "t" (epoch milliseconds, maybe with a fraction) in microseconds */
};

/* Scans the top-level members of the object in body[0..len) for "t" and id_name. A member
 * that is absent leaves its field empty (id NULL, has_t 0). Returns 0, or -1 when the body
 * is not a JSON object it can walk. */
int sink_body_scan(const char *body, size_t len, const char *id_name, struct sink_fields *out);

/* A batch (http_out's batch_format json_array): calls fn with each element of the JSON
 * array in body[0..len) (its bytes, borrowed). Returns how many, or -1 when the body is
 * not an array it can walk (fn may have been called for the elements before the fault). */
long sink_body_elements(const char *body, size_t len, void (*fn)(void *ud, const char *el, size_t n), void *ud);

#endif
