/* libFuzzer target: http_out's response reader on any bytes a server could send.
 *
 * The first input byte picks a chunk size (1-16); the rest is the byte stream of one
 * pipelined connection. It is read twice: all at once, and in chunks the way the client
 * reads a socket (bytes the reader has not used stay in the buffer, more are appended).
 * Both readings must complete the same answers (status, keep-alive, the kept body bytes)
 * and agree on whether the stream was malformed; the reader must never use more than it
 * was given nor keep a head or a line beyond its limits unread. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_out.h"

#define MAX_ANSWERS 256
#define BUF_CAP (64 * 1024) /* the client's read buffer */

struct answer {
    int status, keep_alive;
    size_t body_len;
    char body[HTTP_OUT_BODY_KEEP];
};

struct reading {
    struct answer answers[MAX_ANSWERS];
    size_t n;
    int malformed;
    int stuck; /* the unused bytes outgrew the client's buffer */
};

/* Feeds buf[0..len) like conn_parse: returns the bytes used. */
static size_t parse(struct http_out_resp *r, const char *buf, size_t len, struct reading *out)
{
    size_t off = 0;
    while (off < len && !out->malformed && out->n < MAX_ANSWERS) {
        int done = 0;
        const char *why = NULL;
        ssize_t used = http_out_resp_feed(r, buf + off, len - off, &done, &why);
        if (used < 0) {
            if (why == NULL) {
                abort();
            }
            out->malformed = 1;
            break;
        }
        if ((size_t)used > len - off) {
            abort();
        }
        off += (size_t)used;
        if (!done) {
            if (used == 0) {
                break; /* needs more bytes */
            }
            continue;
        }
        struct answer *a = &out->answers[out->n++];
        a->status = r->status;
        a->keep_alive = r->keep_alive;
        a->body_len = r->body_len;
        memcpy(a->body, r->body, r->body_len);
        http_out_resp_reset(r);
    }
    return off;
}

static int same(const struct reading *a, const struct reading *b)
{
    if (a->n != b->n || a->malformed != b->malformed) {
        return 0;
    }
    for (size_t i = 0; i < a->n; i++) {
        const struct answer *x = &a->answers[i], *y = &b->answers[i];
        if (x->status != y->status || x->keep_alive != y->keep_alive || x->body_len != y->body_len ||
            memcmp(x->body, y->body, x->body_len) != 0) {
            return 0;
        }
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size - 1 > BUF_CAP) {
        return 0;
    }
    size_t step = (size_t)(data[0] % 16) + 1;
    const char *stream = (const char *)data + 1;
    size_t len = size - 1;
    static struct reading whole, chunked;
    static struct gust_buf kept; /* reply_to's whole body, bounded */
    struct http_out_resp r;

    /* reset keeps the whole-body buffer it finds: start from a zeroed reader. */
    memset(&r, 0, sizeof(r));
    r.whole = &kept;
    r.whole_max = 4096;
    memset(&whole, 0, sizeof(whole));
    http_out_resp_reset(&r);
    parse(&r, stream, len, &whole);

    memset(&chunked, 0, sizeof(chunked));
    http_out_resp_reset(&r);
    static char buf[BUF_CAP];
    size_t have = 0;
    for (size_t at = 0; at < len && !chunked.malformed && chunked.n < MAX_ANSWERS; at += step) {
        size_t n = len - at < step ? len - at : step;
        memcpy(buf + have, stream + at, n);
        have += n;
        size_t used = parse(&r, buf, have, &chunked);
        memmove(buf, buf + used, have - used);
        have -= used;
        if (!chunked.malformed && have > HTTP_OUT_HEAD_MAX + step) {
            abort(); /* a head or a line past its limit, kept waiting instead of refused */
        }
    }
    if (whole.n == MAX_ANSWERS || chunked.n == MAX_ANSWERS) {
        return 0; /* cut short at different places */
    }
    if (!same(&whole, &chunked)) {
        fprintf(stderr, "whole: %zu answers, malformed %d; chunked (%zu bytes a read): %zu answers, malformed %d\n",
                whole.n, whole.malformed, step, chunked.n, chunked.malformed);
        abort();
    }
    return 0;
}
