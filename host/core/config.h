/* host.conf as the host sees it: the checked top-level, http and nats blocks, the
 * plugins to load and the units, each with its own checked configuration. */
#ifndef GUST_CORE_CONFIG_H
#define GUST_CORE_CONFIG_H

#include <stddef.h>

#include "../conf/conf.h"
#include "gust/err.h"
#include "gust/schema.h"

enum gust_unit_kind { GUST_UNIT_FLOW, GUST_UNIT_DETECT, GUST_UNIT_RELAY, GUST_UNIT_SINK, GUST_UNIT_SOURCE };

struct gust_unit_conf {
    enum gust_unit_kind kind;
    const char *name;                  /* borrowed from the tree */
    const struct gust_conf_node *node; /* borrowed from the tree */
    char where[300];                   /* "file:line" of the block */
    const char *use;                   /* sinks and sources: the plugin type */
    struct gust_cfg *cfg;              /* owned; for sinks and sources set by
                                          gust_config_check_plugin_unit */
};

struct gust_plugin_ref {
    const char *name; /* borrowed from the tree */
    char where[300];
};
/* `table NAME { file PATH; key FIELD; }`: a lookup table for the flows. */
struct gust_table_conf {
    const char *name; /* borrowed from the tree */
    char where[300];
    struct gust_cfg *cfg; /* owned */
};

struct gust_config {
    struct gust_conf *tree;
    struct gust_cfg *top;
    struct gust_cfg *http;
    struct gust_cfg *nats;
    struct gust_plugin_ref *plugins;
    size_t nplugins;
    struct gust_unit_conf *units;
    size_t nunits;
    struct gust_table_conf *tables;
    size_t ntables;
};

extern const struct gust_schema_key gust_top_schema[];
extern const struct gust_schema_key gust_http_schema[];
extern const struct gust_schema_key gust_nats_schema[];
extern const struct gust_schema_key gust_flow_schema[];
extern const struct gust_schema_key gust_detect_schema[];
extern const struct gust_schema_key gust_relay_schema[];
extern const struct gust_schema_key gust_sink_schema[];   /* besides the plugin's keys */
extern const struct gust_schema_key gust_source_schema[]; /* besides the plugin's keys */
extern const struct gust_schema_key gust_table_schema[];

const char *gust_unit_kind_name(enum gust_unit_kind kind);

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
