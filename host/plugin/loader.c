#include "loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"

#ifndef GUST_PLUGIN_DIR_REL
#define GUST_PLUGIN_DIR_REL "../lib/gust/plugins" /* CMake sets it from the install layout */
#endif

/* ABI 1.0's sizes. Fields are only ever appended, so each is where 1.0's last field ends
 * (none of these structs had trailing padding beyond their own alignment). */
#define DESC_V1_0_SIZE (offsetof(struct gust_plugin_desc, fini) + sizeof(void (*)(void)))
#define TYPE_V1_0_SIZE (offsetof(struct gust_plugin_type, destroy) + sizeof(void (*)(void *)))
#define KEY_V1_0_SIZE (offsetof(struct gust_schema_key, help) + sizeof(const char *))
#define MSG_V1_0_SIZE (offsetof(struct gust_msg, stored_ns) + sizeof(int64_t))
#define RESULT_V1_0_SIZE (sizeof(struct gust_result)) /* status + error[200]: unchanged since 1.0 */

struct gust_plugin_lib {
    char *name;
    char *path;
    void *dl;
    const struct gust_plugin_desc *desc;
    struct gust_ptype *types; /* ntypes, host layout */
    size_t ntypes;
    struct gust_schema_key **schemas; /* ntypes host-layout copies */
    struct gust_plugin_lib *next;
};

/* Every plugin this process loaded; loading happens on the main thread at start and on
 * the reload thread afterwards, the lock keeps the two apart anyway. */
static struct gust_plugin_lib *loaded;
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;

void gust_plugins_default_dir(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        snprintf(out, size, "plugins");
        return;
    }
    exe[n] = '\0';
    const char *dir = dirname(exe);
    struct stat st;
    snprintf(out, size, "%s/plugins", dir);
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
        return; /* a build tree */
    }
    snprintf(out, size, "%s/%s", dir, GUST_PLUGIN_DIR_REL);
    char real[PATH_MAX];
    if (realpath(out, real) != NULL) {
        snprintf(out, size, "%s", real); /* /usr/lib/..., not /usr/sbin/../lib/... */
    }
}

static int refuse(struct gust_err *err, const char *where, const char *path, const char *why)
{
    return gust_err_set(err, GUST_EABI, "%s: cannot load plugin %s: %s", where, path, why);
}

static void lib_free(struct gust_plugin_lib *l)
{
    if (l == NULL) {
        return;
    }
    for (size_t t = 0; l->schemas != NULL && t < l->ntypes; t++) {
        free(l->schemas[t]);
    }
    free(l->schemas);
    free(l->types);
    free(l->name);
    free(l->path);
    if (l->dl != NULL) {
        dlclose(l->dl);
    }
    free(l);
}

/* The plugin's schema (entries key_size apart) in the host's layout. A plugin older than
 * GUST_K_BOUND has no offsets: its keys are read by name only. Plugin instances are
 * rebuilt at every reload, so every key a plugin declares is reloadable. */
static struct gust_schema_key *copy_schema(const struct gust_schema_key *schema, size_t key_size, int bound)
{
    size_t n = 0;
    while (schema != NULL &&
           ((const struct gust_schema_key *)((const char *)schema + n * key_size))->key != NULL) {
        n++;
    }
    struct gust_schema_key *out = calloc(n + 1, sizeof(*out));
    if (out == NULL) {
        return NULL;
    }
    size_t take = key_size < sizeof(*out) ? key_size : sizeof(*out);
    for (size_t i = 0; i < n; i++) {
        memcpy(&out[i], (const char *)schema + i * key_size, take);
        if (!bound) {
            out[i].flags &= ~(unsigned)GUST_K_BOUND;
        }
        out[i].flags |= GUST_K_RELOADABLE;
    }
    return out;
}

/* Checks the descriptor of the .so at path and makes the host's copies of its types.
 * Does not run init. */
