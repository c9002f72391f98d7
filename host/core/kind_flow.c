/* The flow kind: a Lua script on the consumer core (host/flow, unit/flow_handler.c). */
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../flow/flow.h"
#include "../unit/flow_state.h"
#include "../unit/handlers.h"
#include "edges.h"
#include "kind.h"
#include "unit_start.h"

static const struct gust_schema_key flow_schema[] = {
    GUST_UNIT_KEY(script, PATH, NULL, GUST_K_REQUIRED, "the Lua flow"),
    GUST_UNIT_KEY(source, FILTER, NULL, 0, "subject consumed (default: the script's `source`)"),
    GUST_UNIT_KEY(timeout, DURATION, "1s", 0,
         "longest run of on_event for one event (and of the script's load): past it the event fails, whatever the "
         "script runs (string patterns and what one call may build are bounded too)"),
    GUST_UNIT_KEY(memory_max, SIZE, "64m", 0,
         "bound of the flow's Lua heap (0: none): an event that takes it over fails (retried, then dead-lettered) "
         "and the Lua state is rebuilt (durable state stays)"),
    GUST_UNIT_KEY(batch, INT, "256", 0, "messages fetched at once"),
    GUST_UNIT_KEY(lua_path, PATH, NULL, 0, "where require finds modules (default: the top-level lua_path)"),
    GUST_UNIT_KEY_RANGE(log_rate, INT, "100", 0, 1, INT64_MAX,
         "log.* lines a second the script may write (bursts up to as many); the rest are dropped and counted"),
    GUST_UNIT_KEY(state_cache, SIZE, "8m", 0,
         "bytes of the flow's durable state kept in memory between batches (0: none; none with `cluster on;`, "
         "where other processes write the same keys)"),
    GUST_EDGE_KEYS(GUST_UNIT_KEY, GUST_UNIT_KEY_RANGE),
    GUST_KEY_END,
};

/* What a flow unit's script runs with: the same for `gust -t` and a running unit. */
static struct gust_flow_opts flow_opts(const struct gust_host *host, const struct gust_unit_conf *u)
{
    return (struct gust_flow_opts){.script_path = u->k.script,
                                   .timeout_ms = (long)u->k.timeout,
                                   .memory_max = (size_t)u->k.memory_max,
                                   .lua_path = gust_config_lua_path(host->config, u),
                                   .tables = host->tables};
}

static int check_flow(struct gust_host *host, struct gust_unit_conf *u, struct gust_err *err)
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

static int start_flow(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus, void **state,
                      struct gust_err *err)
{
    (void)state;
    const struct gust_config *c = host->config;
    struct gust_flow_opts fo = flow_opts(host, u);
    struct gust_handler h;
    const char *script_source = NULL;
    char durable[160];
    snprintf(durable, sizeof(durable), "flow_%s", u->name); /* gust_unit_start's name for it */
    struct gust_kv_state_conf sc = {
        .bus = bus,
        .bucket = c->nats.state_bucket,
        .replicas = (int)c->nats.replicas,
        .unit = u->name,
        .stream = c->nats.stream,
        .durable = u->k.edge == NULL ? durable : NULL,
        /* In a cluster the other processes write the same keys: no cache there. */
        .cache_bytes = c->top.cluster ? 0 : (size_t)u->k.state_cache,
        .wait_ms = c->nats.publish_timeout,
    };
    int rc = gust_flow_handler_create(u->name, &fo, (long)u->k.log_rate, &sc, &h, &script_source, err);
    if (rc == 0) {
        struct gust_unit_start s = {
            .filter = u->k.source != NULL ? u->k.source : script_source,
            .batch = u->k.batch,
            .handler_timeout_ms = u->k.timeout,
        };
        rc = gust_unit_start(host, u, &s, h, bus, err);
    }
    return rc != 0 && flow_secret_failed(u, err) ? 0 : rc;
}

static const char *const flow_files[] = {"script", NULL};

const struct gust_kind gust_kind_flow = {
    .name = "flow",
    .help = "",
    .schema = flow_schema,
    .flags = GUST_KIND_LUA,
    .file_keys = flow_files,
    .check = check_flow,
    .start = start_flow,
};
