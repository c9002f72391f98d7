#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/nats_url.h"
#include "../conf/conf_schema.h"
#include "../trace/trace.h"
#include "../conf/value.h"
#include "config_secrets.h"
#include "config_webhooks.h"
#include "edges.h"
#include "kinds.h"

#define R GUST_K_RELOADABLE
#define TOP(f, T, def, flags, help) GUST_KEY(struct gust_top_keys, f, T, def, flags, help)
#define TOP_ENUM(f, def, flags, words, help) GUST_KEY_ENUM(struct gust_top_keys, f, def, flags, words, help)
#define HTTP(f, T, def, flags, help) GUST_KEY(struct gust_http_keys, f, T, def, flags, help)
#define HTTP_RANGE(f, T, def, flags, lo, hi, help) GUST_KEY_RANGE(struct gust_http_keys, f, T, def, flags, lo, hi, help)
#define NATS(f, T, def, flags, help) GUST_KEY(struct gust_nats_keys, f, T, def, flags, help)
#define OTLP(f, T, def, flags, help) GUST_KEY(struct gust_otlp_keys, f, T, def, flags, help)
#define NATS_RANGE(f, T, def, flags, lo, hi, help) GUST_KEY_RANGE(struct gust_nats_keys, f, T, def, flags, lo, hi, help)
/* Keys the layer that uses them reads and checks from the block itself, naming file:line
 * in its errors: the listener's (http/listen_conf.c) and the connections' (bus/nats_opts.c). */
#define OWN(f, T, def, flags, help) {#f, GUST_T_##T, def, flags, help, 0, 0, 0, NULL}
#define OWN_RANGE(f, T, def, flags, lo, hi, help) {#f, GUST_T_##T, def, (flags) | GUST_K_RANGE, help, 0, lo, hi, NULL}
#define TABLE(f, T, def, flags, help) GUST_KEY(struct gust_table_keys, f, T, def, (flags) | R, help)
/* Webhooks are part of the front's policy, rebuilt at every reload: all reloadable. */
#define HOOK(f, T, def, flags, help) GUST_KEY(struct gust_webhook_keys, f, T, def, (flags) | R, help)
#define HOOK_RANGE(f, T, def, flags, lo, hi, help) \
    GUST_KEY_RANGE(struct gust_webhook_keys, f, T, def, (flags) | R, lo, hi, help)
#define HOOK_ENUM(f, def, words, help) GUST_KEY_ENUM(struct gust_webhook_keys, f, def, R, words, help)

const struct gust_schema_key gust_top_schema[] = {
    TOP(state_dir, PATH, "var", 0, "embedded NATS store and runtime files"),
    TOP(plugin_dir, PATH, NULL, 0,
        "where `plugin NAME;` finds NAME.so (default: plugins/ beside a gust in a build tree, else the installed "
        "plugin directory)"),
    TOP_ENUM(log_level, "info", R, "error|warn|info|debug", "least severe level logged"),
    TOP_ENUM(log_format, "text", R, "text|json",
        "text: a line with a level (and a timestamp unless journald reads it); json: one JSON object a line"),
    TOP(node_name, NAME, NULL, 0, "this process's name in the leases and /units (default: hostname:pid)"),
    TOP(cluster, BOOL, "off", 0,
        "on: one of several processes on one NATS; POST /reload refuses units that no peer runs (409)"),
    TOP(lua_path, PATH, "scripts/lib", R,
        "where a flow's require \"name\" finds name.lua (a flow may set its own)"),
    GUST_KEY_END,
};

