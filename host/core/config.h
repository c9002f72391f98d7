/* host.conf as the host sees it: the checked top-level, http and nats blocks, the
 * plugins to load and the units, each with its own checked configuration. */
#ifndef GUST_CORE_CONFIG_H
#define GUST_CORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "../conf/conf.h"
#include "../secret/secret.h"
#include "gust/err.h"
#include "gust/schema.h"

struct gust_kind; /* kind.h */

/* The values of each block, bound by its schema (config.c): strings point into the
 * block's struct gust_cfg and live as long as the struct gust_config. */
struct gust_top_keys {
    const char *state_dir;
    const char *plugin_dir;
    const char *log_level;
    const char *log_format;
    const char *node_name;
    int cluster;
    const char *lua_path;
};

struct gust_http_keys {
    const char *base_path;
    int64_t max_body;
    int64_t max_depth;
    const char *admin_token_file;
    const char *admin_token_env;
    const char *admin_read_token_file;
    const char *admin_read_token_env;
    const char *ingest_token_file;
    const char *ingest_token_env;
    int metrics_public;
    struct gust_list trusted_proxies;
    struct gust_list server_names;
    int64_t client_timeout;
    int64_t max_connections;
    int64_t max_header_size;
    int64_t drain_timeout;
    int64_t call_timeout;
};

/* The otlp block: where spans go (trace/trace.h). */
struct gust_otlp_keys {
    const char *endpoint; /* NULL: no otlp block, no export */
    double sample;
    const char *service_name;
};

struct gust_nats_keys {
    struct gust_list url;
    const char *server_bin;
    const char *stream;
    const char *subjects;
    const char *dlq_stream;
    const char *dlq_subjects;
    int64_t dlq_max_msgs;
    int64_t dlq_max_bytes;
    int64_t max_bytes;
    int64_t max_age;
    int64_t keep;
    const char *state_stream;
    const char *state_subjects;
    int64_t duplicate_window;
    int64_t max_deliver;
    int64_t ack_wait;
    int64_t replicas;
    const char *lease_bucket;
    const char *state_bucket;
    int64_t lease_ttl;
    int64_t lease_poll;
    int64_t retry_delay;
    int64_t retry_max_delay;
    int64_t publish_timeout;
    int64_t max_pending;
    int send_asap;
};

/* Every unit kind's keys in one struct; a kind's schema (kind.h) binds the ones it has,
 * the others stay NULL / 0. */
struct gust_unit_keys {
    const char *script;  /* flow */
    const char *rules;   /* detect */
    const char *source;  /* flow, relay, sink: the subject filter consumed */
    const char *to;      /* relay */
    const char *use;     /* sink, source: the plugin type */
    const char *edge;    /* flow, detect: the source unit feeding it in memory */
    int64_t timeout;     /* flow */
    int64_t batch;       /* flow, detect, relay, sink */
    int64_t edge_queue;  /* flow, detect */
    int64_t slices;      /* detect */
    int64_t checkpoint_interval;
    int64_t checkpoint_events;
    int64_t idle_tick;
    const char *tests;   /* detect: a folder of rule tests for gust -t */
    int competing;       /* source */
    const char *lua_path; /* flow: its own, else NULL (the top level's) */
    int64_t log_rate;     /* flow */
    int64_t state_cache;  /* flow */
    int64_t memory_max;   /* flow: bytes of its Lua heap, 0: no bound */
};

struct gust_unit_conf {
    const struct gust_kind *kind;      /* kind.h */
    const char *name;                  /* borrowed from the tree */
    const struct gust_conf_node *node; /* borrowed from the tree */
    char where[300];                   /* "file:line" of the block */
    const char *use;                   /* sinks and sources: the plugin type */
    struct gust_cfg *cfg;              /* owned; for sinks and sources set by
                                          gust_config_check_plugin_unit */
    struct gust_unit_keys k;           /* bound from cfg */
    void *keys; /* owned: a kind's own keys, bound from cfg (kind.h, keys_size), or NULL */
};

struct gust_plugin_ref {
    const char *name; /* borrowed from the tree */
    char where[300];
};
/* `table NAME { file PATH; key FIELD; }`: a lookup table for the flows. */
struct gust_table_keys {
    const char *file;
    const char *key;
};

