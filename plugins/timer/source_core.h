/* What the timer and http_poll sources share: a thread that runs a callback on a
 * drift-free monotonic schedule and stops promptly, publishing with back-pressure
 * retries and counted outcomes, and the JSON helpers both need. Compiled into each
 * plugin (hidden), so the two .so files stay independent.
 *
 *   source_core.c  the schedule thread, publishing, counters, RFC 3339 time
 *   source_json.c  JSON checks (yajl), top-level key scan, array splitting, escaping */
#ifndef GUST_SOURCE_CORE_H
#define GUST_SOURCE_CORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gust/plugin.h"

struct source_core;

struct source_core_conf {
    const struct gust_host_api *api; /* borrowed, valid until the plugin's fini */
    struct gust_instance *inst;      /* borrowed */
    int64_t interval_ms;             /* > 0 */
    int64_t stats_ms;                /* log the counters this often (0: only at stop) */
    /* Runs on the core's thread for run number n (1, 2, ...). It may block; a blocking
     * call must return soon after wake() or source_core_stopping(). */
    void (*run)(void *ud, uint64_t n);
    /* Called from stop(), on the stopping thread, to interrupt what run() waits on.
     * May be NULL. */
    void (*wake)(void *ud);
    /* Logs the plugin's counters; `final` at stop. Runs on the core's thread. */
    void (*stats)(void *ud, int final);
    void *ud;
};

/* Publish outcomes, read with atomic_load. */
struct source_pub_counts {
    atomic_uint_fast64_t sent;    /* handed to the bus */
    atomic_uint_fast64_t stored;  /* PubAck received */
    atomic_uint_fast64_t failed;  /* refused, timed out, or never handed over (back-pressure
                                     that outlasted the retry window) */
    atomic_uint_fast64_t skipped; /* runs not made because an earlier one overran */
};

/* conf is copied. No thread yet (create does no I/O). */
int source_core_create(struct source_core **out, const struct source_core_conf *conf, struct gust_err *err);
/* Starts the thread; the first run is first_delay_ms from now (0: at once). */
int source_core_start(struct source_core *c, int64_t first_delay_ms, struct gust_err *err);
/* Wakes the thread and joins it: returns as soon as the current run() notices, which is
 * within a few ms for the waits in this file. Publishes already handed to the bus still
 * complete later (see destroy). No-op when not started. */
void source_core_stop(struct source_core *c);
/* Stops, then waits for the outcome of every publish still pending: the bus reports
 * each one within its publish_timeout, and the outcome callback is in this .so, which
 * the host may unload right after. NULL is a no-op. */
void source_core_destroy(struct source_core *c);

int source_core_stopping(struct source_core *c);
/* Sleeps ms on the monotonic clock; returns early (nonzero) when stopping. */
int source_core_sleep(struct source_core *c, int64_t ms);
/* Publishes one message. On GUST_EAGAIN (bus busy or not connected) it retries with
 * growing pauses until the next run is due or the core stops; then it gives up and
 * counts the message failed. Returns 0 when handed to the bus. The first failure of a
 * streak and the recovery after it are logged, not every one. */
int source_core_publish(struct source_core *c, const char *subject, const void *data, size_t len);
const struct source_pub_counts *source_core_counts(const struct source_core *c);
/* Publishes handed to the bus whose outcome has not come back yet. */
uint64_t source_core_pending(struct source_core *c);

/* ms since the epoch (CLOCK_REALTIME) and CLOCK_MONOTONIC. */
int64_t source_wall_ms(void);
int64_t source_mono_ms(void);
/* "2026-11-29T23:49:03.123Z" into buf (at least 32 bytes). */
void source_rfc3339(char *buf, size_t size, int64_t epoch_ms);


/* --- source_json.c --- */

enum source_json_top { SJ_OBJECT = 1, SJ_ARRAY, SJ_SCALAR };

/* Checks that data[0..len) is exactly one JSON value with valid UTF-8 (white space
 * around it allowed). Returns its kind, or 0 with the reason (one line) in why.
 * When keys is given (a NULL-terminated list), a top-level object key equal to one of
 * them is reported in *clash (borrowed from keys), NULL otherwise. */
int source_json_check(const char *data, size_t len, const char *const *keys, const char **clash, char *why,
                      size_t why_size);

/* Calls fn for each element of the JSON array in data (which source_json_check found to
 * be an array), with the element's exact bytes. Stops when fn returns nonzero and
 * returns that. */
int source_json_each(const char *data, size_t len, int (*fn)(void *ud, const char *elem, size_t elen),
                     void *ud);

/* Appends s as a JSON string (quotes included) to out, which has room for 6 * strlen(s)
 * + 3 bytes. Returns the number of bytes written. */
size_t source_json_quote(char *out, const char *s);

#endif
