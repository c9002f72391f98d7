/* application/x-www-form-urlencoded bodies as JSON, for the webhooks (webhook.c).
 *
 * A form becomes one JSON object of strings: `a=1&b=x+y` is {"a":"1","b":"x y"}. A key
 * given several times becomes an array of its values in order (`t=1&t=2` is
 * {"t":["1","2"]}); keys keep the order of their first appearance. '+' is a space and
 * %XX a byte; a '%' not followed by two hex digits stays as it is (as browsers and the
 * WHATWG URL standard do); a pair without '=' has the value ""; empty pairs (`&&`) are
 * skipped. Decoded keys and values must be UTF-8: a form that is not is refused, since a
 * JSON string cannot hold it.
 *
 * The parser is ours, so it has a unit test (tests/unit/http/test_form.c) and a fuzzer
 * (tests/fuzz/fuzz_form.c). */
#ifndef GUST_HTTP_FORM_H
#define GUST_HTTP_FORM_H

#include <stddef.h>

#include "../common/buf.h"

/* Appends the JSON object of body[0..len) to out. Returns 0, or -1 with why (one line)
 * when the form is not UTF-8 once decoded or memory ran out (out is then left with a
 * partial object: the caller drops it). Time and memory are O(len log len) whatever the
 * form: repeated keys are grouped by sorting, not by searching. */
int gust_form_to_json(const char *body, size_t len, struct gust_buf *out, char *why, size_t size);

/* When the form body[0..len) has exactly one field, `payload`, its decoded value in a
 * new buffer (free it) and its length in *out_len; else NULL. Slack's interactive
 * requests and GitHub's form deliveries send their JSON this way. */
char *gust_form_payload(const char *body, size_t len, size_t *out_len);

#endif
