/* Reading HTTP/1.1 responses from a byte stream, one after another as they come on a
 * pipelined connection. Only what decides the outcome is kept: the status, whether the
 * server keeps the connection, and the body's first bytes for an error text (and, for
 * reply_to, the whole body up to a bound and its Content-Type). The rest of the body is
 * skipped by its framing (Content-Length, chunked, or up to the close). */
#define _GNU_SOURCE /* strptime, timegm */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http_out.h"

enum {
    S_HEAD,       /* status line and headers, parsed once all of them are in */
    S_BODY_LEN,   /* left bytes of a Content-Length body */
    S_BODY_EOF,   /* the body runs to the close */
    S_CHUNK_SIZE, /* a chunk-size line */
    S_CHUNK_DATA, /* left bytes of a chunk */
    S_CHUNK_END,  /* the CRLF after a chunk */
    S_TRAILER,    /* trailer lines after the last chunk, up to an empty one */
};

/* Longest chunk-size or trailer line. */
#define LINE_MAX_LEN 1024

void http_out_resp_reset(struct http_out_resp *r)
{
    struct gust_buf *whole = r->whole;
    size_t whole_max = r->whole_max;
    memset(r, 0, sizeof(*r));
    r->state = S_HEAD;
    r->whole = whole;
    r->whole_max = whole_max;
    if (whole != NULL) {
        whole->len = 0;
    }
}

/* Where the line starting at p ends (just past its '\n'), or NULL when it is not all in. */
static const char *line_end(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return nl ? nl + 1 : NULL;
}

/* Length of the line without its "\r\n" or "\n". */
static size_t line_len(const char *p, const char *next)
{
    size_t n = (size_t)(next - p) - 1;
    return n && p[n - 1] == '\r' ? n - 1 : n;
}

/* Does the comma-separated list v[0..n) hold token t (case-insensitive)? */
static int has_token(const char *v, size_t n, const char *t)
{
    size_t tl = strlen(t);
    for (size_t i = 0; i < n;) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) {
            i++;
        }
        size_t s = i;
        while (i < n && v[i] != ',') {
            i++;
        }
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) {
            e--;
        }
        if (e - s == tl && strncasecmp(v + s, t, tl) == 0) {
            return 1;
        }
    }
    return 0;
}

static int tchar(unsigned char c)
{
    return c > ' ' && c < 0x7f && !strchr("\"(),/:;<=>?@[\\]{}", c);
}

int64_t http_out_retry_after_ms(const char *v, size_t len, int64_t now_s)
{
    char text[64];
    if (len == 0 || len >= sizeof(text)) {
        return -1;
    }
    memcpy(text, v, len);
    text[len] = '\0';
    if (strspn(text, "0123456789") == len) {
        if (len > 9) {
            return 999999999LL * 1000; /* capped by the caller anyway */
        }
        long long s = 0;
        sscanf(text, "%lld", &s);
        return s * 1000;
    }
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == NULL || *end != '\0') {
        return -1;
    }
    int64_t at = (int64_t)timegm(&tm);
    return at > now_s ? (at - now_s) * 1000 : 0;
}

/* Parses the head in p[0..end); returns 0 or -1 with *why. */
static int parse_head(struct http_out_resp *r, const char *p, const char *end, const char **why)
{
    const char *next = line_end(p, end);
    size_t n = line_len(p, next);
    int http10, has_close = 0, has_keep = 0, chunked = 0, has_te = 0, has_len = 0;
    uint64_t len = 0;

    if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
        p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
        (n > 12 && p[12] != ' ')) {
        *why = "bad status line";
        return -1;
    }
    http10 = p[7] == '0';
    r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    for (p = next; (next = line_end(p, end)) && (n = line_len(p, next)) > 0; p = next) {
        const char *colon = memchr(p, ':', n);
        if (!colon || colon == p) {
            *why = "bad header line";
            return -1;
        }
        for (const char *c = p; c < colon; c++) {
            if (!tchar((unsigned char)*c)) {
                *why = "bad header name"; /* obs-fold continuation lines land here too */
                return -1;
            }
        }
        size_t nl = (size_t)(colon - p);
        const char *v = colon + 1, *ve = p + n;
        while (v < ve && (*v == ' ' || *v == '\t')) {
            v++;
        }
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) {
            ve--;
        }
        if (nl == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
            uint64_t l = 0;
            if (v == ve) {
                *why = "bad Content-Length";
                return -1;
            }
            for (const char *c = v; c < ve; c++) {
                if (*c < '0' || *c > '9' || l > (UINT64_MAX >> 4)) {
                    *why = "bad Content-Length";
                    return -1;
                }
                l = l * 10 + (uint64_t)(*c - '0');
            }
            if (has_len && l != len) {
                *why = "two Content-Lengths";
                return -1;
            }
            has_len = 1;
            len = l;
        } else if (nl == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0) {
            has_te = 1;
            /* chunked must be the last coding; any other framing runs to the close */
            const char *last = ve;
            while (last > v && last[-1] != ',') {
                last--;
            }
            chunked = has_token(last, (size_t)(ve - last), "chunked");
        } else if (nl == 11 && strncasecmp(p, "Retry-After", 11) == 0) {
            int64_t ms = http_out_retry_after_ms(v, (size_t)(ve - v), (int64_t)time(NULL));
            r->has_retry_after = ms >= 0;
            r->retry_after_ms = ms >= 0 ? ms : 0;
        } else if (nl == 12 && strncasecmp(p, "Content-Type", 12) == 0) {
            size_t vl = (size_t)(ve - v);
            int printable = vl < sizeof(r->ctype);
            for (const char *c = v; printable && c < ve; c++) {
                printable = (unsigned char)*c >= 0x20 && *c != 0x7f;
            }
            if (printable) {
                memcpy(r->ctype, v, vl);
                r->ctype[vl] = '\0';
            }
        } else if (nl == 10 && strncasecmp(p, "Connection", 10) == 0) {
            has_close |= has_token(v, (size_t)(ve - v), "close");
            has_keep |= has_token(v, (size_t)(ve - v), "keep-alive");
        }
    }
    if (r->status == 101) {
        *why = "101 Switching Protocols";
        return -1;
    }
    r->keep_alive = http10 ? has_keep && !has_close : !has_close;
    if (r->status < 200 || r->status == 204 || r->status == 304) {
        r->left = 0;
        r->state = S_BODY_LEN;
    } else if (has_te) {
        r->state = chunked ? S_CHUNK_SIZE : S_BODY_EOF;
    } else if (has_len) {
        r->left = len;
        r->state = S_BODY_LEN;
    } else {
        r->state = S_BODY_EOF;
    }
    if (r->state == S_BODY_EOF) {
        r->keep_alive = 0;
    }
    return 0;
}

