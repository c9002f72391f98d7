/* Is a request body one JSON object? */
#ifndef GUST_HTTP_JSON_CHECK_H
#define GUST_HTTP_JSON_CHECK_H

#include <stddef.h>

/* Returns 1 when body[0..len) is exactly one JSON object as RFC 8259 has it (white
 * space around it allowed): well-formed UTF-8, no lone surrogate escape, only space,
 * tab, CR and LF as white space, and no more than max_depth arrays and objects nested
 * (0: no limit). Otherwise 0 and the reason, with the byte offset where there is one,
 * in why. yajl parses without recursion, so deep nesting costs memory in proportion to
 * the body, never stack. */
int gust_json_object_valid(const char *body, size_t len, size_t max_depth, char *why, size_t why_size);

#endif
