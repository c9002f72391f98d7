/* libFuzzer target: exec's line reader (plugins/exec/exec_lines.c) on any bytes a child
 * could write to its pipe, in chunks the input picks. The lines handed over are exactly
 * the input's lines of at most max bytes (an unterminated last one too), in order; each
 * longer line is reported once and skipped whole; and a line exec takes for a JSON
 * object has nothing RFC 8259 forbids that yajl lets through (json_text.h). */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../../host/common/json_text.h"
#include "exec.h"

struct got {
    const unsigned char *want; /* the input, walked line by line */
    size_t len, off;
    size_t max;
    size_t toolong;
};

/* The next line of the input that is not too long, counting the skipped ones. */
static int next_line(struct got *g, const unsigned char **line, size_t *n)
{
    while (g->off < g->len) {
        const unsigned char *nl = memchr(g->want + g->off, '\n', g->len - g->off);
        size_t end = nl ? (size_t)(nl - g->want) : g->len;
        size_t l = end - g->off;
        *line = g->want + g->off;
        g->off = nl ? end + 1 : g->len;
        if (l > g->max) {
            g->toolong++;
            continue;
        }
        if (!nl && l == 0) {
            return 0;
        }
        *n = l;
        return 1;
    }
    return 0;
}

static int on_line(void *ud, char *line, size_t len)
{
    struct got *g = ud;
    const unsigned char *want;
    size_t n;
    if (!next_line(g, &want, &n) || n != len || memcmp(want, line, len) != 0) {
        abort();
    }
    struct gust_json_text t;
    if (exec_is_json_object(line, len) && gust_json_text_check(line, len, &t) < 0) {
        abort(); /* exec would publish what no flow can decode */
    }
    return 0;
}

static size_t reported;
static void on_toolong(void *ud, size_t max)
{
    (void)ud, (void)max;
    reported++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    struct got g = {.want = data + 2, .len = size - 2, .max = data[0] & 0x80 ? 65600 : 1 + (data[0] & 0x3f)};
    size_t chunk = 1 + data[1];
    struct exec_lines l;
    int p[2];
    if (exec_lines_init(&l, g.max) != 0 || pipe(p) != 0) {
        abort();
    }
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    reported = 0;
    for (size_t off = 0; off < g.len;) {
        size_t k = g.len - off < chunk ? g.len - off : chunk;
        if (write(p[1], g.want + off, k) != (ssize_t)k) {
            abort();
        }
        off += k;
        int avail = 0;
        while (ioctl(p[0], FIONREAD, &avail) == 0 && avail > 0) {
            exec_lines_read(&l, p[0], on_line, on_toolong, &g);
        }
    }
    close(p[1]);
    while (exec_lines_read(&l, p[0], on_line, on_toolong, &g) == 1) {
    }
    const unsigned char *rest;
    size_t n;
    if (next_line(&g, &rest, &n) || reported != g.toolong) {
        abort(); /* a line never handed over, or a skip not reported once */
    }
    close(p[0]);
    exec_lines_free(&l);
    return 0;
}