static int lib_open(const char *path, const char *where, struct gust_plugin_lib **out, struct gust_err *err)
{
    char why[600];
    /* RTLD_LOCAL: plugins cannot see each other's symbols; RTLD_NOW: a missing symbol
     * fails here, with a message, not later in the middle of a batch. */
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        return refuse(err, where, path, dlerror());
    }
    struct gust_plugin_lib *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        dlclose(dl);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    l->dl = dl;
    int rc;
    gust_plugin_entry_fn entry = (gust_plugin_entry_fn)dlsym(dl, GUST_PLUGIN_ENTRY_NAME);
    const struct gust_plugin_desc *d = entry != NULL ? entry(gust_host_api()) : NULL;
    if (entry == NULL) {
        rc = refuse(err, where, path, "no exported symbol " GUST_PLUGIN_ENTRY_NAME);
        goto fail;
    }
    if (d == NULL) {
        rc = refuse(err, where, path, GUST_PLUGIN_ENTRY_NAME " returned no descriptor");
        goto fail;
    }
    if (d->abi_major != GUST_ABI_MAJOR || d->abi_minor > GUST_ABI_MINOR) {
        snprintf(why, sizeof(why), "plugin ABI %u.%u, this host offers ABI %d.0 to %d.%d: %s", d->abi_major,
                 d->abi_minor, GUST_ABI_MAJOR, GUST_ABI_MAJOR, GUST_ABI_MINOR,
                 d->abi_major != GUST_ABI_MAJOR ? "rebuild the plugin against this host"
                                                : "it needs a newer host");
        rc = refuse(err, where, path, why);
        goto fail;
    }
    int v1_1 = d->abi_minor >= 1 && d->struct_size >= offsetof(struct gust_plugin_desc, result_size) + 4;
    size_t type_size = v1_1 ? d->type_size : TYPE_V1_0_SIZE;
    size_t key_size = v1_1 ? d->key_size : KEY_V1_0_SIZE;
    size_t msg_size = v1_1 ? d->msg_size : MSG_V1_0_SIZE;
    size_t result_size = v1_1 ? d->result_size : RESULT_V1_0_SIZE;
    if (v1_1 && d->abi_minor == GUST_ABI_MINOR && type_size == 0 && key_size == 0 && msg_size == 0 &&
        result_size == 0) {
        /* Sizes left out (no GUST_PLUGIN_DESC_INIT) by a plugin of this very minor: they
         * are this header's. A plugin of an older minor must give them. */
        type_size = sizeof(struct gust_plugin_type);
        key_size = sizeof(struct gust_schema_key);
        msg_size = sizeof(struct gust_msg);
        result_size = sizeof(struct gust_result);
    }
    if (d->struct_size < DESC_V1_0_SIZE || d->name == NULL || (d->ntypes > 0 && d->types == NULL) ||
        (d->abi_minor >= 1 && !v1_1) || type_size < TYPE_V1_0_SIZE || key_size < KEY_V1_0_SIZE ||
        msg_size < MSG_V1_0_SIZE || result_size < RESULT_V1_0_SIZE || d->ntypes > 64) {
        rc = refuse(err, where, path, "malformed descriptor");
        goto fail;
    }
    l->desc = d;
    l->ntypes = d->ntypes;
    l->types = calloc(d->ntypes + 1, sizeof(*l->types));
    l->schemas = calloc(d->ntypes + 1, sizeof(*l->schemas));
    if (l->types == NULL || l->schemas == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto fail;
    }
    size_t take = type_size < sizeof(struct gust_plugin_type) ? type_size : sizeof(struct gust_plugin_type);
    for (size_t t = 0; t < d->ntypes; t++) {
        struct gust_ptype *pt = &l->types[t];
        memcpy(&pt->t, (const char *)d->types + t * type_size, take);
        pt->lib = l;
        pt->msg_size = msg_size;
        pt->result_size = result_size;
        const struct gust_plugin_type *ty = &pt->t;
        if (ty->name == NULL || ty->create == NULL || ty->destroy == NULL ||
            (ty->kind == GUST_PLUGIN_SINK && ty->deliver == NULL) ||
            (ty->kind != GUST_PLUGIN_SINK && ty->kind != GUST_PLUGIN_SOURCE)) {
            rc = refuse(err, where, path, "malformed plugin type");
            goto fail;
        }
        l->schemas[t] = copy_schema(ty->schema, key_size, v1_1);
        if (l->schemas[t] == NULL) {
            rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
            goto fail;
        }
        pt->t.schema = l->schemas[t];
    }
    *out = l;
    return 0;
fail:
    lib_free(l);
    return rc;
}

static int in_set(const struct gust_plugins *ps, const struct gust_plugin_lib *l)
{
    for (size_t i = 0; i < ps->n; i++) {
        if (ps->v[i] == l) {
            return 1;
        }
    }
    return 0;
}

