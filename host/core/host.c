#include "host.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../common/file.h"
#include "../common/log.h"
#include "../conf/conf_schema.h"
#include "../flow/flow.h"
#include "../plugin/sink_handler.h"
#include "../unit/handlers.h"
#include "../bus/bus.h"
#include "../bus/feeds.h"
#include "config_digest.h"
#include "../cluster/lease.h"
#include "../cluster/nodes.h"
#include "../unit/edge.h"
#include "../unit/flow_state.h"
#include "config_tables.h"
#include "edges.h"
#include "unit_secrets.h"

/* How long a unit's read waits for a message: bounds how long a stop waits for an idle
 * unit. */
#define FEED_WAIT_MS 500

/* What a flow unit's script runs with: the same for `gust -t` and a running unit. */
static struct gust_flow_opts flow_opts(const struct gust_host *host, const struct gust_unit_conf *u)
{
    return (struct gust_flow_opts){.script_path = u->k.script,
                                   .timeout_ms = (long)u->k.timeout,
                                   .memory_max = (size_t)u->k.memory_max,
                                   .lua_path = gust_config_lua_path(host->config, u),
                                   .tables = host->tables};
}

static int check_flow(const struct gust_host *host, const struct gust_unit_conf *u, struct gust_err *err)
{
    struct gust_flow_opts fo = flow_opts(host, u);
    struct gust_flow *flow = NULL;
    struct gust_err ferr = {{0}};
    int rc = gust_flow_create(&fo, &flow, &ferr);
    if (rc != 0 && strstr(ferr.msg, "} is not resolved: ") != NULL) {
        /* The script's secret() needs the store, which the generation's start fills
         * (fail-closed there, that unit only): not a configuration error. */
        return 0;
    }
    if (rc != 0) {
        return gust_err_set(err, rc, "%s: flow '%s': %s", gust_cfg_where(u->cfg, "script"), u->name, ferr.msg);
    }
    if (u->k.source == NULL && u->k.edge == NULL && gust_flow_source(flow) == NULL) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: flow '%s' has no source: set `source SUBJECT;` or the script's `source`",
                          u->where, u->name);
    }
    gust_flow_destroy(flow);
    return rc;
}

/* Reads and compiles a detect unit's program: with bus and leases NULL only to check it
 * (gust -t, a reload's preparation). */
static int load_detect(const struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus,
                       struct gust_leases *leases, struct gust_handler *h, char **filter, struct gust_err *err)
{
    struct gust_lease_port port = leases != NULL ? gust_leases_port(leases) : (struct gust_lease_port){0};
    const char *path = u->k.rules;
    struct gust_buf src = {0};
    int rc = gust_file_read(path, &src);
    if (rc != 0) {
        gust_buf_free(&src);
        return gust_err_set(err, GUST_ECONFIG, "%s: detect '%s': cannot read %s", gust_cfg_where(u->cfg, "rules"),
                            u->name, path);
    }
    int64_t slices = u->k.slices;
    struct gust_detect_opts o = {
        .unit = u->name,
        .prefix = host->config->subject_prefix,
        .path = path,
        .src = src.data != NULL ? src.data : "",
        .len = src.len,
        .slices = (uint32_t)slices,
        .checkpoint_interval_ms = u->k.checkpoint_interval,
        .checkpoint_events = u->k.checkpoint_events,
        .idle_tick_ms = u->k.idle_tick,
        .stream = host->config->nats.stream,
        .edge = u->k.edge != NULL,
        .bus = bus,
        .leases = leases != NULL ? &port : NULL,
    };
    rc = gust_detect_handler_create(&o, h, filter, err);
    gust_buf_free(&src);
    if (rc != 0 && slices > 1 && strstr(err->msg, "slices") != NULL) {
        /* Name the line of the setting the program cannot take. */
        struct gust_err plain = *err;
        gust_err_set(err, rc, "%s: %s", gust_cfg_where(u->cfg, "slices"), plain.msg);
    }
    return rc;
}

