/* Is a request body one JSON object? */
#ifndef GUST_HTTP_JSON_CHECK_H
#define GUST_HTTP_JSON_CHECK_H

#include <stddef.h>

/* Returns 1 when body[0..len) is exactly one JSON object with valid UTF-8 (whitespace
 * around it allowed); otherwise 0 and a reason in why. yajl parses without recursion,
 * so deep nesting costs memory in proportion to the body, never stack. */
int gust_json_object_valid(const char *body, size_t len, char *why, size_t why_size);

#endif
