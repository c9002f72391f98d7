/* Generational reload: SIGHUP and POST /reload build a complete new generation from
 * host.conf; on any error the running one stays untouched. */
#ifndef GUST_CORE_RELOAD_H
#define GUST_CORE_RELOAD_H

#include <pthread.h>

#include "host.h"

struct gust_reloader {
    const char *config_path; /* borrowed */
    struct gust_bus *bus;     /* borrowed */
    struct gust_units *units; /* borrowed: the process's registry */
    struct gust_host *current;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int requested;
    int stopping;
};

/* Takes current (a prepared, started generation; owned from here on) and starts the
 * thread that runs reloads. */
int gust_reloader_start(struct gust_reloader *r, const char *config_path, struct gust_bus *bus,
                        struct gust_units *units, struct gust_host *current, struct gust_err *err);
/* Asks for a reload. Thread-safe; returns at once. Requests that arrive while one runs
 * coalesce into one more reload after it: never dropped, never concurrent. */
void gust_reloader_request(void *reloader);
/* POST /reload's split-brain guard (cluster/guard.h) on this process's config file and
 * node directory: 0, or the HTTP status to refuse with and why. Blocking. */
int gust_reloader_check(void *reloader, int force, char *why, size_t size);
/* Waits for a reload in progress, stops the thread, then stops and frees the running
 * generation. */
void gust_reloader_stop(struct gust_reloader *r);

#endif
