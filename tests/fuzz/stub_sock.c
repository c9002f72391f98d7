/* plugins/common/gust_sock.c for the fuzz targets of network code: no socket, the
 * peer's bytes come from the fuzz input (stub_sock_feed), read in chunks of a size the
 * input picks; what is written is kept for the target to look at. */
#include <stdlib.h>
#include <string.h>

#include "gust_sock.h"
#include "stub_sock.h"

struct gust_sock {
    int unused;
};

static const unsigned char *in_data;
static size_t in_len, in_off, chunk = 1;
unsigned char stub_sock_written[1 << 16];
size_t stub_sock_written_len;

void stub_sock_feed(const unsigned char *data, size_t len, size_t chunk_size)
{
    in_data = data;
    in_len = len;
    in_off = 0;
    chunk = chunk_size ? chunk_size : 1;
    stub_sock_written_len = 0;
}

int stub_sock_left(void)
{
    return in_off < in_len;
}

int gust_tls_create(struct gust_tls **out, const char *ca, const char *cert, const char *key,
                    struct gust_err *err)
{
    (void)ca, (void)cert, (void)key, (void)err;
    *out = NULL;
    return 0;
}

void gust_tls_destroy(struct gust_tls *t)
{
    (void)t;
}

int gust_sock_open(struct gust_sock **out, const struct gust_sock_peer *peer, int64_t timeout_ms,
                   struct gust_tls *tls, int *os_errno, struct gust_err *err)
{
    (void)peer, (void)timeout_ms, (void)tls;
    if (os_errno) {
        *os_errno = 0;
    }
    if (in_off >= in_len) {
        return gust_err_set(err, -1, "the fuzz input is used up");
    }
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : gust_err_set(err, -1, "out of memory");
}

void gust_sock_close(struct gust_sock *s)
{
    free(s);
}

int gust_sock_fd(const struct gust_sock *s)
{
    (void)s;
    return -1;
}

ssize_t gust_sock_read(struct gust_sock *s, void *buf, size_t n, struct gust_err *err)
{
    (void)s;
    if (in_off >= in_len) {
        gust_err_set(err, GUST_SOCK_EOF, "broker closed the connection");
        return GUST_SOCK_EOF;
    }
    size_t k = in_len - in_off < chunk ? in_len - in_off : chunk;
    k = k < n ? k : n;
    memcpy(buf, in_data + in_off, k);
    in_off += k;
    return (ssize_t)k;
}

ssize_t gust_sock_write(struct gust_sock *s, const void *buf, size_t n, struct gust_err *err)
{
    (void)s, (void)err;
    size_t room = sizeof(stub_sock_written) - stub_sock_written_len, k = n < room ? n : room;
    memcpy(stub_sock_written + stub_sock_written_len, buf, k);
    stub_sock_written_len += k;
    return (ssize_t)n;
}

int gust_sock_buffered(const struct gust_sock *s)
{
    (void)s;
    return 0;
}

int gust_sock_wants_write(const struct gust_sock *s)
{
    (void)s;
    return 0;
}
