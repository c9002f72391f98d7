#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

/* The smallest descriptor any 1.x plugin can have: ABI 1.0's. */
#define DESC_V1_0_SIZE (offsetof(struct gust_plugin_desc, fini) + sizeof(void (*)(void)))

static int refuse(struct gust_err *err, const char *where, const char *path, const char *why)
{
    return gust_err_set(err, GUST_EABI, "%s: cannot load plugin %s: %s", where, path, why);
}

int gust_plugins_load(struct gust_plugins *ps, const char *dir, const char *name, const char *where,
                      struct gust_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.so", dir, name);
    for (size_t i = 0; i < ps->n; i++) {
        if (strcmp(ps->v[i].name, name) == 0) {
            return gust_err_set(err, GUST_ECONFIG, "%s: plugin %s is loaded twice", where, name);
        }
    }
    if (access(path, R_OK) != 0) {
        return refuse(err, where, path, "no such file (check plugin_dir)");
    }
    /* RTLD_LOCAL: plugins cannot see each other's symbols; RTLD_NOW: a missing symbol
     * fails here, with a message, not later in the middle of a batch. */
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        return refuse(err, where, path, dlerror());
    }
    char why[600];
    gust_plugin_entry_fn entry = (gust_plugin_entry_fn)dlsym(dl, GUST_PLUGIN_ENTRY_NAME);
    const struct gust_plugin_desc *d = entry != NULL ? entry(gust_host_api()) : NULL;
    int rc;
    if (entry == NULL) {
        rc = refuse(err, where, path, "no exported symbol " GUST_PLUGIN_ENTRY_NAME);
        goto fail;
    }
    if (d == NULL) {
        rc = refuse(err, where, path, GUST_PLUGIN_ENTRY_NAME " returned no descriptor");
        goto fail;
    }
    if (d->abi_major != GUST_ABI_MAJOR) {
        snprintf(why, sizeof(why), "plugin ABI %u.%u, host ABI %d.%d: rebuild the plugin against this host",
                 d->abi_major, d->abi_minor, GUST_ABI_MAJOR, GUST_ABI_MINOR);
        rc = refuse(err, where, path, why);
        goto fail;
    }
    if (d->struct_size < DESC_V1_0_SIZE || d->name == NULL || (d->ntypes > 0 && d->types == NULL)) {
        rc = refuse(err, where, path, "malformed descriptor");
        goto fail;
    }
    for (size_t t = 0; t < d->ntypes; t++) {
        const struct gust_plugin_type *ty = &d->types[t];
        if (ty->name == NULL || ty->create == NULL || ty->destroy == NULL ||
            (ty->kind == GUST_PLUGIN_SINK && ty->deliver == NULL) ||
            (ty->kind != GUST_PLUGIN_SINK && ty->kind != GUST_PLUGIN_SOURCE)) {
            rc = refuse(err, where, path, "malformed plugin type");
            goto fail;
        }
        if (gust_plugins_find_type(ps, ty->name) != NULL) {
            snprintf(why, sizeof(why), "type %s is already provided by another plugin", ty->name);
            rc = refuse(err, where, path, why);
            goto fail;
        }
    }
    if (d->init != NULL) {
        struct gust_err init_err = {{0}};
        if (d->init(gust_host_api(), &init_err) != 0) {
            snprintf(why, sizeof(why), "init failed: %s", init_err.msg[0] ? init_err.msg : "no reason given");
            rc = refuse(err, where, path, why);
            goto fail;
        }
    }
    struct gust_plugin *v = realloc(ps->v, (ps->n + 1) * sizeof(*v));
    if (v == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto fail_init;
    }
    ps->v = v;
    v[ps->n] = (struct gust_plugin){.name = strdup(name), .path = strdup(path), .dl = dl, .desc = d};
    ps->n++;
    gust_info("plugin %s %s loaded from %s (ABI %u.%u)", d->name, d->version ? d->version : "", path,
              d->abi_major, d->abi_minor);
    return 0;
fail_init:
    if (d->fini != NULL) {
        d->fini();
    }
fail:
    dlclose(dl);
    return rc;
}

const struct gust_plugin_type *gust_plugins_find_type(const struct gust_plugins *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++) {
        const struct gust_plugin_desc *d = ps->v[i].desc;
        for (size_t t = 0; t < d->ntypes; t++) {
            if (strcmp(d->types[t].name, name) == 0) {
                return &d->types[t];
            }
        }
    }
    return NULL;
}

void gust_plugins_unload(struct gust_plugins *ps)
{
    for (size_t i = ps->n; i-- > 0;) {
        if (ps->v[i].desc->fini != NULL) {
            ps->v[i].desc->fini();
        }
        dlclose(ps->v[i].dl);
        free(ps->v[i].name);
        free(ps->v[i].path);
    }
    free(ps->v);
    ps->v = NULL;
    ps->n = 0;
}
