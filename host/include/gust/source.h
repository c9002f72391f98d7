/* Sources in libgust-sdk: publishing with back-pressure, and a runner that calls the
 * plugin on a drift-free schedule.
 *
 * The publisher hands messages to api->publish() and keeps the source from outrunning
 * the bus: while the bus answers GUST_EAGAIN (busy or disconnected), or the source has
 * max_inflight publishes without an outcome, gust_publisher_send waits (and the source
 * reads nothing more meanwhile, so a child blocks on its pipe and a poller skips a run:
 * nothing is buffered without bound). Outcomes are counted; the first failure of a
 * streak and the recovery after it are logged, not every one.
 *
 * The runner is a thread that calls run() every interval_ms on CLOCK_MONOTONIC (run k
 * is due at t0 + k * interval, so late wake-ups do not add up; runs that an overrun
 * made late are skipped and counted, not fired in a burst), or once when interval_ms is
 * 0 (run() then loops until gust_source_stopping). It owns a publisher.
 *
 * Threads: run() runs on the runner's thread; send may be called from any thread; the
 * outcome callbacks come from host threads. */
#ifndef GUST_SOURCE_H
#define GUST_SOURCE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/api.h"
#include "gust/err.h"

/* Publish outcomes, read with atomic_load. */
struct gust_pub_counts {
    atomic_uint_fast64_t sent;    /* handed to the bus */
    atomic_uint_fast64_t stored;  /* PubAck received */
    atomic_uint_fast64_t failed;  /* refused, timed out, or never handed over (back-pressure
                                     that outlasted the wait) */
    atomic_uint_fast64_t skipped; /* runner: runs not made because an earlier one overran */
};

struct gust_publisher;

struct gust_publisher_conf {
    const struct gust_host_api *api; /* borrowed, valid until the plugin's fini */
    struct gust_instance *inst;      /* borrowed */
    size_t max_inflight;             /* publishes without an outcome at once; 0: no limit
                                        but the bus's own (GUST_EAGAIN) */
};

/* conf is copied. */
int gust_publisher_create(struct gust_publisher **out, const struct gust_publisher_conf *conf,
                          struct gust_err *err);
/* Publishes one message (data copied by the host), waiting while the bus or max_inflight
 * says wait, until give_up_ms (gust_clock_mono_ms time; INT64_MAX: until stopped). Returns 0
 * when handed to the bus; GUST_EAGAIN when it gave up or was stopped; another GUST_E*
 * when the host refused it. Every message not handed over is counted failed. */
int gust_publisher_send(struct gust_publisher *p, const char *subject, const void *data, size_t len,
                        int64_t give_up_ms);
/* The same, and done(ud, status, seq, error) is called with this message's outcome (on
 * a host thread, before the publisher counts it), for a source that must act on each
 * one (mqtt_in releases the broker's PUBACK). With give_up_ms at or before now it tries
 * once and never waits (for a caller on its own event loop). On a nonzero return done
 * is not called. */
int gust_publisher_send_cb(struct gust_publisher *p, const char *subject, const void *data, size_t len,
                           int64_t give_up_ms, gust_publish_done_fn done, void *ud);
/* The same for a message with an id and headers (api->publish_msg, ABI 1.4: GUST_EINVAL
 * from a host without it). */
int gust_publisher_send_msg(struct gust_publisher *p, const struct gust_pub_msg *m, int64_t give_up_ms,
                            gust_publish_done_fn done, void *ud);
/* Makes waiting and later sends give up at once. Thread-safe. */
void gust_publisher_stop(struct gust_publisher *p);
int gust_publisher_stopping(const struct gust_publisher *p);
/* Waits up to ms for the outcomes of the publishes in flight; returns how many are left. */
uint64_t gust_publisher_wait(struct gust_publisher *p, int64_t ms);
const struct gust_pub_counts *gust_publisher_counts(const struct gust_publisher *p);
/* Stops, then waits for every outcome still due (the host has already waited for them
 * when it destroys an instance, so this is quick there). NULL is a no-op. */
void gust_publisher_destroy(struct gust_publisher *p);

struct gust_source_runner;

struct gust_source_conf {
    const struct gust_host_api *api; /* borrowed, valid until the plugin's fini */
    struct gust_instance *inst;      /* borrowed */
    int64_t interval_ms;             /* > 0: the schedule; 0: run() once */
    int64_t stats_ms;                /* call stats() this often (0: only at stop) */
    size_t max_inflight;             /* for the publisher */
    /* Runs on the runner's thread for run number n (1, 2, ...). It may block; a blocking
     * call must return soon after wake() or gust_source_stopping(). */
    void (*run)(void *ud, uint64_t n);
    /* Called from stop(), on the stopping thread, to interrupt what run() waits on.
     * May be NULL. */
    void (*wake)(void *ud);
    /* Logs the plugin's counters; `final` at stop. On the runner's thread (final: on the
     * stopping thread). May be NULL. */
    void (*stats)(void *ud, int final);
    void *ud;
};

/* conf is copied. No thread yet (create does no I/O). */
int gust_source_create(struct gust_source_runner **out, const struct gust_source_conf *conf,
                       struct gust_err *err);
/* Starts the thread; the first run is first_delay_ms from now (0: at once). */
int gust_source_start(struct gust_source_runner *r, int64_t first_delay_ms, struct gust_err *err);
/* Wakes the thread and joins it: returns as soon as the current run() notices. Publishes
 * already handed to the bus still complete later (see destroy). No-op when not started. */
void gust_source_stop(struct gust_source_runner *r);
/* Stops, then waits for the outcome of every publish still pending. NULL is a no-op. */
void gust_source_destroy(struct gust_source_runner *r);

int gust_source_stopping(const struct gust_source_runner *r);
/* Sleeps ms on the monotonic clock; returns early (nonzero) when stopping. */
int gust_source_sleep(struct gust_source_runner *r, int64_t ms);
/* Publishes through the runner's publisher. On a schedule it gives up when the next run
 * is due (a newer reading is coming); with interval 0 it waits until stopped. */
int gust_source_publish(struct gust_source_runner *r, const char *subject, const void *data, size_t len);
const struct gust_pub_counts *gust_source_counts(const struct gust_source_runner *r);
/* Publishes handed to the bus whose outcome has not come back yet. */
uint64_t gust_source_pending(struct gust_source_runner *r);
/* Waits up to ms for those outcomes; returns how many are still due. */
uint64_t gust_source_wait(struct gust_source_runner *r, int64_t ms);

#endif