const struct gust_schema_key gust_http_schema[] = {
    OWN(listen, LIST, "127.0.0.1:8787", 0,
         "address of the HTTP listener; `listen ADDR ssl;` for HTTPS, with ssl_certificate and ssl_certificate_key"),
    OWN(ssl_certificate, PATH, NULL, 0, "PEM certificate chain of an HTTPS listener"),
    OWN(ssl_certificate_key, PATH, NULL, GUST_K_SECRET, "PEM private key of ssl_certificate"),
    HTTP(base_path, STR, "/", 0, "path prefix when mounted behind a proxy, e.g. /gust"),
    HTTP(max_body, SIZE, "1m", R, "largest accepted request body"),
    HTTP_RANGE(max_depth, INT, "200", R, 1, 100000,
         "ingest: arrays and objects nested at most in a body (400 beyond; 200 is what flows decode)"),
    HTTP(admin_token_file, PATH, NULL, GUST_K_SECRET | R, "file holding the admin bearer token (read again at reload)"),
    HTTP(admin_token_env, STR, NULL, GUST_K_SECRET | R, "environment variable holding the admin bearer token"),
    HTTP(admin_read_token_file, PATH, NULL, GUST_K_SECRET | R,
         "file holding a read-only admin token: the admin reads and MCP's read-only tools, never a write (read "
         "again at reload; needs an admin token too)"),
    HTTP(admin_read_token_env, STR, NULL, GUST_K_SECRET | R,
         "environment variable holding the read-only admin token"),
    HTTP(ingest_token_file, PATH, NULL, GUST_K_SECRET | R,
         "file holding a bearer token that POST /ingest then needs (read again at reload)"),
    HTTP(ingest_token_env, STR, NULL, GUST_K_SECRET | R, "environment variable holding the ingest bearer token"),
    HTTP(metrics_public, BOOL, "off", R, "on: /metrics needs no token even when an admin token is set"),
    HTTP(trusted_proxies, LIST, NULL, R,
         "addresses (or address/bits) whose X-Forwarded-For, -Proto and -Host are believed"),
    HTTP(server_names, LIST, NULL, R,
         "names (or addresses) the admin routes answer to besides the listen address (and localhost on "
         "loopback): the Host a browser or proxy sends; anything else is refused (DNS rebinding)"),
    HTTP(client_timeout, DURATION, "10s", R,
         "a request's headers and body must arrive within it; idle keep-alive limit"),
    HTTP(max_connections, INT, "1024", R, "open client connections; beyond it new ones are closed at accept"),
    HTTP(max_header_size, SIZE, "64k", R, "request line and headers (431 beyond)"),
    HTTP(drain_timeout, DURATION, "1500ms", R, "how long shutdown waits for requests in flight"),
    HTTP_RANGE(call_timeout, DURATION, "2s", R, 10, 300000,
         "how long POST /call (and a webhook with `respond flow`) waits for the flow's reply (504 after it)"),
    GUST_KEY_END,
};

