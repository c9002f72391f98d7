#include "loop_h2o.h"

struct gust_loop_watch {
    h2o_socket_t *sock; /* sock->data: this, until unwatch */
    gust_loop_fn on_readable, on_writable;
    void *ud;
};

struct gust_loop_timer {
    h2o_loop_t *loop;
    h2o_timeout_t timeout;
    h2o_timeout_entry_t entry;
    gust_loop_fn fn;
    void *ud;
};

/* h2o may still report on a socket it has not disposed of yet: data NULL says it was
 * closed. */
static void on_read(h2o_socket_t *sock, const char *err)
{
    (void)err; /* the watcher sees the error itself when it reads */
    struct gust_loop_watch *w = sock->data;
    if (w != NULL) {
        w->on_readable(w->ud);
    }
}

static void on_write(h2o_socket_t *sock, const char *err)
{
    (void)err;
    struct gust_loop_watch *w = sock->data;
    if (w != NULL) {
        w->on_writable(w->ud);
    }
}

static struct gust_loop_watch *watch(void *impl, int fd, void *ud)
{
    struct gust_loop_watch *w = h2o_mem_alloc(sizeof(*w)); /* aborts when out of memory, as h2o does */
    *w = (struct gust_loop_watch){.ud = ud};
    w->sock = h2o_evloop_socket_create(impl, fd, H2O_SOCKET_FLAG_DONT_READ);
    w->sock->data = w;
    return w;
}

static void read_start(struct gust_loop_watch *w, gust_loop_fn on_readable)
{
    w->on_readable = on_readable;
    h2o_socket_read_start(w->sock, on_read);
}

static void read_stop(struct gust_loop_watch *w)
{
    h2o_socket_read_stop(w->sock);
}

static void notify_write(struct gust_loop_watch *w, gust_loop_fn on_writable)
{
    w->on_writable = on_writable;
    h2o_socket_notify_write(w->sock, on_write);
}

static void unwatch(struct gust_loop_watch *w)
{
    w->sock->data = NULL;
    h2o_socket_close(w->sock);
    free(w);
}

static void on_timeout(h2o_timeout_entry_t *entry)
{
    struct gust_loop_timer *t = H2O_STRUCT_FROM_MEMBER(struct gust_loop_timer, entry, entry);
    t->fn(t->ud);
}

static struct gust_loop_timer *timer(void *impl, uint64_t ms, gust_loop_fn fn, void *ud)
{
    struct gust_loop_timer *t = h2o_mem_alloc(sizeof(*t));
    *t = (struct gust_loop_timer){.loop = impl, .fn = fn, .ud = ud};
    h2o_timeout_init(t->loop, &t->timeout, ms);
    t->entry.cb = on_timeout;
    return t;
}

static void arm(struct gust_loop_timer *t)
{
    if (!h2o_timeout_is_linked(&t->entry)) {
        h2o_timeout_link(t->loop, &t->timeout, &t->entry);
    }
}

static void timer_free(struct gust_loop_timer *t)
{
    if (t == NULL) {
        return;
    }
    if (h2o_timeout_is_linked(&t->entry)) {
        h2o_timeout_unlink(&t->entry);
    }
    h2o_timeout_dispose(t->loop, &t->timeout);
    free(t);
}

struct gust_loop gust_loop_h2o(h2o_loop_t *loop)
{
    return (struct gust_loop){
        .impl = loop,
        .watch = watch,
        .read_start = read_start,
        .read_stop = read_stop,
        .notify_write = notify_write,
        .unwatch = unwatch,
        .timer = timer,
        .arm = arm,
        .timer_free = timer_free,
    };
}
