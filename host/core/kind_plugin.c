/* The plugin kinds: a sink (a plugin's deliver on the consumer core,
 * plugin/sink_handler.c) and a source (a plugin instance that publishes; one process of
 * a cluster runs a singleton source, under a lease). Their keys are their own plus
 * those of the plugin type their `use` names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cluster/lease.h"
#include "../conf/conf_schema.h"
#include "../plugin/instance.h"
#include "../plugin/sink_handler.h"
#include "edges.h"
#include "kind.h"
#include "unit_secrets.h"
#include "unit_start.h"

static const struct gust_schema_key sink_schema[] = {
    GUST_UNIT_KEY(use, STR, NULL, GUST_K_REQUIRED, "the plugin type"),
    GUST_UNIT_KEY(source, FILTER, NULL, GUST_K_REQUIRED, "subject consumed"),
    GUST_UNIT_KEY(batch, INT, "256", 0, "messages fetched at once"),
    GUST_KEY_END,
};

static const struct gust_schema_key source_schema[] = {
    GUST_UNIT_KEY(use, STR, NULL, GUST_K_REQUIRED, "the plugin type"),
    GUST_UNIT_KEY(competing, BOOL, "off", 0,
         "off: one process of a cluster runs the source, under a lease; on: every process runs it (e.g. an MQTT "
         "shared subscription)"),
    GUST_KEY_END,
};

/* The unit's keys with its plugin type's; then create, which does no I/O, so that the
 * plugin's own checks report at `gust -t` and before a reload replaces anything. */
static int check_plugin_unit(struct gust_host *host, struct gust_unit_conf *u, struct gust_err *err)
{
    const struct gust_plugin_type *t = gust_plugins_find_type(&host->plugins, u->use);
    int want = u->kind->plugin_kind;
    int rc;
    if (t == NULL) {
        rc = gust_err_set(err, GUST_ECONFIG,
                          "%s: %s '%s' uses '%s', which no loaded plugin provides (load it with `plugin NAME;`)",
                          u->where, u->kind->name, u->name, u->use);
    } else if (t->kind != want) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: '%s' is a %s plugin type, not a %s", u->where, u->use,
                          t->kind == GUST_PLUGIN_SINK ? "sink" : "source", u->kind->name);
    } else {
        rc = gust_config_check_plugin_unit(u, t->schema, err);
    }
    if (rc == 0) {
        struct gust_instance probe;
        memset(&probe, 0, sizeof(probe)); /* disposed even when create is not reached */
        struct gust_cfg *stand_in = NULL;
        rc = gust_unit_secrets_cfg(u, t->schema, 1, &stand_in, err);
        if (rc == 0) {
            rc = gust_instance_create(&probe, u->kind->name, u->name, t, stand_in ? stand_in : u->cfg, NULL, err);
        }
        gust_instance_dispose(&probe);
        gust_cfg_destroy(stand_in);
    }
    return rc;
}