const struct gust_schema_key gust_nats_schema[] = {
    NATS(url, LIST, NULL, 0, "server URLs, nats:// or tls:// (several for a cluster); none: embedded nats-server"),
    OWN(tls, BOOL, "off", 0, "on: TLS to every server whatever the URL scheme (tls://, tls_ca or tls_cert turn it on too)"),
    OWN(tls_ca, PATH, NULL, 0, "PEM file of the CA(s) that sign the servers' certificates (default: the system's)"),
    OWN(tls_cert, PATH, NULL, 0, "PEM client certificate, for servers that verify clients (with tls_key)"),
    OWN(tls_key, PATH, NULL, GUST_K_SECRET, "PEM private key of tls_cert"),
    OWN(tls_verify, BOOL, "on", 0, "off: accept any server certificate (for tests only)"),
    OWN(tls_server_name, STR, NULL, 0,
         "the name the servers' certificates must carry (default: the URLs' host when they share a DNS name; else the "
         "chain alone is checked)"),
    OWN(creds, PATH, NULL, GUST_K_SECRET, "user credentials file (user JWT and NKey seed, as nsc writes it)"),
    OWN(nkey_seed, PATH, NULL, GUST_K_SECRET, "file holding a user NKey seed (SU...)"),
    OWN(token_file, PATH, NULL, GUST_K_SECRET, "file holding the servers' authorization token"),
    OWN(user, STR, NULL, 0, "user name, with password_file or password_env"),
    OWN(password_file, PATH, NULL, GUST_K_SECRET, "file holding the user's password"),
    OWN(password_env, STR, NULL, GUST_K_SECRET, "environment variable holding the user's password"),
    OWN_RANGE(ping_interval, DURATION, "2s", 0, 100, INT64_MAX, "how often every connection PINGs its server"),
    OWN_RANGE(max_pings_out, INT, "2", 0, 1, 100,
         "unanswered PINGs after which a connection is dropped and remade: a silent server is noticed within "
         "ping_interval x (max_pings_out + 1)"),
    OWN_RANGE(reconnect_wait, DURATION, "250ms", 0, 10, INT64_MAX,
              "first wait before reconnecting (at most reconnect_max_wait); doubles while attempts fail or connections "
              "drop within 10 s"),
    OWN(reconnect_max_wait, DURATION, "5s", 0, "longest wait between reconnection attempts"),
    NATS(server_bin, STR, "nats-server", 0, "embedded mode: the nats-server binary"),
    NATS(stream, NAME, "GUST", 0, "the event stream"),
    NATS(subjects, FILTER, "ev.>", 0,
         "subjects of the event stream, PREFIX.>: ingest and the detect defaults build subjects under PREFIX"),
    NATS(dlq_stream, NAME, "GUST_DLQ", 0, "the dead-letter stream"),
    NATS(dlq_subjects, FILTER, "dlq.>", 0, "subjects of the dead-letter stream"),
    NATS(dlq_max_msgs, INT, "100000", 0, "dead letters kept (oldest dropped first)"),
    NATS(dlq_max_bytes, SIZE, "64m", 0, "bytes of dead letters kept (oldest dropped first)"),
    NATS_RANGE(max_bytes, SIZE, NULL, GUST_K_ZERO_OFF, 1 << 20, INT64_MAX,
         "bound of the event stream: past it new events are refused (ingest 503 \"store full\"), never unconsumed "
         "ones dropped; consumed ones are removed early, oldest first, as it nears it (default: 1g with the embedded "
         "server, none on an external one)"),
    NATS(max_age, DURATION, NULL, 0, "events older than this are removed, consumed or not (default: none)"),
    NATS(keep, DURATION, NULL, 0,
         "how long consumed events stay in the event stream for replay (default 24h; with none of max_bytes, "
         "max_age, keep set on an external server nothing is removed)"),
    NATS(state_stream, NAME, "GUST_STATE", 0, "the stream of the detect units' checkpoints"),
    NATS(state_subjects, FILTER, "gust.state.>", 0, "subjects of the checkpoint stream"),
    NATS(duplicate_window, DURATION, "2m", 0,
         "of the event stream: a message whose Nats-Msg-Id was stored within it is stored once (every emit carries "
         "one; a detect unit's alerts are stored exactly once when it restarts within it)"),
    NATS(max_deliver, INT, "5", R, "attempts before a message is dead-lettered"),
    NATS(ack_wait, DURATION, "5s", 0,
         "a message neither acked nor nak'd is redelivered (to any process of the cluster) after this; a batch must "
         "finish within it"),
    NATS(replicas, INT, "1", 0, "copies of the streams and the lease bucket (3 on a three-node NATS cluster)"),
    NATS(lease_bucket, NAME, "GUST_LEASES", 0, "KV bucket of the singleton sources' leases"),
    NATS(state_bucket, NAME, "GUST_FLOW_STATE", 0,
         "KV bucket of the flows' durable state (state.*): keys <unit>.<key>, made at a flow's first use"),
    NATS(lease_ttl, DURATION, "6s", 0,
         "a lease not renewed for this long passes to another process (renewed every third)"),
    NATS(lease_poll, DURATION, "250ms", 0, "how often a process without a lease looks whether it is free"),
    NATS(retry_delay, DURATION, "200ms", R, "first redelivery delay of a failed message (doubles per attempt)"),
    NATS(retry_max_delay, DURATION, "5s", R, "longest redelivery delay"),
    NATS(publish_timeout, DURATION, "5s", 0, "how long a publish waits for its PubAck"),
    NATS(max_pending, INT, "65536", 0, "publishes awaiting their PubAck at once"),
    NATS(send_asap, BOOL, "off", 0,
         "units and sources write every publish and ack at once (lower latency at low rates, less throughput) "
         "instead of batching writes for up to 1 ms (ingest has its own connection, which writes once per "
         "event-loop turn)"),
    GUST_KEY_END,
};

