/* Lingering close, as nginx does it: after an answer on a connection that is about to
 * close while the client may still be sending (a body over max_body, which h2o does not
 * read, or a request it could not parse), close only our half and read and discard what
 * still comes, for a while, before closing the socket.
 *
 * Closing a socket whose receive buffer holds unread bytes makes the kernel send a
 * reset, and a client that is still writing (Python's http.client and urllib write the
 * whole body before they read) then gets a broken pipe or "connection reset" and never
 * reads the answer, which sits in its receive buffer. h2o 2.2.5 closes at once and has
 * no such option. So the answer arms this: it dup()s the socket's descriptor, and when
 * h2o closes its own, the socket stays open through the copy; once h2o is done with the
 * connection (its on_close), the copy is shut down for writing (the FIN follows the
 * answer) and read on the loop until the client closes, LINGER_BYTES have been thrown
 * away, or LINGER_MS have passed. A lingering socket still counts as a connection
 * against max_connections. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/log.h"
#include "internal.h"

#define LINGER_MS 5000
#define LINGER_MIN_BYTES (16u << 20) /* or four times max_body, if more */

struct lingering {
    struct gust_http *http;
    int fd;             /* the copy */
    h2o_socket_t *sock; /* on the copy, once h2o has closed its own */
    h2o_timeout_entry_t timer;
    size_t drained, limit;
};

static void linger_end(struct lingering *l)
{
    if (h2o_timeout_is_linked(&l->timer)) {
        h2o_timeout_unlink(&l->timer);
    }
    if (l->sock != NULL) {
        h2o_socket_read_stop(l->sock);
        h2o_socket_close(l->sock); /* closes the copy */
    } else if (l->fd >= 0) {
        close(l->fd);
    }
    gust_http_on_conn_close(l->http); /* only now is the connection gone */
    free(l);
}

static void on_linger_timeout(h2o_timeout_entry_t *entry)
{
    struct lingering *l = H2O_STRUCT_FROM_MEMBER(struct lingering, timer, entry);
    gust_debug("http: lingering close: %zu bytes drained, timed out", l->drained);
    linger_end(l);
}

static void on_linger_read(h2o_socket_t *sock, const char *err)
{
    struct lingering *l = sock->data;
    l->drained += sock->input->size;
    h2o_buffer_consume(&sock->input, sock->input->size);
    if (err != NULL || l->drained > l->limit) {
        /* err: the client closed (or reset) its side, as it does once it has the answer */
        gust_debug("http: lingering close: %zu bytes drained%s", l->drained,
                   err != NULL ? "" : ", over the limit");
        linger_end(l);
    }
}

/* h2o has closed its descriptor of the connection: ours keeps the socket. */
static void on_h2o_closed(void *data)
{
    struct lingering *l = data;
    struct gust_http *http = l->http;
    if (shutdown(l->fd, SHUT_WR) != 0) {
        linger_end(l); /* already gone */
        return;
    }
    l->sock = h2o_evloop_socket_create(http->ctx.loop, l->fd, 0);
    if (l->sock == NULL) {
        linger_end(l);
        return;
    }
    l->sock->data = l;
    h2o_socket_read_start(l->sock, on_linger_read);
    l->timer.cb = on_linger_timeout;
    h2o_timeout_link(http->ctx.loop, &http->linger_timeout, &l->timer);
}

void gust_linger_arm(struct gust_http *http, h2o_req_t *req)
{
    h2o_socket_t *sock =
        req->conn->callbacks->get_socket != NULL ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (sock == NULL || sock->on_close.cb != gust_http_on_conn_close) {
        return; /* not an HTTP/1 connection of ours, or armed already */
    }
    struct lingering *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        return;
    }
    l->fd = fcntl(h2o_socket_get_fd(sock), F_DUPFD_CLOEXEC, 0);
    if (l->fd < 0) {
        gust_debug("http: no lingering close: dup: %s", strerror(errno));
        free(l);
        return;
    }
    l->http = http;
    size_t max_body = gust_http_policy(http)->s.max_body;
    l->limit = 4 * max_body > LINGER_MIN_BYTES ? 4 * max_body : LINGER_MIN_BYTES;
    sock->on_close.cb = on_h2o_closed;
    sock->on_close.data = l;
}

void gust_linger_init(struct gust_http *http)
{
    h2o_timeout_init(http->ctx.loop, &http->linger_timeout, LINGER_MS);
}