struct gust_table_conf {
    const char *name; /* borrowed from the tree */
    char where[300];
    struct gust_cfg *cfg;     /* owned */
    struct gust_table_keys k; /* bound from cfg */
};

/* `webhook NAME { path P; subject S; verify SCHEME; ... }`: a POST route of the front
 * that publishes to subject, its signature checked (host/http/webhook.c). */
struct gust_webhook_keys {
    const char *path;
    const char *subject;
    const char *verify; /* none|github|stripe|shopify|slack|standard|hmac */
    struct gust_list secret_file;
    struct gust_list secret_env;
    int64_t tolerance; /* ms */
    const char *signature_header;
    const char *algorithm; /* sha256|sha1 */
    const char *encoding;  /* hex|base64 */
    const char *prefix;
    const char *idempotency_header;
    struct gust_list headers;
    int raw;
    int64_t max_body; /* 0: the http block's */
    const char *respond; /* stored|flow */
};

struct gust_webhook_conf {
    const char *name; /* borrowed from the tree */
    char where[300];
    char dir[4096];           /* of the file the block is in: relative secret_file paths start there */
    struct gust_cfg *cfg;     /* owned */
    struct gust_webhook_keys k; /* bound from cfg */
};

struct gust_config {
    struct gust_conf *tree;
    struct gust_secrets_keys secrets;
    struct gust_cfg *secrets_cfg; /* owned */
    struct gust_top_keys top;
    struct gust_http_keys http;
    struct gust_nats_keys nats;
    struct gust_otlp_keys otlp;
    struct gust_cfg *top_cfg; /* owned: the checked blocks the above point into */
    struct gust_cfg *http_cfg;
    struct gust_cfg *nats_cfg;
    struct gust_cfg *otlp_cfg;
    int log_level;            /* enum gust_log_level of log_level */
    int log_json;             /* log_format json */
    char subject_prefix[128]; /* what every event subject starts with: "ev." of `subjects ev.>;` */
    struct gust_plugin_ref *plugins;
    size_t nplugins;
    struct gust_unit_conf *units;
    size_t nunits;
    struct gust_table_conf *tables;
    size_t ntables;
    struct gust_webhook_conf *webhooks;
    size_t nwebhooks;
};

extern const struct gust_schema_key gust_top_schema[];
extern const struct gust_schema_key gust_http_schema[];
extern const struct gust_schema_key gust_nats_schema[];
extern const struct gust_schema_key gust_secrets_schema[]; /* config_secrets.c */
extern const struct gust_schema_key gust_otlp_schema[];
extern const struct gust_schema_key gust_table_schema[];
extern const struct gust_schema_key gust_webhook_schema[];

/* One process-wide block of host.conf: its schema, where its checked values (cfg) and
 * their binding (keys) live in struct gust_config, and what its schema cannot say. */
struct gust_config_block {
    const char *name; /* "" for the top level, "http", "nats", "secrets", "otlp" */
    const struct gust_schema_key *schema;
    size_t cfg_offset;  /* of its struct gust_cfg * */
    size_t keys_offset; /* of the struct its schema binds */
    /* Optional: checks of a block as written (NULL when absent), before binding. */
    int (*check_node)(const struct gust_conf_node *n, struct gust_err *err);
    /* Optional: checks of the bound values. */
    int (*check)(struct gust_config *c, struct gust_err *err);
};
#define GUST_CONFIG_BLOCKS 5
extern const struct gust_config_block gust_config_blocks[GUST_CONFIG_BLOCKS];
/* The checked values of block i (index into gust_config_blocks). */
const struct gust_cfg *gust_config_block_cfg(const struct gust_config *c, size_t i);

/* Parses and checks path. Sinks and sources are checked later, once their plugins are
 * loaded (gust_config_check_plugin_unit). */
int gust_config_load(const char *path, struct gust_config **out, struct gust_err *err);
/* Checks a sink or source block against its own keys plus plugin_schema (borrowed). */
int gust_config_check_plugin_unit(struct gust_unit_conf *unit, const struct gust_schema_key *plugin_schema,
                                  struct gust_err *err);
void gust_config_destroy(struct gust_config *config);
/* A flow's lua_path: its own, else the top level's (which has a default). */
const char *gust_config_lua_path(const struct gust_config *c, const struct gust_unit_conf *flow);

#endif