const struct gust_schema_key gust_otlp_schema[] = {
    GUST_KEY_URL(struct gust_otlp_keys, endpoint, NULL, 0, "http",
         "OTLP/HTTP JSON traces URL of a collector, http://HOST:PORT/v1/traces (needed in an otlp block; no https); spans of "
         "ingest, flows, detect and sinks go there, batched at least every second, dropped (and counted) when it "
         "is down"),
    OTLP(sample, RATIO, "1.0", 0,
         "share (0 to 1, e.g. 0.01) of requests without a traceparent that start a new trace at ingest; a "
         "traceparent that came in keeps its own sampled flag"),
    OTLP(service_name, STR, "gust", 0, "service.name of the exported spans"),
    GUST_KEY_END,
};

const struct gust_schema_key gust_table_schema[] = {
    TABLE(file, PATH, NULL, GUST_K_REQUIRED,
          "the table: .csv (a header row) or .json (an object, or an array of objects)"),
    TABLE(key, STR, NULL, 0, "the column (CSV) or member (JSON array) whose value is a row's key"),
    GUST_KEY_END,
};

const struct gust_schema_key gust_webhook_schema[] = {
    HOOK(path, STR, NULL, GUST_K_REQUIRED,
         "the URL path that takes the provider's POSTs (under base_path), e.g. /hooks/github; no other route's"),
    HOOK(subject, SUBJECT, NULL, GUST_K_REQUIRED, "where each delivery is published (under the stream's subjects)"),
    HOOK_ENUM(verify, "none", "none|github|stripe|shopify|slack|standard|hmac",
              "the signature every delivery must carry (401 otherwise, nothing stored); none: unsigned, and the "
              "ingest token applies"),
    HOOK(secret_file, LIST, NULL, GUST_K_SECRET,
         "file(s) holding the signing secret (its trailing newline is not part of it); several: each is tried "
         "(rotation)"),
    HOOK(secret_env, LIST, NULL, GUST_K_SECRET, "environment variable(s) holding the signing secret"),
    HOOK_RANGE(tolerance, DURATION, "300s", 0, 1000, 7 * 24 * 3600 * 1000LL,
               "stripe, slack, standard: a signed timestamp further than this from now is refused (a replay)"),
    HOOK(signature_header, STR, NULL, 0, "verify hmac: the header carrying the signature"),
    HOOK_ENUM(algorithm, "sha256", "sha256|sha1", "verify hmac: the HMAC's hash"),
    HOOK_ENUM(encoding, "hex", "hex|base64", "verify hmac: how the signature is written"),
    HOOK(prefix, STR, NULL, 0, "verify hmac: text before the encoded signature (e.g. sha1=)"),
    HOOK(idempotency_header, STR, NULL, 0,
         "a header whose value becomes the Nats-Msg-Id, so a retried delivery is stored once (default: the "
         "scheme's delivery id: X-GitHub-Delivery, the Stripe event's id, webhook-id, X-Shopify-Webhook-Id; "
         "else Idempotency-Key)"),
    HOOK(headers, LIST, NULL, 0,
         "request headers kept with the event as NATS headers (flows: meta.headers), matched without case"),
    HOOK(raw, BOOL, "off", 0,
         "on: a body neither JSON nor a form is stored as {\"body_base64\": ...} rather than refused (415)"),
    HOOK(max_body, SIZE, NULL, 0, "largest delivery (413 beyond; default and at most: the http block's max_body)"),
    HOOK_ENUM(respond, "stored", "stored|flow",
              "stored: 202 once the delivery is stored; flow: the answer is the reply of the flow that handles it "
              "(reply(), as POST /call; 504 after the http block's call_timeout)"),
    GUST_KEY_END,
};

const struct gust_kind *gust_kind_named(const char *name)
{
    for (size_t i = 0; gust_kinds[i] != NULL; i++) {
        if (strcmp(gust_kinds[i]->name, name) == 0) {
            return gust_kinds[i];
        }
    }
    return NULL;
}

