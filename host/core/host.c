#include "host.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cluster/lease.h"
#include "../cluster/nodes.h"
#include "../common/log.h"
#include "../flow/tables.h"
#include "config_digest.h"
#include "config_tables.h"
#include "edges.h"
#include "kind.h"
#include "unit_secrets.h"

int gust_host_prepare(struct gust_host *host, const char *config_path, struct gust_err *err)
{
    int rc = gust_config_load(config_path, &host->config, err);
    if (rc != 0) {
        return rc;
    }
    struct gust_config *c = host->config;
    const char *dlq = c->nats.dlq_subjects;
    size_t dlq_len = strlen(dlq);
    if (dlq_len < 3 || strcmp(dlq + dlq_len - 2, ".>") != 0 || dlq_len - 1 >= sizeof(host->dlq_prefix)) {
        return gust_err_set(err, GUST_ECONFIG, "%s: dlq_subjects must end with '.>' (e.g. dlq.>)",
                            gust_cfg_where(c->nats_cfg, "dlq_subjects"));
    }
    memcpy(host->dlq_prefix, dlq, dlq_len - 1);
    host->dlq_prefix[dlq_len - 1] = '\0';
    /* The lookup tables, before the flows that read them at load. */
    if ((rc = gust_tables_create(&host->tables, err)) != 0 ||
        (rc = gust_config_tables_load(c, host->tables, err)) != 0) {
        return rc;
    }
    char dir[PATH_MAX];
    if (c->top.plugin_dir != NULL) {
        snprintf(dir, sizeof(dir), "%s", c->top.plugin_dir);
    } else {
        gust_plugins_default_dir(dir, sizeof(dir));
    }
    for (size_t i = 0; i < c->nplugins; i++) {
        rc = gust_plugins_load(&host->plugins, dir, c->plugins[i].name, c->plugins[i].where, err);
        if (rc != 0) {
            return rc;
        }
    }
    for (size_t i = 0; i < c->nunits; i++) {
        struct gust_unit_conf *u = &c->units[i];
        if (u->kind->check != NULL && (rc = u->kind->check(host, u, err)) != 0) {
            return rc;
        }
    }
    return 0;
}

/* Fail-closed: a unit whose secret did not resolve stays stopped, the others run;
 * /healthz names it. Asked once per unit. */
static int secrets_ok(const struct gust_unit_conf *u)
{
    char ref[256], why[300];
    if (gust_unit_secrets_ok(u, ref, sizeof(ref), why, sizeof(why))) {
        return 1;
    }
    gust_error("[%s_%s] not started: {secret:%s} did not resolve: %s", u->kind->name, u->name, ref,
               why);
    gust_secrets_block_unit(u->name, ref, why);
    return 0;
}

static int remember(struct gust_host *host, const struct gust_unit_conf *u, void *state)
{
    struct gust_started *v = realloc(host->started, (host->nstarted + 1) * sizeof(*v));
    if (v == NULL) {
        return -1;
    }
    host->started = v;
    v[host->nstarted++] = (struct gust_started){.unit = u, .state = state};
    return 0;
}

int gust_host_start(struct gust_host *host, struct gust_bus *bus, struct gust_units *units,
                    struct gust_leases *leases, struct gust_nodes *nodes, struct gust_err *err)
{
    struct gust_config *c = host->config;
    host->units = units;
    host->leases = leases;
    host->nodes = nodes;
    gust_unit_secrets_configure(c);
    /* The kinds that feed edges last: the queues they feed exist by then. */
    for (int late = 0; late <= 1; late++) {
        for (size_t i = 0; i < c->nunits; i++) {
            struct gust_unit_conf *u = &c->units[i];
            if (((u->kind->flags & GUST_KIND_FEEDS_EDGES) != 0) != late || !secrets_ok(u)) {
                continue;
            }
            void *state = NULL;
            int rc = u->kind->start(host, u, bus, &state, err);
            if (state != NULL && remember(host, u, state) != 0) {
                u->kind->stop(host, u, state);
                rc = rc != 0 ? rc : gust_err_set(err, GUST_ENOMEM, "out of memory");
            }
            if (rc != 0) {
                return rc;
            }
        }
    }
    if (leases != NULL) { /* NULL: a generation with no singletons (tests) */
        gust_leases_prune(leases);
    }
    if (nodes != NULL) {
        char digest[GUST_DIGEST_LEN + 1];
        gust_config_digest(c, digest);
        gust_nodes_advertise(nodes, digest);
    }
    return 0;
}

void gust_host_stop(struct gust_host *host)
{
    for (size_t i = 0; i < host->nstarted; i++) {
        const struct gust_unit_conf *u = host->started[i].unit;
        u->kind->stop(host, u, host->started[i].state);
    }
    host->nstarted = 0;
    free(host->started);
    host->started = NULL;
    gust_edge_links_free(host->edges); /* after the sources: they no longer publish */
    host->edges = NULL;
    if (host->units != NULL) {
        gust_units_stop(host->units);
    }
}

void gust_host_release(struct gust_host *host)
{
    gust_host_stop(host);
    if (host->units != NULL) {
        gust_units_drop_stopped(host->units);
        host->units = NULL;
    }
    gust_plugins_unload(&host->plugins);
    gust_tables_unref(host->tables); /* the flows that read them hold their own references */
    host->tables = NULL;
    gust_config_destroy(host->config);
    host->config = NULL;
}
