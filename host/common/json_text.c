#include "json_text.h"

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Bytes the scan stops at: '\\', 0x0b, 0x0c and every byte from 0x80. */
static int stops_at(unsigned char c)
{
    return c == '\\' || c == 0x0b || c == 0x0c || c >= 0x80;
}

/* Length of the run of bytes from s that need no look (most of any text), sixteen at
 * a time where SSE2 is there. Only the parity of the quotes in it matters: each block's
 * mask of them is XORed into *quotes (one instruction, where counting them would be a
 * popcount, a library call without -mpopcnt), whose parity is the count's. */
static size_t quiet_run(const unsigned char *s, size_t n, unsigned *quotes)
{
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i bslash = _mm_set1_epi8('\\'), vt = _mm_set1_epi8(0x0b), ff = _mm_set1_epi8(0x0c),
                  quote = _mm_set1_epi8('"');
    for (; i + 16 <= n; i += 16) {
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        /* w itself in the OR: its high bit flags the bytes from 0x80 */
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, bslash), w),
                                   _mm_or_si128(_mm_cmpeq_epi8(w, vt), _mm_cmpeq_epi8(w, ff)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(w, quote));
        if (mask != 0) {
            unsigned k = (unsigned)__builtin_ctz(mask);
            *quotes ^= q & ((1u << k) - 1);
            return i + k;
        }
        *quotes ^= q;
    }
#endif
    while (i < n && !stops_at(s[i])) {
        *quotes ^= s[i] == '"';
        i++;
    }
    return i;
}

/* Length of the well-formed UTF-8 sequence at s (Unicode's table 3-7: no overlong
 * form, no surrogate, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (avail < n || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t k = 2; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80) {
            return 0;
        }
    }
    return n;
}

static int hex_val(unsigned char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The code unit of the \uXXXX escape at s (s[0] is the backslash), or -1 when s does
 * not start one. */
static long escape_unit(const unsigned char *s, size_t avail)
{
    if (avail < 6 || s[0] != '\\' || s[1] != 'u') {
        return -1;
    }
    long v = 0;
    for (int k = 2; k < 6; k++) {
        int d = hex_val(s[k]);
        if (d < 0) {
            return -1;
        }
        v = v * 16 + d;
    }
    return v;
}

/* At a backslash: how many bytes the escape takes, and whether it is a lone surrogate. */
static size_t escape_len(const unsigned char *s, size_t avail, int *lone)
{
    *lone = 0;
    long u = escape_unit(s, avail);
    if (u < 0) {
        return avail >= 2 ? 2 : 1; /* "\\", "\n", ...; a bad escape is the parser's to refuse */
    }
    if (u >= 0xd800 && u <= 0xdbff) {
        long low = escape_unit(s + 6, avail - 6);
        if (low >= 0xdc00 && low <= 0xdfff) {
            return 12;
        }
        *lone = 1;
    } else if (u >= 0xdc00 && u <= 0xdfff) {
        *lone = 1;
    }
    return 6;
}

int gust_json_text_check(const char *str, size_t len, struct gust_json_text *r)
{
    const unsigned char *s = (const unsigned char *)str;
    memset(r, 0, sizeof(*r));
    size_t i = 0;
    unsigned quotes = 0;
    for (;;) {
        i += quiet_run(s + i, len - i, &quotes);
        if (i >= len) {
            /* Quotes not escaped come in pairs, one pair a string: an odd count is a
             * string still open at the end. yajl takes a complete value followed by one
             * (`{"a":1} "x`: its lexer runs out of input inside the string, and the
             * value counts as complete). */
            if (__builtin_parity(quotes)) {
                r->why = "a string not closed after the value";
                r->at = len;
                return -1;
            }
            return r->lone > 0;
        }
        unsigned char c = s[i];
        if (c == '\\') {
            int lone;
            size_t n = escape_len(s + i, len - i, &lone);
            if (lone && r->lone++ == 0) {
                r->lone_at = i;
            }
            i += n;
        } else if (c == 0x0b || c == 0x0c) {
            r->why =
                c == 0x0c
                    ? "form feed (JSON white space is space, tab, CR and LF; in a string, write \\f)"
                    : "vertical tab (JSON white space is space, tab, CR and LF; in a string, write \\u000b)";
            r->at = i;
            return -1;
        } else {
            size_t n = utf8_len(s + i, len - i);
            if (n == 0) {
                r->why = "invalid UTF-8 (an overlong form, a surrogate, a code point above U+10FFFF or a "
                         "broken sequence)";
                r->at = i;
                return -1;
            }
            i += n;
        }
    }
}

void gust_json_text_fix_lone(const char *str, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)str;
    memcpy(out, str, len);
    for (size_t i = 0; i < len;) {
        const unsigned char *b = memchr(s + i, '\\', len - i);
        if (b == NULL) {
            return;
        }
        i = (size_t)(b - s);
        int lone;
        size_t n = escape_len(s + i, len - i, &lone);
        if (lone) {
            memcpy(out + i, "\\ufffd", 6);
        }
        i += n;
    }
}