static int error_at(struct gust_err *err, const struct gust_conf_node *n, const char *fmt, const char *arg)
{
    char msg[400];
    snprintf(msg, sizeof(msg), fmt, arg);
    return gust_err_set(err, GUST_ECONFIG, "%s:%d: %s", n->file, n->line, msg);
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

/* The event stream's bounds. The embedded server gets a bound that fits a laptop; on an
 * external server nothing is removed unless one of the three is set (keep < 0: gust
 * removes nothing itself). */
static void retention_defaults(struct gust_config *c)
{
    struct gust_nats_keys *nk = &c->nats;
    int embedded = nk->url.n == 0;
    int has_bytes = gust_cfg_count(c->nats_cfg, "max_bytes") > 0;
    int has_age = gust_cfg_count(c->nats_cfg, "max_age") > 0;
    int has_keep = gust_cfg_count(c->nats_cfg, "keep") > 0;
    if (!has_bytes && embedded) {
        nk->max_bytes = (int64_t)1 << 30;
    }
    if (!has_keep) {
        nk->keep = embedded || has_bytes || has_age ? 24 * 3600 * 1000LL : -1;
    }
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

/* Subjects are built under the stream's prefix (ingest, the detect defaults), so
 * `subjects` must be PREFIX.> (or > alone: no prefix). */
static int check_subjects(struct gust_config *c, struct gust_err *err)
{
    const char *s = c->nats.subjects;
    size_t n = strlen(s);
    if (strcmp(s, ">") == 0) {
        c->subject_prefix[0] = '\0';
        return 0;
    }
    if (n < 3 || strcmp(s + n - 2, ".>") != 0 || memchr(s, '*', n) != NULL || n - 1 >= sizeof(c->subject_prefix)) {
        return gust_err_set(err, GUST_ECONFIG, "%s: subjects must be PREFIX.> (e.g. ev.>), not '%s'",
                            gust_cfg_where(c->nats_cfg, "subjects"), s);
    }
    memcpy(c->subject_prefix, s, n - 1);
    c->subject_prefix[n - 1] = '\0';
    return 0;
}

/* The otlp endpoint as the exporter reads it (a host that fits), beyond its type. */
static int check_otlp(struct gust_config *c, struct gust_err *err)
{
    struct gust_err why = {{0}};
    if (c->otlp.endpoint != NULL && gust_trace_endpoint_check(c->otlp.endpoint, &why) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: otlp.endpoint: %s", gust_cfg_where(c->otlp_cfg, "endpoint"),
                            why.msg);
    }
    return 0;
}

/* An otlp block names its collector: without one there is nothing to send spans to. */
static int check_otlp_node(const struct gust_conf_node *n, struct gust_err *err)
{
    return block_value(n, "endpoint") != NULL
               ? 0
               : error_at(err, n, "otlp: endpoint is required (http://HOST:PORT/v1/traces)%s", "");
}

#define BLOCK(name, schema, field, node_check, values_check)                                                  \
    {                                                                                                         \
        name, schema, offsetof(struct gust_config, field##_cfg), offsetof(struct gust_config, field),         \
            node_check, values_check                                                                          \
    }
const struct gust_config_block gust_config_blocks[GUST_CONFIG_BLOCKS] = {
    BLOCK("", gust_top_schema, top, NULL, NULL),
    BLOCK("http", gust_http_schema, http, NULL, NULL),
    BLOCK("nats", gust_nats_schema, nats, check_nats_urls, check_subjects),
    BLOCK("secrets", gust_secrets_schema, secrets, NULL, gust_config_secrets_check),
    BLOCK("otlp", gust_otlp_schema, otlp, check_otlp_node, check_otlp),
};
#undef BLOCK

static struct gust_cfg **block_slot(struct gust_config *c, const struct gust_config_block *b)
{
    return (struct gust_cfg **)((char *)c + b->cfg_offset);
}

const struct gust_cfg *gust_config_block_cfg(const struct gust_config *c, size_t i)
{
    return *block_slot((struct gust_config *)c, &gust_config_blocks[i]);
}

/* The process-wide block named n->name, or NULL. */
static const struct gust_config_block *block_named(const char *name)
{
    for (size_t b = 1; b < GUST_CONFIG_BLOCKS; b++) {
        if (strcmp(name, gust_config_blocks[b].name) == 0) {
            return &gust_config_blocks[b];
        }
    }
    return NULL;
}

/* The schema has checked both words; this turns them into what the log takes. */
static void read_log(struct gust_config *c)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        c->log_level = strcmp(c->top.log_level, levels[i]) == 0 ? i : c->log_level;
    }
    c->log_json = strcmp(c->top.log_format, "json") == 0;
}

