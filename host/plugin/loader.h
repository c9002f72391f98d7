/* Loading plugins: dlopen, the entry symbol, the ABI check, init. */
#ifndef GUST_PLUGIN_LOADER_H
#define GUST_PLUGIN_LOADER_H

#include <stddef.h>

#include "gust/plugin.h"

struct gust_plugin {
    char *name;
    char *path;
    void *dl;
    const struct gust_plugin_desc *desc;
};

struct gust_plugins {
    struct gust_plugin *v;
    size_t n;
};

/* The host's API table (static, valid for the life of the process). */
const struct gust_host_api *gust_host_api(void);

/* Loads <dir>/<name>.so. where ("file:line" of the `plugin` line) prefixes errors.
 * Refuses, naming the file: a missing file or entry symbol, another ABI major, a
 * descriptor smaller than ABI 1.0's, a failing init, a type name already loaded. */
int gust_plugins_load(struct gust_plugins *ps, const char *dir, const char *name, const char *where,
                      struct gust_err *err);
/* The type `use <name>;` refers to, or NULL. */
const struct gust_plugin_type *gust_plugins_find_type(const struct gust_plugins *ps, const char *name);
/* Calls fini and unloads everything. */
void gust_plugins_unload(struct gust_plugins *ps);

#endif