static int check_detect(const struct gust_host *host, const struct gust_unit_conf *u, struct gust_err *err)
{
    struct gust_handler h;
    char *filter = NULL;
    int rc = load_detect(host, u, NULL, NULL, &h, &filter, err);
    if (rc == 0) {
        h.destroy(h.impl);
        free(filter);
    }
    return rc;
}

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
        switch (u->kind) {
        case GUST_UNIT_FLOW:
            rc = check_flow(host, u, err);
            break;
        case GUST_UNIT_DETECT:
            rc = check_detect(host, u, err);
            break;
        case GUST_UNIT_RELAY:
            break;
        case GUST_UNIT_SINK:
        case GUST_UNIT_SOURCE: {
            const struct gust_plugin_type *t = gust_plugins_find_type(&host->plugins, u->use);
            int want = u->kind == GUST_UNIT_SINK ? GUST_PLUGIN_SINK : GUST_PLUGIN_SOURCE;
            if (t == NULL) {
                rc = gust_err_set(err, GUST_ECONFIG, "%s: %s '%s' uses '%s', which no loaded plugin provides (load it with `plugin NAME;`)",
                                  u->where, gust_unit_kind_name(u->kind), u->name, u->use);
            } else if (t->kind != want) {
                rc = gust_err_set(err, GUST_ECONFIG, "%s: '%s' is a %s plugin type, not a %s", u->where, u->use,
                                  t->kind == GUST_PLUGIN_SINK ? "sink" : "source", gust_unit_kind_name(u->kind));
            } else {
                rc = gust_config_check_plugin_unit(u, t->schema, err);
            }
            if (rc == 0) {
                /* create does no I/O: run it now so the plugin's own checks report at
                 * `gust -t` and before a reload replaces anything. */
                struct gust_instance probe;
                memset(&probe, 0, sizeof(probe)); /* disposed even when create is not reached */
                struct gust_cfg *stand_in = NULL;
                rc = gust_unit_secrets_cfg(u, t->schema, 1, &stand_in, err);
                if (rc == 0) {
                    rc = gust_instance_create(&probe, gust_unit_kind_name(u->kind), u->name, t,
                                              stand_in ? stand_in : u->cfg, NULL, err);
                }
                gust_instance_dispose(&probe);
                gust_cfg_destroy(stand_in);
            }
            break;
        }
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static struct gust_consumer_conf consumer_conf(const struct gust_host *host, const struct gust_unit_conf *u,
                                               const char *kind, const char *source, const char *identity)
{
    const struct gust_config *c = host->config;
    return (struct gust_consumer_conf){
        .unit = u->name,
        .kind = kind,
        .source = source,
        .identity = identity,
        .dlq_prefix = host->dlq_prefix,
        .batch = (int)u->k.batch,
        .max_deliver = c->nats.max_deliver,
        .retry_delay_ms = c->nats.retry_delay,
        .retry_max_delay_ms = c->nats.retry_max_delay,
        .settle = GUST_SETTLE_ACK,
    };
}

/* The edge path: a flow or detect unit with `edge SOURCE;`, fed from memory. */
static const char *edge_of(const struct gust_unit_conf *u)
{
    return u->kind == GUST_UNIT_FLOW || u->kind == GUST_UNIT_DETECT ? u->k.edge : NULL;
}

/* A unit's durable consumer, opened by the unit's thread (consumer.h): what it needs,
 * its own copies, since a kept unit outlives the generation that made it. */
struct durable_opener {
    struct gust_bus *bus;
    struct gust_durable_conf dc;
    char stream[128];
    char durable[160];
    char *filter;
};

static int durable_open(void *ud, struct gust_feed **out, struct gust_err *err)
{
    struct durable_opener *o = ud;
    return gust_durable_feed_open(o->bus, &o->dc, out, err);
}

static void durable_opener_free(void *ud)
{
    struct durable_opener *o = ud;
    if (o != NULL) {
        free(o->filter);
        free(o);
    }
}

/* The feed a unit reads: an edge queue, an ordered read of its subjects (detect), or
 * its durable consumer <kind>_<unit> (*feed left NULL: cc->opener opens it, retried
 * until the bus lets it). */
static int open_feed(struct gust_host *host, const struct gust_unit_conf *u, struct gust_consumer_conf *cc,
                     const char *filter, int order, struct gust_bus *bus, struct gust_feed **feed,
                     struct gust_err *err)
{
    const char *edge = edge_of(u);
    if (edge != NULL) {
        struct gust_edge *e = NULL;
        int rc = gust_edge_create(u->name, edge, (size_t)u->k.edge_queue, &e, err);
        if (rc != 0) {
            return rc;
        }
        if ((*feed = gust_edge_feed(e)) == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        cc->edge = e;
        cc->settle = GUST_SETTLE_NONE;
        gust_info("[%s_%s] fed in memory by source '%s' (edge path: at most once; queue %zu)", cc->kind, u->name,
                  edge, gust_edge_capacity(e));
        return 0;
    }
    const char *stream = host->config->nats.stream;
    if (u->kind == GUST_UNIT_DETECT) {
        cc->settle = GUST_SETTLE_ORDERED; /* from where its checkpoints say, set by its handler */
        return gust_ordered_feed_open(bus, stream, filter, 0, FEED_WAIT_MS, feed, err);
    }
    struct durable_opener *o = calloc(1, sizeof(*o));
    if (o == NULL || (o->filter = strdup(filter)) == NULL) {
        durable_opener_free(o);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    o->bus = bus;
    snprintf(o->stream, sizeof(o->stream), "%s", stream);
    snprintf(o->durable, sizeof(o->durable), "%s_%s", cc->kind, u->name);
    o->dc = (struct gust_durable_conf){
        .stream = o->stream,
        .durable = o->durable,
        .filter = o->filter,
        .batch = cc->batch,
        .ack_wait_ms = host->config->nats.ack_wait,
        /* In stream order, one batch at a time: what the server hands out past the batch
         * held only waits (and may be delivered again). */
        .max_ack_pending = order == GUST_ORDER_STREAM ? cc->batch : cc->batch * 8 > 1000 ? cc->batch * 8 : 1000,
        .expires_ms = FEED_WAIT_MS,
        .from_ack_floor = order != GUST_ORDER_NONE,
    };
    cc->opener = (struct gust_feed_opener){.open = durable_open, .free = durable_opener_free, .ud = o};
    *feed = NULL;
    return 0;
}

/* Creates the unit, lists it, opens its feed and starts it. h is owned from here on. */
static int start_unit(struct gust_host *host, const struct gust_unit_conf *u, const char *kind, const char *filter,
                      const char *identity, int order, struct gust_handler h, struct gust_bus *bus,
                      struct gust_err *err)
{
    char source[300];
    snprintf(source, sizeof(source), "%s%s", edge_of(u) != NULL ? "edge:" : "",
             edge_of(u) != NULL ? edge_of(u) : filter);
    struct gust_consumer_conf cc = consumer_conf(host, u, kind, source, identity);
    if (u->kind == GUST_UNIT_FLOW) {
        cc.handler_timeout_ms = u->k.timeout;
    }
    struct gust_feed *feed = NULL;
    int rc = open_feed(host, u, &cc, filter, order, bus, &feed, err);
    if (rc != 0) {
        h.destroy(h.impl);
        return rc;
    }
    struct gust_consumer *consumer = NULL;
    if ((rc = gust_consumer_create(&cc, feed, gust_bus_outlet(bus), h, &consumer, err)) != 0) {
        return rc;
    }
    /* From here on the registry owns the unit, listed stopped until it starts. */
    if (gust_units_add(host->units, consumer) != 0 ||
        (cc.edge != NULL && gust_edge_links_add(&host->edges, edge_of(u), cc.edge) != 0)) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    if (strcmp(kind, "detect") == 0 && (rc = gust_detect_handler_start(h.impl, err)) != 0) {
        return rc;
    }
    return gust_consumer_start(consumer, err);
}

static int start_flow(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus,
                      struct gust_err *err)
{
    const struct gust_config *c = host->config;
    struct gust_flow_opts fo = flow_opts(host, u);
    struct gust_handler h;
    const char *script_source = NULL;
    char durable[160];
    snprintf(durable, sizeof(durable), "flow_%s", u->name); /* open_feed's name for it */
    struct gust_kv_state_conf sc = {
        .bus = bus,
        .bucket = c->nats.state_bucket,
        .replicas = (int)c->nats.replicas,
        .unit = u->name,
        .stream = c->nats.stream,
        .durable = edge_of(u) == NULL ? durable : NULL,
        /* In a cluster the other processes write the same keys: no cache there. */
        .cache_bytes = c->top.cluster ? 0 : (size_t)u->k.state_cache,
        .wait_ms = c->nats.publish_timeout,
    };
    int rc = gust_flow_handler_create(u->name, &fo, (long)u->k.log_rate, &sc, &h, &script_source, err);
    if (rc != 0) {
        return rc;
    }
    const char *source = u->k.source != NULL ? u->k.source : script_source;
    return start_unit(host, u, "flow", source, NULL, GUST_ORDER_NONE, h, bus, err);
}

static int start_sink(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus,
                      struct gust_err *err)
{
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
    return start_unit(host, u, "sink", u->k.source, NULL, so.order, h, bus, err);
}

/* A detect unit: kept running from the generation before when it is the same unit
 * (its block and its program unchanged: state and all), else made anew. */
static int start_detect(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus,
                        struct gust_err *err)
{
    char identity[GUST_DIGEST_LEN + 1];
    gust_unit_digest(u, identity);
    struct gust_consumer *kept = gust_units_adopt(host->units, u->name);
    if (kept != NULL) {
        struct gust_edge *e = gust_consumer_edge(kept);
        if (e != NULL && gust_edge_links_add(&host->edges, edge_of(u), e) != 0) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        gust_info("[detect_%s] unchanged: kept running, state and all", u->name);
        return 0;
    }
    struct gust_handler h;
    char *filter = NULL;
    int rc = load_detect(host, u, bus, host->leases, &h, &filter, err);
    if (rc == 0) {
        rc = start_unit(host, u, "detect", filter, identity, GUST_ORDER_NONE, h, bus, err);
        free(filter);
    }
    return rc;
}

static int source_start(void *ud, struct gust_err *err)
{
    struct gust_source *s = ud;
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

static void source_stop(void *ud)
{
    struct gust_source *s = ud;
    if (s->units != NULL && s->inst.type != NULL) {
        gust_units_source_remove(s->units, &s->inst.published);
    }
    gust_instance_dispose(&s->inst);
}

/* Fail-closed: a unit whose secret did not resolve stays stopped, the others run;
 * /healthz names it. Asked once per unit: sources in the second loop below. */
static int secrets_ok(const struct gust_unit_conf *u)
{
    char ref[256], why[300];
    if (gust_unit_secrets_ok(u, ref, sizeof(ref), why, sizeof(why))) {
        return 1;
    }
    gust_error("[%s_%s] not started: {secret:%s} did not resolve: %s", gust_unit_kind_name(u->kind), u->name, ref,
               why);
    gust_secrets_block_unit(u->name, ref, why);
    return 0;
}

/* A flow's script called secret() on a reference that did not resolve (its load error
 * says "{secret:REF} is not resolved: ...", flow_secret.c): fail-closed like a reference
 * in host.conf, that unit only. */
static int flow_secret_failed(const struct gust_unit_conf *u, const struct gust_err *err)
{
    const char *at = strstr(err->msg, "{secret:");
    const char *end = at != NULL ? strstr(at, "} is not resolved: ") : NULL;
    if (end == NULL) {
        return 0;
    }
    char ref[256];
    snprintf(ref, sizeof(ref), "%.*s", (int)(end - at - 8), at + 8);
    char why[300];
    snprintf(why, sizeof(why), "%.*s", (int)strcspn(end + 19, "\n"), end + 19); /* without the traceback */
    gust_error("[flow_%s] not started: its script's secret(\"%s\") did not resolve: %s", u->name, ref, why);
    gust_secrets_block_unit(u->name, ref, why);
    return 1;
}

int gust_host_start(struct gust_host *host, struct gust_bus *bus, struct gust_units *units,
                    struct gust_leases *leases, struct gust_err *err)
{
    struct gust_config *c = host->config;
    host->units = units;
    host->leases = leases;
    host->sources = calloc(c->nunits + 1, sizeof(*host->sources));
    if (host->sources == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    gust_unit_secrets_configure(c);
    for (size_t i = 0; i < c->nunits; i++) {
        struct gust_unit_conf *u = &c->units[i];
        int rc = 0;
        if (u->kind != GUST_UNIT_SOURCE && !secrets_ok(u)) {
            continue;
        }
        if (u->kind == GUST_UNIT_FLOW) {
            rc = start_flow(host, u, bus, err);
        } else if (u->kind == GUST_UNIT_DETECT) {
            rc = start_detect(host, u, bus, err);
        } else if (u->kind == GUST_UNIT_RELAY) {
            struct gust_handler h = gust_relay_handler(u->k.to);
            rc = h.impl != NULL ? start_unit(host, u, "relay", u->k.source, NULL, GUST_ORDER_NONE, h, bus, err)
                                : gust_err_set(err, GUST_ENOMEM, "out of memory");
        } else if (u->kind == GUST_UNIT_SINK) {
            rc = start_sink(host, u, bus, err);
        }
        if (rc != 0 && u->kind == GUST_UNIT_FLOW && flow_secret_failed(u, err)) {
            continue;
        }
        if (rc != 0) {
            return rc;
        }
    }
    for (size_t i = 0; i < c->nunits; i++) {
        struct gust_unit_conf *u = &c->units[i];
        if (u->kind != GUST_UNIT_SOURCE || !secrets_ok(u)) {
            continue;
        }
        struct gust_source *s = &host->sources[host->nsources++];
        s->type = gust_plugins_find_type(&host->plugins, u->use);
        s->unit = u;
        s->bus = bus;
        s->leased = !u->k.competing;
        s->edges = gust_edge_links_find(host->edges, u->name);
        s->units = units;
        int rc;
        if (s->leased) {
            struct gust_lease_task task = {.start = source_start, .stop = source_stop, .ud = s};
            char key[96];
            snprintf(key, sizeof(key), "source.%s", u->name);
            rc = gust_leases_attach(leases, key, u->name, &task, err);
            if (rc != 0) {
                return rc;
            }
        } else if ((rc = source_start(s, err)) != 0) {
            return rc;
        }
    }
    gust_leases_prune(leases);
    if (units->nodes != NULL) {
        char digest[GUST_DIGEST_LEN + 1];
        gust_config_digest(c, digest);
        gust_nodes_advertise(units->nodes, digest);
    }
    return 0;
}

void gust_host_stop(struct gust_host *host)
{
    for (size_t i = 0; i < host->nsources; i++) {
        struct gust_source *s = &host->sources[i];
        if (s->leased) {
            char key[96];
            snprintf(key, sizeof(key), "source.%s", s->unit->name);
            gust_leases_detach(host->leases, key);
        } else {
            source_stop(s);
        }
    }
    host->nsources = 0;
    free(host->sources);
    host->sources = NULL;
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