/* Adds l to the generation's list, refusing a type another of its plugins provides. */
static int add_to_set(struct gust_plugins *ps, struct gust_plugin_lib *l, const char *where,
                      struct gust_err *err)
{
    for (size_t t = 0; t < l->ntypes; t++) {
        if (gust_plugins_find_type(ps, l->types[t].t.name) != NULL) {
            char why[300];
            snprintf(why, sizeof(why), "type %s is already provided by another plugin", l->types[t].t.name);
            return refuse(err, where, l->path, why);
        }
    }
    struct gust_plugin_lib **v = realloc(ps->v, (ps->n + 1) * sizeof(*v));
    if (v == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    ps->v = v;
    v[ps->n++] = l;
    return 0;
}

int gust_plugins_load(struct gust_plugins *ps, const char *dir, const char *name, const char *where,
                      struct gust_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.so", dir, name);
    pthread_mutex_lock(&loaded_lock);
    int rc = 0;
    struct gust_plugin_lib *l = loaded;
    while (l != NULL && strcmp(l->name, name) != 0) {
        l = l->next;
    }
    if (l != NULL && in_set(ps, l)) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: plugin %s is loaded twice", where, name);
    } else if (l != NULL && strcmp(l->path, path) != 0) {
        char why[4300];
        snprintf(why, sizeof(why),
                 "this process already runs %s from %s; another plugin_dir takes effect at restart", name,
                 l->path);
        rc = refuse(err, where, path, why);
    } else if (l != NULL) {
        rc = add_to_set(ps, l, where, err); /* shared with the generations before */
    } else if (access(path, R_OK) != 0) {
        rc = refuse(err, where, path, "no such file (check plugin_dir)");
    } else if ((rc = lib_open(path, where, &l, err)) == 0) {
        const struct gust_plugin_desc *d = l->desc;
        l->name = strdup(name);
        l->path = strdup(path);
        struct gust_err init_err = {{0}};
        if (l->name == NULL || l->path == NULL) {
            rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        } else if (d->init != NULL && d->init(gust_host_api(), &init_err) != 0) {
            char why[600];
            snprintf(why, sizeof(why), "init failed: %s", init_err.msg[0] ? init_err.msg : "no reason given");
            rc = refuse(err, where, path, why);
        } else {
            l->next = loaded;
            loaded = l;
            gust_info("plugin %s %s loaded from %s (ABI %u.%u)", d->name, d->version ? d->version : "", path,
                      d->abi_major, d->abi_minor);
            rc = add_to_set(ps, l, where, err);
            l = NULL;
        }
        lib_free(l); /* not loaded: refused before or at init */
    }
    pthread_mutex_unlock(&loaded_lock);
    return rc;
}

const struct gust_plugin_type *gust_plugins_find_type(const struct gust_plugins *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++) {
        for (size_t t = 0; t < ps->v[i]->ntypes; t++) {
            if (strcmp(ps->v[i]->types[t].t.name, name) == 0) {
                return &ps->v[i]->types[t].t;
            }
        }
    }
    return NULL;
}

void gust_plugins_unload(struct gust_plugins *ps)
{
    free(ps->v);
    ps->v = NULL;
    ps->n = 0;
}

void gust_plugins_shutdown(void)
{
    pthread_mutex_lock(&loaded_lock);
    while (loaded != NULL) {
        struct gust_plugin_lib *l = loaded;
        loaded = l->next;
        if (l->desc->fini != NULL) {
            l->desc->fini();
        }
        lib_free(l);
    }
    pthread_mutex_unlock(&loaded_lock);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_plugin_file(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 3 && strcmp(e->d_name + n - 3, ".so") == 0;
}

void gust_plugins_describe(const char *dir,
                           void (*fn)(void *ud, const char *plugin, const struct gust_plugin_type *t),
                           void *ud)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, is_plugin_file, by_name);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        struct gust_plugin_lib *l = NULL;
        struct gust_err err = {{0}};
        if (lib_open(path, path, &l, &err) == 0) {
            for (size_t t = 0; t < l->ntypes; t++) {
                fn(ud, l->desc->name, &l->types[t].t);
            }
            lib_free(l);
        }
        free(names[i]);
    }
    free(names);
}
