#include "reload.h"

#include <stdlib.h>
#include <string.h>

#include "../cluster/config_digest.h"
#include "../cluster/guard.h"
#include "../common/log.h"

/* http and nats are read once at start: say so when a reload changes them. */
static void warn_restart_only(const struct gust_config *old, const struct gust_config *next)
{
    static const char *const top_keys[] = {"state_dir", "node_name", "cluster", NULL};
    static const char *const http_keys[] = {"listen", "base_path", "max_body", NULL};
    static const char *const nats_keys[] = {"url",        "stream",       "subjects",  "dlq_stream", "publish_timeout",
                                            "ack_wait",   "replicas",     "lease_ttl", "lease_poll", "lease_bucket",
                                            NULL};
    const struct {
        const char *block; /* how the key is named in the warning */
        const struct gust_cfg *a, *b;
        const char *const *keys;
    } blocks[] = {{"", old->top, next->top, top_keys},
                  {"http.", old->http, next->http, http_keys},
                  {"nats.", old->nats, next->nats, nats_keys}};
    for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
        for (const char *const *k = blocks[i].keys; *k != NULL; k++) {
            size_t n = gust_cfg_count(blocks[i].a, *k);
            int same = n == gust_cfg_count(blocks[i].b, *k);
            for (size_t j = 0; same && j < n; j++) {
                same = strcmp(gust_cfg_item(blocks[i].a, *k, j), gust_cfg_item(blocks[i].b, *k, j)) == 0;
            }
            if (!same) {
                gust_warn("reload: %s%s changed; it takes effect at the next restart", blocks[i].block, *k);
            }
        }
    }
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
    warn_restart_only(r->current->config, next->config);
    /* A detect unit the new generation has unchanged keeps running, state and all. */
    for (size_t i = 0; i < next->config->nunits; i++) {
        const struct gust_unit_conf *u = &next->config->units[i];
        if (u->kind == GUST_UNIT_DETECT) {
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
    rc = gust_host_start(next, r->bus, r->units, r->current->leases, &err);
    if (rc != 0) {
        gust_error("reload failed while starting, restarting the previous configuration: %s", err.msg);
        gust_units_reloaded(r->units, err.msg);
        gust_host_release(next);
        free(next);
        struct gust_err again = {{0}};
        if (gust_host_start(r->current, r->bus, r->units, r->current->leases, &again) != 0) {
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
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int gust_reloader_start(struct gust_reloader *r, const char *config_path, struct gust_bus *bus,
                        struct gust_units *units, struct gust_host *current, struct gust_err *err)
{
    memset(r, 0, sizeof(*r));
    r->config_path = config_path;
    r->bus = bus;
    r->units = units;
    r->current = current;
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
    return gust_guard_reload(r->units->nodes, r->config_path, force, why, size);
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