static int start_sink(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus, void **state,
                      struct gust_err *err)
{
    (void)state;
    struct gust_instance *inst = calloc(1, sizeof(*inst));
    if (inst == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    const struct gust_plugin_type *t = gust_plugins_find_type(&host->plugins, u->use);
    struct gust_cfg *with_secrets = NULL;
    int rc = gust_unit_secrets_cfg(u, t->schema, 0, &with_secrets, err);
    if (rc == 0) {
        rc = gust_instance_create(inst, "sink", u->name, t, with_secrets ? with_secrets : u->cfg, bus, err);
    }
    if (rc == 0) {
        inst->own_cfg = with_secrets;
        rc = gust_instance_start(inst, err);
    } else {
        gust_cfg_destroy_wiped(with_secrets);
    }
    const struct gust_config *c = host->config;
    struct gust_sink_opts so = {.ack_wait_ms = c->nats.ack_wait,
                                .retry_delay_ms = c->nats.retry_delay,
                                .retry_max_delay_ms = c->nats.retry_max_delay,
                                .order = rc == 0 && t->ordered != NULL ? t->ordered(inst->ctx) : GUST_ORDER_NONE};
    struct gust_handler h = gust_sink_handler(inst, &so);
    if (h.impl == NULL) {
        rc = rc != 0 ? rc : gust_err_set(err, GUST_ENOMEM, "out of memory");
        gust_instance_dispose(inst);
        free(inst);
        return rc;
    }
    if (rc != 0) {
        h.destroy(h.impl);
        return rc;
    }
    struct gust_unit_start s = {.filter = u->k.source, .batch = u->k.batch, .order = so.order};
    return gust_unit_start(host, u, &s, h, bus, err);
}

/* A source unit. A singleton source (the default) runs only while this process holds
 * its lease; its instance is created when the lease is taken and destroyed when it is
 * lost. A competing source (`competing on;`) runs in every process. */
struct source {
    struct gust_instance inst;
    const struct gust_plugin_type *type;
    const struct gust_unit_conf *unit;
    struct gust_bus *bus;
    struct gust_edge_set *edges; /* the edge units it feeds (NULL: it publishes to the bus) */
    struct gust_units *units;    /* borrowed: where its plugin's counters are shown */
    int leased;
};

static int source_run(void *ud, struct gust_err *err)
{
    struct source *s = ud;
    struct gust_cfg *with_secrets = NULL;
    int rc = gust_unit_secrets_cfg(s->unit, s->type->schema, 0, &with_secrets, err);
    if (rc == 0) {
        rc = gust_instance_create(&s->inst, "source", s->unit->name, s->type,
                                  with_secrets ? with_secrets : s->unit->cfg, s->bus, err);
    }
    if (rc != 0) {
        gust_cfg_destroy_wiped(with_secrets);
    }
    if (rc == 0) {
        s->inst.own_cfg = with_secrets;
        s->inst.edges = s->edges;
        rc = gust_instance_start(&s->inst, err);
        if (rc != 0) {
            gust_instance_dispose(&s->inst);
        } else if (s->units != NULL) {
            /* Not shown is all a failure costs: the source runs. */
            gust_units_source_add(s->units, s->unit->name, s->unit->use, s->type->counters, s->inst.ctx,
                                  &s->inst.published, &s->inst.note);
        }
    }
    return rc;
}

static void source_halt(void *ud)
{
    struct source *s = ud;
    if (s->units != NULL && s->inst.type != NULL) {
        gust_units_source_remove(s->units, &s->inst.published);
    }
    gust_instance_dispose(&s->inst);
}

static void lease_key(const struct gust_unit_conf *u, char *key, size_t size)
{
    snprintf(key, size, "source.%s", u->name);
}

static int start_source(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus, void **state,
                        struct gust_err *err)
{
    struct source *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    *state = s;
    s->type = gust_plugins_find_type(&host->plugins, u->use);
    s->unit = u;
    s->bus = bus;
    s->leased = !u->k.competing;
    s->edges = gust_edge_links_find(host->edges, u->name);
    s->units = host->units;
    if (s->leased) {
        struct gust_lease_task task = {.start = source_run, .stop = source_halt, .ud = s};
        char key[96];
        lease_key(u, key, sizeof(key));
        return gust_leases_attach(host->leases, key, u->name, &task, err);
    }
    return source_run(s, err);
}

/* Keeps a singleton's lease for the next generation (gust_leases_prune gives back the
 * ones it does not want). */
static void stop_source(struct gust_host *host, const struct gust_unit_conf *u, void *state)
{
    struct source *s = state;
    if (s->leased) {
        char key[96];
        lease_key(u, key, sizeof(key));
        gust_leases_detach(host->leases, key);
    } else {
        source_halt(s);
    }
    free(s);
}

const struct gust_kind gust_kind_sink = {
    .name = "sink",
    .help = " (plus its plugin type's keys)",
    .schema = sink_schema,
    .flags = GUST_KIND_PLUGIN,
    .plugin_kind = GUST_PLUGIN_SINK,
    .check = check_plugin_unit,
    .start = start_sink,
};

const struct gust_kind gust_kind_source = {
    .name = "source",
    .help = " (plus its plugin type's keys)",
    .schema = source_schema,
    .flags = GUST_KIND_PLUGIN | GUST_KIND_FEEDS_EDGES,
    .plugin_kind = GUST_PLUGIN_SOURCE,
    .check = check_plugin_unit,
    .start = start_source,
    .stop = stop_source,
};
