/* What yajl 2.1 lets through in a JSON text although RFC 8259 forbids it, found in one
 * pass before yajl sees the text (ingest refuses it, the flow decoder refuses or
 * repairs it):
 *
 *   - form feed and vertical tab: yajl takes them for white space. Raw, anywhere else,
 *     they are control characters inside a string, which yajl refuses as well, so any
 *     such byte makes the text invalid.
 *   - UTF-8 that is not well formed: yajl checks only the lead and continuation bits,
 *     so overlong forms (C0 AF), encoded surrogates (ED A0 80) and code points above
 *     U+10FFFF (F4 90 80 80) pass it.
 *   - \u escapes of a surrogate that is not one half of a pair: yajl decodes a lone
 *     high one as '?', a lone low one as invalid UTF-8 (ED B0 80), and joins a high one
 *     with whatever \u escape follows it (\ud800\u0041 as U+10041).
 *   - a string still open at the end of the text, after a complete value: yajl takes
 *     `{"a":1} "x` for the object alone (found by fuzzing ingest against the flows).
 *
 * The check needs no string state: in a valid text every backslash is inside a string
 * and starts an escape, and where a backslash is invalid yajl refuses the text anyway. */
#ifndef GUST_COMMON_JSON_TEXT_H
#define GUST_COMMON_JSON_TEXT_H

#include <stddef.h>

struct gust_json_text {
    const char *why; /* the first problem (not the lone surrogates), NULL when none */
    size_t at;       /* its byte offset */
    size_t lone;     /* lone surrogate escapes seen */
    size_t lone_at;  /* byte offset of the first one */
};

/* Scans s[0..len): 0 when the text has none of the problems above, 1 when its only
 * problem is lone surrogate escapes (r->lone of them), -1 for anything else (r->why,
 * r->at). Everything else about the text is left to the JSON parser. */
int gust_json_text_check(const char *s, size_t len, struct gust_json_text *r);

/* Copies s[0..len) into out (len bytes) with every lone surrogate escape replaced by
 * \ufffd, the replacement character, which has the same length: nothing else moves. */
void gust_json_text_fix_lone(const char *s, size_t len, char *out);

#endif
