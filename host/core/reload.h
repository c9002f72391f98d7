/* Generational reload: SIGHUP and POST /reload build a complete new generation from
 * host.conf; on any error the running one stays untouched. */
#ifndef GUST_CORE_RELOAD_H
#define GUST_CORE_RELOAD_H

#include <pthread.h>

#include "host.h"

/* What the process itself applies from a new generation's config (main.c: the log
 * settings and the HTTP front's tokens, proxies and limits). Each may be NULL. */
struct gust_reload_apply {
    /* Before anything changes: read and check what the new config needs (token files),
     * into *pending. A failure refuses the reload. On the reload thread. */
    int (*prepare)(void *ud, const struct gust_config *next, void **pending, struct gust_err *err);
    /* The new generation runs: put pending in force (it takes ownership). */
    void (*commit)(void *ud, const struct gust_config *next, void *pending);
    /* The new generation did not start: drop pending. */
    void (*discard)(void *ud, void *pending);
    void *ud;
};

struct gust_reloader {
    struct gust_reload_apply apply;
    const char *config_path; /* borrowed */
    struct gust_bus *bus;     /* borrowed */
    struct gust_units *units; /* borrowed: the process's registry */
    struct gust_host *current;
    struct gust_nodes *nodes; /* borrowed: current's node directory (read by the admin worker) */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int requested;
    int stopping;
};

/* Takes current (a prepared, started generation; owned from here on) and starts the
 * thread that runs reloads. A reload that changes a process-wide key without
 * GUST_K_RELOADABLE is refused (logged with the key and its file:line; /units shows it as
 * the last reload error) and the running generation keeps serving. apply (copied; may be
 * NULL) is called for each reload. */
int gust_reloader_start(struct gust_reloader *r, const char *config_path, struct gust_bus *bus,
                        struct gust_units *units, struct gust_host *current, const struct gust_reload_apply *apply,
                        struct gust_err *err);
/* Asks for a reload. Thread-safe; returns at once. Requests that arrive while one runs
 * coalesce into one more reload after it: never dropped, never concurrent. */
void gust_reloader_request(void *reloader);
/* POST /reload's split-brain guard (guard.h) on this process's config file and
 * node directory: 0, or the HTTP status to refuse with and why. Blocking. */
int gust_reloader_check(void *reloader, int force, char *why, size_t size);
/* Waits for a reload in progress, stops the thread, then stops and frees the running
 * generation. */
void gust_reloader_stop(struct gust_reloader *r);

#endif
