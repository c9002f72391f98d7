/* The event loop a part of the bus runs on, as the bus sees it: file descriptors it
 * watches and timers. The ingest link (ingest_link.h) runs on the HTTP front's loop;
 * the HTTP layer hands it this table over h2o's loop (http/loop_h2o.c), so that nothing
 * under host/bus includes h2o. Every call, and every callback, on the loop's thread. */
#ifndef GUST_BUS_LOOP_H
#define GUST_BUS_LOOP_H

#include <stdint.h>

struct gust_loop_watch; /* one file descriptor watched */
struct gust_loop_timer;
typedef void (*gust_loop_fn)(void *ud);

struct gust_loop {
    void *impl;
    /* Watches fd, owned from here on, for the callbacks below, which get ud. Never NULL. */
    struct gust_loop_watch *(*watch)(void *impl, int fd, void *ud);
    /* on_readable whenever fd is readable, from now until read_stop. */
    void (*read_start)(struct gust_loop_watch *w, gust_loop_fn on_readable);
    void (*read_stop)(struct gust_loop_watch *w);
    /* on_writable once, when fd can take more. */
    void (*notify_write)(struct gust_loop_watch *w, gust_loop_fn on_writable);
    /* Stops watching and closes fd; no callback comes after. */
    void (*unwatch)(struct gust_loop_watch *w);
    /* A timer calling fn(ud) once, ms after each arm (0: at the end of this loop turn).
     * Never NULL. */
    struct gust_loop_timer *(*timer)(void *impl, uint64_t ms, gust_loop_fn fn, void *ud);
    void (*arm)(struct gust_loop_timer *t); /* no-op while armed */
    void (*timer_free)(struct gust_loop_timer *t); /* disarmed first; NULL is a no-op */
};

#endif