static void keep(struct http_out_resp *r, const char *p, size_t n)
{
    if (r->whole != NULL && !r->whole_over) {
        if (r->whole->len + n > r->whole_max || gust_buf_append(r->whole, p, n) != 0) {
            r->whole_over = 1; /* (out of memory too: the answer is not kept) */
        }
    }
    size_t room = HTTP_OUT_BODY_KEEP - r->body_len;
    n = n < room ? n : room;
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
}

/* Takes what is there of the r->left body bytes still to come (a length-framed body or
 * a chunk) from *p; 1 when none is left. */
static int take_left(struct http_out_resp *r, const char **p, const char *end)
{
    size_t n = (uint64_t)(end - *p) < r->left ? (size_t)(end - *p) : (size_t)r->left;
    keep(r, *p, n);
    *p += n;
    r->left -= n;
    return r->left == 0;
}

ssize_t http_out_resp_feed(struct http_out_resp *r, const char *buf, size_t len, int *done,
                           const char **why)
{
    const char *p = buf, *end = buf + len, *next;

    *done = 0;
    while (p < end || (r->state == S_BODY_LEN && r->left == 0)) {
        switch (r->state) {
        case S_HEAD: {
            /* The head is parsed when its empty line is in: look for it. */
            const char *q = p;
            while ((next = line_end(q, end)) && line_len(q, next) > 0) {
                q = next;
            }
            if (!next) {
                if (end - p > HTTP_OUT_HEAD_MAX) {
                    *why = "response head over " HTTP_OUT_HEAD_MAX_TEXT " bytes";
                    return -1;
                }
                return p - buf;
            }
            if (next - p > HTTP_OUT_HEAD_MAX) {
                *why = "response head over " HTTP_OUT_HEAD_MAX_TEXT " bytes";
                return -1;
            }
            if (parse_head(r, p, next, why) != 0) {
                return -1;
            }
            p = next;
            if (r->status < 200) { /* interim (100 Continue, 103): the answer is still to come */
                http_out_resp_reset(r);
            }
            break;
        }
        case S_BODY_LEN:
            if (take_left(r, &p, end)) {
                *done = 1;
                return p - buf;
            }
            break;
        case S_BODY_EOF:
            keep(r, p, (size_t)(end - p));
            p = end;
            break;
        case S_CHUNK_SIZE:
        case S_TRAILER:
            if (!(next = line_end(p, end))) {
                if (end - p > LINE_MAX_LEN) {
                    *why = "chunk line too long";
                    return -1;
                }
                return p - buf;
            }
            if (r->state == S_TRAILER) {
                if (line_len(p, next) == 0) {
                    *done = 1;
                    return next - buf;
                }
            } else {
                uint64_t size = 0;
                const char *c = p;
                for (; c < next; c++) {
                    int d = *c >= '0' && *c <= '9'   ? *c - '0'
                            : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
                            : *c >= 'A' && *c <= 'F' ? *c - 'A' + 10
                                                     : -1;
                    if (d < 0) {
                        break;
                    }
                    if (size > (UINT64_MAX >> 5)) {
                        *why = "bad chunk size";
                        return -1;
                    }
                    size = size * 16 + (uint64_t)d;
                }
                if (c == p || (*c != ';' && *c != ' ' && *c != '\t' && *c != '\r' && *c != '\n')) {
                    *why = "bad chunk size";
                    return -1;
                }
                r->left = size;
                r->state = size ? S_CHUNK_DATA : S_TRAILER;
            }
            p = next;
            break;
        case S_CHUNK_DATA:
            if (take_left(r, &p, end)) {
                r->state = S_CHUNK_END;
            }
            break;
        case S_CHUNK_END:
            if (*p == '\n') {
                p++;
            } else if (*p != '\r') {
                *why = "no CRLF after a chunk";
                return -1;
            } else if (end - p < 2) {
                return p - buf;
            } else if (p[1] != '\n') {
                *why = "no CRLF after a chunk";
                return -1;
            } else {
                p += 2;
            }
            r->state = S_CHUNK_SIZE;
            break;
        }
    }
    return p - buf;
}

int http_out_resp_ends_at_eof(const struct http_out_resp *r)
{
    return r->state == S_BODY_EOF;
}
