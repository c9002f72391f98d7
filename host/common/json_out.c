#include "json_out.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gust/err.h"

int gust_json_append_string(struct gust_buf *out, const char *s, size_t len)
{
    if (gust_buf_reserve(out, len + 2) != 0 || gust_buf_append(out, "\"", 1) != 0) {
        return GUST_ENOMEM;
    }
    size_t run = 0; /* start of the pending bytes that need no escape */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        char esc[8];
        int n;
        switch (c) {
        case '"': n = snprintf(esc, sizeof(esc), "\\\""); break;
        case '\\': n = snprintf(esc, sizeof(esc), "\\\\"); break;
        case '\n': n = snprintf(esc, sizeof(esc), "\\n"); break;
        case '\r': n = snprintf(esc, sizeof(esc), "\\r"); break;
        case '\t': n = snprintf(esc, sizeof(esc), "\\t"); break;
        default: n = snprintf(esc, sizeof(esc), "\\u%04x", c);
        }
        if (gust_buf_append(out, s + run, i - run) != 0 || gust_buf_append(out, esc, (size_t)n) != 0) {
            return GUST_ENOMEM;
        }
        run = i + 1;
    }
    if (gust_buf_append(out, s + run, len - run) != 0 || gust_buf_append(out, "\"", 1) != 0) {
        return GUST_ENOMEM;
    }
    return 0;
}

int gust_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp;
        if ((c & 0xe0) == 0xc0) {
            n = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + n >= len) {
            return 0; /* truncated sequence */
        }
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        static const uint32_t min_cp[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return 0;
        }
        i += n + 1;
    }
    return 1;
}

int gust_base64_append(struct gust_buf *out, const unsigned char *s, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (gust_buf_reserve(out, (len + 2) / 3 * 4) != 0) {
        return GUST_ENOMEM;
    }
    char *p = out->data + out->len;
    size_t i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *p++ = tab[v >> 18];
        *p++ = tab[(v >> 12) & 63];
        *p++ = tab[(v >> 6) & 63];
        *p++ = tab[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0);
        *p++ = tab[v >> 18];
        *p++ = tab[(v >> 12) & 63];
        *p++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        *p++ = '=';
    }
    out->len = (size_t)(p - out->data);
    return 0;
}

int gust_json_append_base64(struct gust_buf *out, const unsigned char *s, size_t len)
{
    if (gust_buf_reserve(out, (len + 2) / 3 * 4 + 2) != 0) {
        return GUST_ENOMEM;
    }
    /* Reserved: none of these can fail. */
    gust_buf_append(out, "\"", 1);
    gust_base64_append(out, s, len);
    return gust_buf_append(out, "\"", 1);
}

static int b64_value(unsigned char c)
{
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+'             ? 62
           : c == '/'             ? 63
                                  : -1;
}

unsigned char *gust_base64_decode(const char *s, size_t len, size_t *out_len)
{
    if (len % 4 != 0) {
        return NULL;
    }
    size_t pad = len >= 1 && s[len - 1] == '=' ? (len >= 2 && s[len - 2] == '=' ? 2 : 1) : 0;
    unsigned char *out = malloc(len / 4 * 3 + 1);
    if (out == NULL) {
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i += 4) {
        int last = i + 4 == len;
        uint32_t v = 0;
        for (size_t k = 0; k < 4; k++) {
            int d = last && k >= 4 - pad ? 0 : b64_value((unsigned char)s[i + k]);
            if (d < 0) {
                free(out);
                return NULL;
            }
            v = v << 6 | (uint32_t)d;
        }
        out[n++] = (unsigned char)(v >> 16);
        if (!last || pad < 2) {
            out[n++] = (unsigned char)(v >> 8);
        }
        if (!last || pad < 1) {
            out[n++] = (unsigned char)v;
        }
    }
    *out_len = n;
    return out;
}
