/* Loading plugins: dlopen, the entry symbol, the ABI check, init.
 *
 * A plugin is loaded once per process and shared by every generation that names it:
 * init runs once, at its first load, and fini once, at gust_plugins_shutdown. The host
 * keeps its own copy of each plugin type and schema in its own layout, made from the
 * plugin's arrays with the element sizes the plugin was built with. */
#ifndef GUST_PLUGIN_LOADER_H
#define GUST_PLUGIN_LOADER_H

#include <stddef.h>

#include "gust/plugin.h"

struct gust_plugin_lib; /* one loaded .so, process-wide */

/* A plugin type as the host uses it. `t` comes first: the type pointers handed around
 * (gust_plugins_find_type, gust_instance.type) point at it. */
struct gust_ptype {
    struct gust_plugin_type t; /* host layout; t.schema is the host-layout copy */
    const struct gust_plugin_lib *lib;
    size_t msg_size;    /* the plugin's sizeof(struct gust_msg) */
    size_t result_size; /* the plugin's sizeof(struct gust_result) */
};

/* The plugins one generation names (borrowed from the process-wide registry). */
struct gust_plugins {
    struct gust_plugin_lib **v;
    size_t n;
};

/* The host's API table (static, valid for the life of the process). */
const struct gust_host_api *gust_host_api(void);

/* Where `plugin NAME;` looks without plugin_dir: plugins/ beside a gust that runs from a
 * build tree (build/gust finds build/plugins/), else the installed plugin directory. */
void gust_plugins_default_dir(char *out, size_t size);

/* Adds <dir>/<name>.so to ps, loading it if this process has not yet. where ("file:line"
 * of the `plugin` line) prefixes errors. Refuses, naming the file: a missing file or
 * entry symbol, another ABI major or a newer minor, a malformed descriptor, a failing
 * init, a type name already provided, the same plugin from another directory. */
int gust_plugins_load(struct gust_plugins *ps, const char *dir, const char *name, const char *where,
                      struct gust_err *err);
/* The type `use <name>;` refers to, or NULL. */
const struct gust_plugin_type *gust_plugins_find_type(const struct gust_plugins *ps, const char *name);
/* The host's view of a type returned by gust_plugins_find_type (t is its first member). */
static inline const struct gust_ptype *gust_ptype_of(const struct gust_plugin_type *t)
{
    return (const struct gust_ptype *)t;
}
/* Forgets the generation's list; the plugins stay loaded for the next one. */
void gust_plugins_unload(struct gust_plugins *ps);
/* At exit, once nothing runs: fini and dlclose every plugin of the process. */
void gust_plugins_shutdown(void);

/* For --help and gust-host.conf(5): calls fn for every type of every .so file in dir, in file
 * name order, without running init (the entry function and descriptor only). Plugins
 * that do not load are skipped. */
void gust_plugins_describe(const char *dir,
                           void (*fn)(void *ud, const char *plugin, const struct gust_plugin_type *t),
                           void *ud);

#endif