static int add_unit(struct gust_config *c, const struct gust_conf_node *n, const struct gust_kind *kind,
                    struct gust_err *err)
{
    const char *kname = kind->name;
    if (!n->is_block || n->nargs != 1) {
        return error_at(err, n, "expected '%s NAME { ... }'", kname);
    }
    if (!gust_name_valid(n->args[0])) {
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
    if ((kind->flags & GUST_KIND_PLUGIN) == 0) {
        char what[128];
        snprintf(what, sizeof(what), "%s '%s'", kname, u->name);
        void *keys = &u->k;
        if (kind->keys_size > 0 && (keys = u->keys = calloc(1, kind->keys_size)) == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        int rc = gust_cfg_check(n, what, kind->schema, NULL, &u->cfg, err);
        rc = rc ? rc : gust_cfg_bind(u->cfg, kind->schema, sizeof(struct gust_schema_key), keys, err);
        if (rc != 0) {
            gust_cfg_destroy(u->cfg);
            free(u->keys);
            return rc;
        }
    } else {
        /* The rest once its plugin is loaded: gust_config_check_plugin_unit. */
        u->use = block_value(n, "use");
        if (u->use == NULL) {
            return error_at(err, n, "missing 'use PLUGIN_TYPE;' in %s", kname);
        }
    }
    c->nunits++;
    return 0;
}

static int add_table(struct gust_config *c, const struct gust_conf_node *n, struct gust_err *err)
{
    if (!n->is_block || n->nargs != 1) {
        return error_at(err, n, "expected 'table NAME { file PATH; key FIELD; }'%s", "");
    }
    if (!gust_name_valid(n->args[0])) {
        return error_at(err, n, "invalid table name '%s': use letters, digits, '_' and '-'", n->args[0]);
    }
    for (size_t i = 0; i < c->ntables; i++) {
        if (strcmp(c->tables[i].name, n->args[0]) == 0) {
            char msg[400];
            snprintf(msg, sizeof(msg), "table '%s' is already defined at %s", n->args[0], c->tables[i].where);
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: %s", n->file, n->line, msg);
        }
    }
    struct gust_table_conf *t = &c->tables[c->ntables];
    *t = (struct gust_table_conf){.name = n->args[0]};
    snprintf(t->where, sizeof(t->where), "%s:%d", n->file, n->line);
    char what[128];
    snprintf(what, sizeof(what), "table '%s'", t->name);
    int rc = gust_cfg_check(n, what, gust_table_schema, NULL, &t->cfg, err);
    rc = rc ? rc : gust_cfg_bind(t->cfg, gust_table_schema, sizeof(struct gust_schema_key), &t->k, err);
    if (rc == 0) {
        c->ntables++;
    } else {
        gust_cfg_destroy(t->cfg);
    }
    return rc;
}

const char *gust_config_lua_path(const struct gust_config *c, const struct gust_unit_conf *flow)
{
    return flow != NULL && flow->k.lua_path != NULL ? flow->k.lua_path : c->top.lua_path;
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
    c->tables = calloc(root->nchildren + 1, sizeof(*c->tables));
    c->webhooks = calloc(root->nchildren + 1, sizeof(*c->webhooks));
    if (c->plugins == NULL || c->units == NULL || c->tables == NULL || c->webhooks == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto fail;
    }
    /* The blocks of the top level, which the loop below reads. */
    const char *blocks[GUST_CONFIG_BLOCKS + 3 + GUST_MAX_KINDS + 1];
    size_t nblocks = 0;
    for (size_t b = 1; b < GUST_CONFIG_BLOCKS; b++) {
        blocks[nblocks++] = gust_config_blocks[b].name;
    }
    blocks[nblocks++] = "plugin";
    blocks[nblocks++] = "table";
    blocks[nblocks++] = "webhook";
    for (size_t k = 0; k < GUST_MAX_KINDS && gust_kinds[k] != NULL; k++) {
        blocks[nblocks++] = gust_kinds[k]->name;
    }
    blocks[nblocks] = NULL;
    rc = gust_cfg_check(root, "host.conf", gust_top_schema, blocks, &c->top_cfg, err);
    if (rc != 0) {
        goto fail;
    }
    for (size_t i = 0; i < root->nchildren && rc == 0; i++) {
        const struct gust_conf_node *n = &root->children[i];
        const struct gust_config_block *blk = block_named(n->name);
        if (blk != NULL) {
            struct gust_cfg **slot = block_slot(c, blk);
            if (*slot != NULL) {
                rc = error_at(err, n, "'%s' block given twice", n->name);
            } else if ((rc = check_block(n, n->name, blk->schema, slot, err)) == 0 && blk->check_node != NULL) {
                rc = blk->check_node(n, err);
            }
        } else if (strcmp(n->name, "plugin") == 0) {
            if (n->is_block || n->nargs != 1 || !gust_name_valid(n->args[0])) {
                rc = error_at(err, n, "expected 'plugin NAME;'%s", "");
            } else {
                struct gust_plugin_ref *p = &c->plugins[c->nplugins++];
                p->name = n->args[0];
                snprintf(p->where, sizeof(p->where), "%s:%d", n->file, n->line);
            }
        } else if (strcmp(n->name, "table") == 0) {
            rc = add_table(c, n, err);
        } else if (strcmp(n->name, "webhook") == 0) {
            rc = gust_config_add_webhook(c, n, err);
        } else if (gust_kind_named(n->name) != NULL) {
            rc = add_unit(c, n, gust_kind_named(n->name), err);
        }
    }
    if (rc != 0 || (rc = gust_edges_check(c, err)) != 0) {
        goto fail;
    }
    /* Absent blocks take every default. */
    static const struct gust_conf_node empty = {.is_block = 1};
    struct gust_conf_node top_empty = empty;
    top_empty.file = c->tree->path;
    const size_t ksize = sizeof(struct gust_schema_key);
    for (size_t b = 0; b < GUST_CONFIG_BLOCKS; b++) {
        const struct gust_config_block *blk = &gust_config_blocks[b];
        struct gust_cfg **slot = block_slot(c, blk);
        if ((*slot == NULL && (rc = gust_cfg_check(&top_empty, blk->name, blk->schema, NULL, slot, err)) != 0) ||
            (rc = gust_cfg_bind(*slot, blk->schema, ksize, (char *)c + blk->keys_offset, err)) != 0 ||
            (blk->check != NULL && (rc = blk->check(c, err)) != 0)) {
            goto fail;
        }
    }
    if ((rc = gust_config_webhooks_check(c, err)) != 0) {
        goto fail;
    }
    read_log(c);
    retention_defaults(c);
    *out = c;
    return 0;
fail:
    gust_config_destroy(c);
    return rc;
}

int gust_config_check_plugin_unit(struct gust_unit_conf *unit, const struct gust_schema_key *plugin_schema,
                                  struct gust_err *err)
{
    const struct gust_schema_key *own = unit->kind->schema;
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
    snprintf(what, sizeof(what), "%s '%s'", unit->kind->name, unit->name);
    gust_cfg_destroy(unit->cfg);
    unit->cfg = NULL;
    int rc = gust_cfg_check(unit->node, what, merged, NULL, &unit->cfg, err);
    free(merged);
    return rc ? rc : gust_cfg_bind(unit->cfg, own, sizeof(struct gust_schema_key), &unit->k, err);
}

void gust_config_destroy(struct gust_config *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->nunits; i++) {
        gust_cfg_destroy(c->units[i].cfg);
        free(c->units[i].keys);
    }
    free(c->units);
    for (size_t i = 0; i < c->ntables; i++) {
        gust_cfg_destroy(c->tables[i].cfg);
    }
    free(c->tables);
    for (size_t i = 0; i < c->nwebhooks; i++) {
        gust_cfg_destroy(c->webhooks[i].cfg);
    }
    free(c->webhooks);
    free(c->plugins);
    for (size_t b = 0; b < GUST_CONFIG_BLOCKS; b++) {
        gust_cfg_destroy(*block_slot(c, &gust_config_blocks[b]));
    }
    gust_conf_destroy(c->tree);
    free(c);
}
