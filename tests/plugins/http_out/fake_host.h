/* Just enough of a host to drive a sink plugin from a test: its API table, a config made
 * of key/value pairs (the schema's defaults filling in, as the real host does) that the
 * plugin binds with gust_sdk_bind, and the loading of the .so. */
#ifndef GUST_TEST_FAKE_HOST_H
#define GUST_TEST_FAKE_HOST_H

#include "gust/plugin.h"

struct fake_plugin {
    void *dl;
    const struct gust_plugin_desc *desc;
};

/* dlopens path, calls the entry and init. Exits the test with a message on failure. */
void fake_plugin_load(struct fake_plugin *p, const char *path);
void fake_plugin_unload(struct fake_plugin *p);
/* The plugin's type called name, or NULL. */
const struct gust_plugin_type *fake_plugin_type(const struct fake_plugin *p, const char *name);

/* A config for a block of the given schema (borrowed), from NULL-terminated pairs
 * key, value, key, value... (all borrowed, as written in host.conf: "5s", "64"). A key
 * may repeat for a list. */
struct gust_cfg *fake_cfg_create(const struct gust_schema_key *schema, ...);
void fake_cfg_destroy(struct gust_cfg *cfg);

/* A host instance handle named name (borrowed). */
struct gust_instance *fake_instance(const char *name);

#endif
