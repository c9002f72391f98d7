/* Writing JSON by hand where a generator would be overkill: strings, UTF-8 checks. */
#ifndef GUST_COMMON_JSON_OUT_H
#define GUST_COMMON_JSON_OUT_H

#include <stddef.h>

#include "buf.h"

/* Appends s[0..len) as a quoted JSON string. s must be valid UTF-8; quotes,
 * backslashes and control characters are escaped. Returns 0 or GUST_ENOMEM. */
int gust_json_append_string(struct gust_buf *out, const char *s, size_t len);
/* 1 when s[0..len) is valid UTF-8 (no overlongs, no surrogates, at most U+10FFFF). */
int gust_utf8_valid(const char *s, size_t len);
/* Appends s[0..len) in standard base64, quoted. */
int gust_json_append_base64(struct gust_buf *out, const unsigned char *s, size_t len);
/* Standard base64 s[0..len) (padded, no white space) decoded into a new buffer (free
 * it), its size in *out_len; NULL when malformed or out of memory. */
unsigned char *gust_base64_decode(const char *s, size_t len, size_t *out_len);

#endif
