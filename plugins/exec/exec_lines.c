/* Lines from a pipe, and what counts as a JSON line.
 *
 * The buffer grows up to max_line; a longer line is reported once and skipped up to its
 * newline, so a child that writes a huge line (or never a newline) costs bounded memory.
 * The line handler may block (back-pressure): no more is read from the pipe meanwhile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

#include "../../host/common/json_text.h"
#include "exec.h"

#define CHUNK (64 * 1024)

int exec_lines_init(struct exec_lines *l, size_t max)
{
    memset(l, 0, sizeof(*l));
    l->max = max;
    l->cap = max + 1 < CHUNK ? max + 1 : CHUNK;
    l->buf = malloc(l->cap);
    return l->buf ? 0 : GUST_ENOMEM;
}

void exec_lines_free(struct exec_lines *l)
{
    free(l->buf);
    l->buf = NULL;
}

/* Hands every complete line in buf to fn and keeps the rest at the front. */
static int split(struct exec_lines *l, exec_line_fn fn, void *ud)
{
    size_t start = 0;
    char *nl;

    while (start < l->len && (nl = memchr(l->buf + start, '\n', l->len - start)) != NULL) {
        size_t end = (size_t)(nl - l->buf);
        if (l->skipping) {
            l->skipping = 0; /* the end of the too-long line: drop it */
        } else if (fn(ud, l->buf + start, end - start) < 0) {
            return -1;
        }
        start = end + 1;
    }
    if (l->skipping) {
        l->len = 0; /* still inside the too-long line */
        return 0;
    }
    memmove(l->buf, l->buf + start, l->len - start);
    l->len -= start;
    return 0;
}

int exec_lines_read(struct exec_lines *l, int fd, exec_line_fn fn, exec_toolong_fn toolong, void *ud)
{
    if (l->len == l->cap) {
        if (l->cap < l->max + 1) {
            size_t cap = l->cap * 2 < l->max + 1 ? l->cap * 2 : l->max + 1;
            char *b = realloc(l->buf, cap);
            if (b) {
                l->buf = b;
                l->cap = cap;
            }
        }
        if (l->len == l->cap) {
            /* No newline within max bytes (or no memory to look further): skip the line. */
            toolong(ud, l->max);
            l->skipping = 1;
            l->len = 0;
        }
    }
    ssize_t r;
    do {
        r = read(fd, l->buf + l->len, l->cap - l->len);
    } while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return 1;
    }
    if (r <= 0) {
        /* EOF (or a read error, which ends the pipe the same way): the last line may
         * lack its newline. */
        if (l->len > 0 && !l->skipping && fn(ud, l->buf, l->len) < 0) {
            return -1;
        }
        l->len = 0;
        l->skipping = 0;
        return 0;
    }
    l->len += (size_t)r;
    return split(l, fn, ud) < 0 ? -1 : 1;
}

int exec_is_json_object(const char *data, size_t len)
{
    size_t i = 0;
    int ok;

    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r')) {
        i++;
    }
    if (i == len || data[i] != '{') {
        return 0;
    }
    /* No callbacks: yajl only validates syntax and UTF-8; one value, nothing after it. */
    yajl_handle y = yajl_alloc(NULL, NULL, NULL);
    if (!y) {
        return 0;
    }
    ok = yajl_parse(y, (const unsigned char *)data, len) == yajl_status_ok &&
         yajl_complete_parse(y) == yajl_status_ok;
    yajl_free(y);
    /* What yajl lets through and no flow decodes: \f or \v as white space, UTF-8 that
     * is not well formed (host/common/json_text.h). */
    struct gust_json_text t;
    return ok && gust_json_text_check(data, len, &t) >= 0;
}
