#include "reload.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config_digest.h"
#include "kind.h"
#include "../bus/bus.h"
#include "guard.h"
#include "../common/log.h"
#include "../conf/conf_schema.h"
#include "sd_notify.h"

/* The process-wide blocks are built once: a reload may change only their keys marked
 * GUST_K_RELOADABLE. Returns 0, or GUST_ECONFIG with err naming the first other key that
 * changed and where it is written now. */
static int check_restart_only(const struct gust_config *old, const struct gust_config *next, struct gust_err *err)
{
    for (size_t b = 0; b < GUST_CONFIG_BLOCKS; b++) {
        const struct gust_config_block *blk = &gust_config_blocks[b];
        const struct gust_cfg *a = gust_config_block_cfg(old, b), *n = gust_config_block_cfg(next, b);
        for (const struct gust_schema_key *k = blk->schema; k->key != NULL; k++) {
            if (!(k->flags & GUST_K_RELOADABLE) && !gust_cfg_same(a, n, k->key)) {
                return gust_err_set(err, GUST_ECONFIG,
                                    "%s: %s%s%s changed; it cannot change on reload, only at a restart",
                                    gust_cfg_where(n, k->key), blk->name, blk->name[0] ? "." : "", k->key);
            }
        }
    }
    return 0;
}

static int stopping(struct gust_reloader *r)
{
    pthread_mutex_lock(&r->lock);
    int s = r->stopping;
    pthread_mutex_unlock(&r->lock);
    return s;
}

/* nginx's way: the running generation stays until the new one can start, and the new
 * units need the bus to create their consumers. While it does not answer (down,
 * frozen), the old units stay (they go on by themselves once it is back); then the
 * swap. Returns 0 when the process stops meanwhile. */
static int wait_for_bus(struct gust_reloader *r)
{
    char why[256];
    for (int64_t waited = 0; !gust_bus_answering(r->bus, why, sizeof(why)); waited += 100) {
        if (waited == 0) {
            gust_warn("reload: %s; the running units stay until it answers, then the new ones replace them",
                      why);
        }
        if (stopping(r)) {
            return 0;
        }
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 1;
}

static void reload_once(struct gust_reloader *r)
{
    struct gust_err err = {{0}};
    struct gust_host *next = calloc(1, sizeof(*next));
    if (next == NULL) {
        gust_error("reload: out of memory; keeping the running configuration");
        gust_units_reloaded(r->units, "out of memory");
        return;
    }
    int rc = gust_host_prepare(next, r->config_path, &err);
    if (rc != 0) {
        gust_error("reload failed, keeping the running configuration: %s", err.msg);
        gust_units_reloaded(r->units, err.msg);
        gust_host_release(next);
        free(next);
        return;
    }
    rc = check_restart_only(r->current->config, next->config, &err);
    /* What the process applies itself (the HTTP front's tokens and limits) is made ready
     * now, so that a missing token file refuses the reload before anything changes. */
    void *pending = NULL;
    if (rc == 0 && r->apply.prepare != NULL) {
        rc = r->apply.prepare(r->apply.ud, next->config, &pending, &err);
    }
    if (rc != 0) {
        gust_error("reload refused, keeping the running configuration: %s", err.msg);
        gust_units_reloaded(r->units, err.msg);
        gust_host_release(next);
        free(next);
        return;
    }
    if (!wait_for_bus(r)) {
        if (r->apply.discard != NULL) {
            r->apply.discard(r->apply.ud, pending);
        }
        gust_host_release(next);
        free(next);
        return;
    }
    /* A unit of a kept kind (detect) that the new generation has unchanged keeps running,
     * state and all. */
    for (size_t i = 0; i < next->config->nunits; i++) {
        const struct gust_unit_conf *u = &next->config->units[i];
        if (u->kind->flags & GUST_KIND_KEPT) {
            char identity[GUST_DIGEST_LEN + 1];
            gust_unit_digest(u, identity);
            gust_units_keep(r->units, u->name, identity);
        }
    }
    /* The other units stop between batches: what they fetched is acked (emits stored)
     * or left for redelivery, and the new units continue on the same durable consumers
     * (a detect unit that changed checkpoints at its stop; the new one reads on from
     * there). */
    gust_host_stop(r->current);
    rc = gust_host_start(next, r->bus, r->units, r->current->leases, r->current->nodes, &err);
    if (rc != 0) {
        if (r->apply.discard != NULL) {
            r->apply.discard(r->apply.ud, pending);
        }
        gust_error("reload failed while starting, restarting the previous configuration: %s", err.msg);
        gust_units_reloaded(r->units, err.msg);
        gust_host_release(next);
        free(next);
        struct gust_err again = {{0}};
        if (gust_host_start(r->current, r->bus, r->units, r->current->leases, r->current->nodes, &again) != 0) {
            gust_error("reload: the previous configuration does not start again either: %s", again.msg);
        }
        return;
    }
    /* The new units are listed: now the old ones (stopped) can go. The registry is the
     * new generation's from here, so the old one must not stop what is in it. */
    gust_units_drop_stopped(r->units);
    r->current->units = NULL;
    gust_host_release(r->current);
    free(r->current);
    r->current = next;
    if (r->apply.commit != NULL) {
        r->apply.commit(r->apply.ud, next->config, pending);
    }
    gust_units_reloaded(r->units, NULL);
    gust_info("reloaded %s: generation %llu", r->config_path, (unsigned long long)r->units->generation);
}

static void *reload_thread(void *arg)
{
    struct gust_reloader *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->requested && !r->stopping) {
            pthread_cond_wait(&r->wake, &r->lock);
        }
        if (r->stopping) {
            break;
        }
        r->requested = 0;
        pthread_mutex_unlock(&r->lock);
        reload_once(r);
        gust_sd_notify("READY=1"); /* after RELOADING=1 at SIGHUP, whatever the outcome */
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int gust_reloader_start(struct gust_reloader *r, const char *config_path, struct gust_bus *bus,
                        struct gust_units *units, struct gust_host *current, const struct gust_reload_apply *apply,
                        struct gust_err *err)
{
    memset(r, 0, sizeof(*r));
    if (apply != NULL) {
        r->apply = *apply;
    }
    r->config_path = config_path;
    r->bus = bus;
    r->units = units;
    r->current = current;
    r->nodes = current->nodes;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    if (pthread_create(&r->thread, NULL, reload_thread, r) != 0) {
        return gust_err_set(err, GUST_EIO, "cannot start the reload thread");
    }
    return 0;
}

void gust_reloader_request(void *reloader)
{
    struct gust_reloader *r = reloader;
    pthread_mutex_lock(&r->lock);
    r->requested = 1;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

int gust_reloader_check(void *reloader, int force, char *why, size_t size)
{
    struct gust_reloader *r = reloader;
    return gust_guard_reload(r->nodes, r->config_path, force, why, size);
}

void gust_reloader_stop(struct gust_reloader *r)
{
    pthread_mutex_lock(&r->lock);
    r->stopping = 1;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    gust_host_release(r->current);
    free(r->current);
    r->current = NULL;
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
}
