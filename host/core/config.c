#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/nats_url.h"
#include "../conf/conf_schema.h"
#include "edges.h"

const struct gust_schema_key gust_top_schema[] = {
    {"state_dir", GUST_T_PATH, "var", 0, "embedded NATS store and runtime files"},
    {"plugin_dir", GUST_T_PATH, NULL, 0, "where `plugin NAME;` finds NAME.so (default: plugins/ beside the gust binary)"},
    {"log_level", GUST_T_STR, "info", GUST_K_RELOADABLE, "error, warn, info or debug"},
    {"node_name", GUST_T_STR, NULL, 0, "this process's name in the leases and /units (default: hostname:pid)"},
    {"cluster", GUST_T_BOOL, "off", 0,
     "on: one of several processes on one NATS; POST /reload refuses units that no peer runs (409)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct gust_schema_key gust_http_schema[] = {
    {"listen", GUST_T_ADDR, "127.0.0.1:8787", 0, "address of the HTTP listener"},
    {"base_path", GUST_T_STR, "/", 0, "path prefix when mounted behind a proxy, e.g. /gust"},
    {"max_body", GUST_T_SIZE, "1m", 0, "largest accepted request body"},
    {"max_depth", GUST_T_INT, "200", 0,
     "ingest: arrays and objects nested at most in a body (400 beyond; 200 is what flows decode)"},
    {"admin_token_file", GUST_T_PATH, NULL, GUST_K_SECRET, "file holding the admin bearer token"},
    {"admin_token_env", GUST_T_STR, NULL, GUST_K_SECRET, "environment variable holding the admin bearer token"},
    {"ingest_token_file", GUST_T_PATH, NULL, GUST_K_SECRET, "file holding a bearer token that POST /ingest then needs"},
    {"ingest_token_env", GUST_T_STR, NULL, GUST_K_SECRET, "environment variable holding the ingest bearer token"},
    {"metrics_public", GUST_T_BOOL, "off", 0, "on: /metrics needs no token even when an admin token is set"},
    {"trusted_proxies", GUST_T_LIST, NULL, 0, "addresses (or address/bits) whose X-Forwarded-For/-Proto are believed"},
    {"client_timeout", GUST_T_DURATION, "10s", 0, "a request's headers and body must arrive within it; idle keep-alive limit"},
    {"max_connections", GUST_T_INT, "1024", 0, "open client connections; beyond it new ones are closed at accept"},
    {"max_header_size", GUST_T_SIZE, "64k", 0, "request line and headers (431 beyond)"},
    {"drain_timeout", GUST_T_DURATION, "1500ms", 0, "how long shutdown waits for requests in flight"},
    {NULL, 0, NULL, 0, NULL},
};

const struct gust_schema_key gust_nats_schema[] = {
    {"url", GUST_T_LIST, NULL, 0, "server URLs (several for a cluster); none: embedded nats-server"},
    {"server_bin", GUST_T_STR, "nats-server", 0, "embedded mode: the nats-server binary"},
    {"stream", GUST_T_STR, "GUST", 0, "the event stream"},
    {"subjects", GUST_T_FILTER, "ev.>", 0, "subjects of the event stream"},
    {"dlq_stream", GUST_T_STR, "GUST_DLQ", 0, "the dead-letter stream"},
    {"dlq_subjects", GUST_T_FILTER, "dlq.>", 0, "subjects of the dead-letter stream"},
    {"dlq_max_msgs", GUST_T_INT, "100000", 0, "dead letters kept (oldest dropped first)"},
    {"max_deliver", GUST_T_INT, "5", GUST_K_RELOADABLE, "attempts before a message is dead-lettered"},
    {"ack_wait", GUST_T_DURATION, "5s", 0,
     "a message neither acked nor nak'd is redelivered (to any process of the cluster) after this; a batch must finish within it"},
    {"replicas", GUST_T_INT, "1", 0, "copies of the streams and the lease bucket (3 on a three-node NATS cluster)"},
    {"lease_bucket", GUST_T_STR, "GUST_LEASES", 0, "KV bucket of the singleton sources' leases"},
    {"lease_ttl", GUST_T_DURATION, "6s", 0, "a lease not renewed for this long passes to another process (renewed every third)"},
    {"lease_poll", GUST_T_DURATION, "250ms", 0, "how often a process without a lease looks whether it is free"},
    {"retry_delay", GUST_T_DURATION, "200ms", GUST_K_RELOADABLE, "first redelivery delay of a failed message (doubles per attempt)"},
    {"retry_max_delay", GUST_T_DURATION, "5s", GUST_K_RELOADABLE, "longest redelivery delay"},
    {"publish_timeout", GUST_T_DURATION, "5s", 0, "how long a publish waits for its PubAck"},
    {"max_pending", GUST_T_INT, "65536", 0, "publishes awaiting their PubAck at once"},
    {"send_asap", GUST_T_BOOL, "off", 0,
     "units and sources write every publish and ack at once (lower latency at low rates, less throughput) instead of batching writes for up to 1 ms (ingest has its own connection, which writes once per event-loop turn)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct gust_schema_key gust_flow_schema[] = {
    {"script", GUST_T_PATH, NULL, GUST_K_REQUIRED, "the Lua flow"},
    {"source", GUST_T_FILTER, NULL, 0, "subject consumed (default: the script's `source`)"},
    {"timeout", GUST_T_DURATION, "1s", GUST_K_RELOADABLE, "longest run of on_event for one event"},
    {"batch", GUST_T_INT, "256", GUST_K_RELOADABLE, "messages fetched at once"},
    GUST_EDGE_KEYS,
    {NULL, 0, NULL, 0, NULL},
};

const struct gust_schema_key gust_detect_schema[] = {
    {"rules", GUST_T_PATH, NULL, GUST_K_REQUIRED, "the VPL program"},
    {"batch", GUST_T_INT, "256", GUST_K_RELOADABLE, "messages fetched at once"},
    GUST_EDGE_KEYS,
    {NULL, 0, NULL, 0, NULL},
};

const struct gust_schema_key gust_relay_schema[] = {
    {"source", GUST_T_FILTER, NULL, GUST_K_REQUIRED, "subject consumed"},
    {"to", GUST_T_SUBJECT, NULL, GUST_K_REQUIRED, "subject every message is forwarded to, unchanged"},
    {"batch", GUST_T_INT, "256", GUST_K_RELOADABLE, "messages fetched at once"},
    {NULL, 0, NULL, 0, NULL},
};

const struct gust_schema_key gust_sink_schema[] = {
    {"use", GUST_T_STR, NULL, GUST_K_REQUIRED, "the plugin type"},
    {"source", GUST_T_FILTER, NULL, GUST_K_REQUIRED, "subject consumed"},
    {"batch", GUST_T_INT, "256", GUST_K_RELOADABLE, "messages fetched at once"},
    {NULL, 0, NULL, 0, NULL},
};

const struct gust_schema_key gust_source_schema[] = {
    {"use", GUST_T_STR, NULL, GUST_K_REQUIRED, "the plugin type"},
    {"competing", GUST_T_BOOL, "off", 0,
     "off: one process of a cluster runs the source, under a lease; on: every process runs it (e.g. an MQTT shared subscription)"},
    {NULL, 0, NULL, 0, NULL},
};

static const char *const unit_kinds[] = {"flow", "detect", "relay", "sink", "source"};

const char *gust_unit_kind_name(enum gust_unit_kind kind)
{
    return unit_kinds[kind];
}

static const struct gust_schema_key *const unit_schemas[] = {gust_flow_schema, gust_detect_schema, gust_relay_schema,
                                                             NULL, NULL};

static int error_at(struct gust_err *err, const struct gust_conf_node *n, const char *fmt, const char *arg)
{
    char msg[400];
    snprintf(msg, sizeof(msg), fmt, arg);
    return gust_err_set(err, GUST_ECONFIG, "%s:%d: %s", n->file, n->line, msg);
}

/* A unit name becomes part of a durable consumer's name: keep it to safe characters. */
static int unit_name_valid(const char *s)
{
    if (*s == '\0' || strlen(s) > 64) {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-')) {
            return 0;
        }
    }
    return 1;
}

static const char *block_value(const struct gust_conf_node *block, const char *key)
{
    for (size_t i = 0; i < block->nchildren; i++) {
        const struct gust_conf_node *c = &block->children[i];
        if (strcmp(c->name, key) == 0 && c->nargs == 1 && !c->is_block) {
            return c->args[0];
        }
    }
    return NULL;
}

static int check_block(const struct gust_conf_node *n, const char *what, const struct gust_schema_key *schema,
                       struct gust_cfg **out, struct gust_err *err)
{
    if (!n->is_block || n->nargs != 0) {
        return error_at(err, n, "'%s' takes no arguments and a { } block", what);
    }
    return gust_cfg_check(n, what, schema, NULL, out, err);
}

/* Each `url` of the nats block must be one gust can connect to (nats_url.h). */
static int check_nats_urls(const struct gust_conf_node *nats, struct gust_err *err)
{
    for (size_t i = 0; i < nats->nchildren; i++) {
        const struct gust_conf_node *u = &nats->children[i];
        for (size_t a = 0; strcmp(u->name, "url") == 0 && a < u->nargs; a++) {
            const char *why = gust_nats_url_parse(u->args[a], NULL);
            if (why != NULL) {
                return gust_err_set(err, GUST_ECONFIG, "%s:%d: url %s: %s", u->file, u->line, u->args[a], why);
            }
        }
    }
    return 0;
}

/* Values of the http block the schema's types cannot bound. */
static int check_http(const struct gust_cfg *http, struct gust_err *err)
{
    int64_t depth = gust_cfg_int(http, "max_depth");
    if (depth < 1 || depth > 100000) {
        return gust_err_set(err, GUST_ECONFIG, "%s: max_depth: %lld is not within 1..100000",
                            gust_cfg_where(http, "max_depth"), (long long)depth);
    }
    return 0;
}

static int add_unit(struct gust_config *c, const struct gust_conf_node *n, enum gust_unit_kind kind,
                    struct gust_err *err)
{
    const char *kname = unit_kinds[kind];
    if (!n->is_block || n->nargs != 1) {
        return error_at(err, n, "expected '%s NAME { ... }'", kname);
    }
    if (!unit_name_valid(n->args[0])) {
        return error_at(err, n, "invalid unit name '%s': use letters, digits, '_' and '-'", n->args[0]);
    }
    for (size_t i = 0; i < c->nunits; i++) {
        if (strcmp(c->units[i].name, n->args[0]) == 0) {
            char msg[400];
            snprintf(msg, sizeof(msg), "unit '%s' is already defined at %s", n->args[0], c->units[i].where);
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: %s", n->file, n->line, msg);
        }
    }
    struct gust_unit_conf *u = &c->units[c->nunits];
    *u = (struct gust_unit_conf){.kind = kind, .name = n->args[0], .node = n};
    snprintf(u->where, sizeof(u->where), "%s:%d", n->file, n->line);
    if (unit_schemas[kind] != NULL) {
        char what[128];
        snprintf(what, sizeof(what), "%s '%s'", kname, u->name);
        int rc = gust_cfg_check(n, what, unit_schemas[kind], NULL, &u->cfg, err);
        if (rc != 0) {
            return rc;
        }
    } else {
        u->use = block_value(n, "use");
        if (u->use == NULL) {
            return error_at(err, n, "missing 'use PLUGIN_TYPE;' in %s", kname);
        }
    }
    c->nunits++;
    return 0;
}

int gust_config_load(const char *path, struct gust_config **out, struct gust_err *err)
{
    struct gust_config *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    int rc = gust_conf_parse_file(path, &c->tree, err);
    if (rc != 0) {
        goto fail;
    }
    const struct gust_conf_node *root = &c->tree->root;
    c->plugins = calloc(root->nchildren + 1, sizeof(*c->plugins));
    c->units = calloc(root->nchildren + 1, sizeof(*c->units));
    if (c->plugins == NULL || c->units == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto fail;
    }
    static const char *const blocks[] = {"http", "nats", "plugin", "flow", "detect", "relay", "sink", "source", NULL};
    rc = gust_cfg_check(root, "host.conf", gust_top_schema, blocks, &c->top, err);
    if (rc != 0) {
        goto fail;
    }
    for (size_t i = 0; i < root->nchildren && rc == 0; i++) {
        const struct gust_conf_node *n = &root->children[i];
        if (strcmp(n->name, "http") == 0 || strcmp(n->name, "nats") == 0) {
            struct gust_cfg **slot = n->name[0] == 'h' ? &c->http : &c->nats;
            if (*slot != NULL) {
                rc = error_at(err, n, "'%s' block given twice", n->name);
            } else {
                rc = check_block(n, n->name, n->name[0] == 'h' ? gust_http_schema : gust_nats_schema, slot, err);
                if (rc == 0 && n->name[0] == 'n') {
                    rc = check_nats_urls(n, err);
                } else if (rc == 0) {
                    rc = check_http(*slot, err);
                }
            }
        } else if (strcmp(n->name, "plugin") == 0) {
            if (n->is_block || n->nargs != 1 || !unit_name_valid(n->args[0])) {
                rc = error_at(err, n, "expected 'plugin NAME;'%s", "");
            } else {
                struct gust_plugin_ref *p = &c->plugins[c->nplugins++];
                p->name = n->args[0];
                snprintf(p->where, sizeof(p->where), "%s:%d", n->file, n->line);
            }
        } else {
            for (int k = GUST_UNIT_FLOW; k <= GUST_UNIT_SOURCE; k++) {
                if (strcmp(n->name, unit_kinds[k]) == 0) {
                    rc = add_unit(c, n, (enum gust_unit_kind)k, err);
                }
            }
        }
    }
    if (rc != 0 || (rc = gust_edges_check(c, err)) != 0) {
        goto fail;
    }
    /* Absent blocks take every default. */
    static const struct gust_conf_node empty = {.is_block = 1};
    struct gust_conf_node top_empty = empty;
    top_empty.file = c->tree->path;
    if (c->http == NULL && (rc = gust_cfg_check(&top_empty, "http", gust_http_schema, NULL, &c->http, err)) != 0) {
        goto fail;
    }
    if (c->nats == NULL && (rc = gust_cfg_check(&top_empty, "nats", gust_nats_schema, NULL, &c->nats, err)) != 0) {
        goto fail;
    }
    *out = c;
    return 0;
fail:
    gust_config_destroy(c);
    return rc;
}

int gust_config_check_plugin_unit(struct gust_unit_conf *unit, const struct gust_schema_key *plugin_schema,
                                  struct gust_err *err)
{
    const struct gust_schema_key *own = unit->kind == GUST_UNIT_SINK ? gust_sink_schema : gust_source_schema;
    size_t n_own = 0, n_plugin = 0;
    while (own[n_own].key != NULL) {
        n_own++;
    }
    while (plugin_schema != NULL && plugin_schema[n_plugin].key != NULL) {
        n_plugin++;
    }
    struct gust_schema_key *merged = calloc(n_own + n_plugin + 1, sizeof(*merged));
    if (merged == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    memcpy(merged, own, n_own * sizeof(*merged));
    if (n_plugin > 0) {
        memcpy(merged + n_own, plugin_schema, n_plugin * sizeof(*merged));
    }
    char what[128];
    snprintf(what, sizeof(what), "%s '%s'", unit_kinds[unit->kind], unit->name);
    gust_cfg_destroy(unit->cfg);
    unit->cfg = NULL;
    int rc = gust_cfg_check(unit->node, what, merged, NULL, &unit->cfg, err);
    free(merged);
    return rc;
}

void gust_config_destroy(struct gust_config *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->nunits; i++) {
        gust_cfg_destroy(c->units[i].cfg);
    }
    free(c->units);
    free(c->plugins);
    gust_cfg_destroy(c->top);
    gust_cfg_destroy(c->http);
    gust_cfg_destroy(c->nats);
    gust_conf_destroy(c->tree);
    free(c);
}
