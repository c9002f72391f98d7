/* The fake host for plugin tests: see fake_host.h. */
#include "fake_host.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/sdk.h" /* gust_rate_parse */

#define MAX_PAIRS 32

struct gust_cfg {
    const struct gust_schema_key *schema;
    const char *key[MAX_PAIRS];
    const char *val[MAX_PAIRS];
    size_t n;
    char where[64];
    const char **lists[MAX_PAIRS]; /* what cfg_bind gave LIST fields; freed with the cfg */
    size_t nlists;
};

struct gust_instance {
    const char *name;
};

static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fake host: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static const struct gust_schema_key *schema_key(const struct gust_cfg *cfg, const char *key)
{
    for (const struct gust_schema_key *k = cfg->schema; k->key; k++) {
        if (strcmp(k->key, key) == 0) {
            return k;
        }
    }
    /* A real host refuses unknown keys before the plugin runs: writing one in a test, or
     * asking where one is, is a bug. */
    fatal("key \"%s\" is not in the plugin's schema", key);
}

/* The value as written: the pair's, else the schema default, else NULL. */
static const char *raw(const struct gust_cfg *cfg, const char *key)
{
    const struct gust_schema_key *k = schema_key(cfg, key);
    for (size_t i = 0; i < cfg->n; i++) {
        if (strcmp(cfg->key[i], key) == 0) {
            return cfg->val[i];
        }
    }
    return k->def;
}

/* The number as the host normalises it: DURATION in ms, SIZE in bytes. */
static int64_t number(const struct gust_schema_key *k, const char *v)
{
    char *end;
    long long n = strtoll(v, &end, 10);

    switch (k->type) {
    case GUST_T_INT:
        return n;
    case GUST_T_DURATION:
        return strcmp(end, "s") == 0   ? n * 1000
               : strcmp(end, "m") == 0 ? n * 60000
               : strcmp(end, "h") == 0 ? n * 3600000
                                       : n;
    case GUST_T_SIZE:
        return *end == 'k' ? n << 10 : *end == 'm' ? n << 20 : *end == 'g' ? n << 30 : n;
    default:
        fatal("key \"%s\": not a number type", k->key);
    }
}

/* A LIST key's values in order (the default as its one item when none is written), kept
 * until the cfg is destroyed. */
static struct gust_list list(struct gust_cfg *cfg, const struct gust_schema_key *k)
{
    const char **items = calloc(MAX_PAIRS + 1, sizeof(*items));
    size_t n = 0;

    if (!items || cfg->nlists == MAX_PAIRS) {
        fatal("out of memory for lists");
    }
    cfg->lists[cfg->nlists++] = items;
    for (size_t i = 0; i < cfg->n; i++) {
        if (strcmp(cfg->key[i], k->key) == 0) {
            items[n++] = cfg->val[i];
        }
    }
    if (n == 0 && k->def) {
        items[n++] = k->def;
    }
    return (struct gust_list){items, n};
}

/* The host's binder, on the pairs: each GUST_K_BOUND key written at its offset. */
static int cfg_bind(const struct gust_cfg *ccfg, const struct gust_schema_key *schema, size_t key_size,
                    void *out, struct gust_err *err)
{
    struct gust_cfg *cfg = (struct gust_cfg *)ccfg;

    (void)err;
    if (schema != cfg->schema) {
        fatal("binding a schema other than the one the cfg was made for");
    }
    for (const char *p = (const char *)schema;; p += key_size) {
        const struct gust_schema_key *k = (const struct gust_schema_key *)p;
        if (!k->key) {
            return 0;
        }
        if (!(k->flags & GUST_K_BOUND)) {
            fatal("key \"%s\" is not bound to a field", k->key);
        }
        char *field = (char *)out + k->offset;
        const char *v = raw(cfg, k->key);
        switch (k->type) {
        case GUST_T_INT:
        case GUST_T_SIZE:
        case GUST_T_DURATION: {
            int64_t n = v ? number(k, v) : 0;
            memcpy(field, &n, sizeof(n));
            break;
        }
        case GUST_T_BOOL: {
            int b = v && (strcmp(v, "on") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0);
            memcpy(field, &b, sizeof(b));
            break;
        }
        case GUST_T_LIST: {
            struct gust_list l = list(cfg, k);
            memcpy(field, &l, sizeof(l));
            break;
        }
        case GUST_T_RATE: {
            double per_sec = 0;
            if (v && gust_rate_parse(v, &per_sec) != 0) {
                fatal("key \"%s\": \"%s\" is not a rate", k->key, v);
            }
            memcpy(field, &per_sec, sizeof(per_sec));
            break;
        }
        default:
            memcpy(field, &v, sizeof(v));
        }
    }
}

/* Pair i stands on line i + 2 of a made-up host.conf (line 1 opens the block). */
static const char *cfg_where(const struct gust_cfg *cfg, const char *key)
{
    struct gust_cfg *c = (struct gust_cfg *)cfg;
    size_t line = 1;

    schema_key(cfg, key);
    for (size_t i = 0; i < cfg->n; i++) {
        if (strcmp(cfg->key[i], key) == 0) {
            line = i + 2;
            break;
        }
    }
    snprintf(c->where, sizeof(c->where), "host.conf:%zu", line);
    return c->where;
}

static void host_log(const struct gust_instance *inst, int level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%s] %s: ", names[level & 3], inst ? inst->name : "-");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static const char *instance_name(const struct gust_instance *inst)
{
    return inst->name;
}

static int publish(struct gust_instance *inst, const char *subject, const void *data, size_t len,
                   gust_publish_done_fn done, void *ud)
{
    (void)data, (void)len, (void)done, (void)ud;
    fatal("%s published to %s, but a sink has nothing to publish", inst->name, subject);
}

static const struct gust_host_api api = {
    .struct_size = sizeof(struct gust_host_api),
    .abi_major = GUST_ABI_MAJOR,
    .abi_minor = GUST_ABI_MINOR,
    .log = host_log,
    .instance_name = instance_name,
    .cfg_where = cfg_where,
    .publish = publish,
    .cfg_bind = cfg_bind,
};

void fake_plugin_load(struct fake_plugin *p, const char *path)
{
    struct gust_err err = {{0}};

    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        fatal("%s", dlerror());
    }
    gust_plugin_entry_fn entry = (gust_plugin_entry_fn)dlsym(p->dl, GUST_PLUGIN_ENTRY_NAME);
    if (!entry) {
        fatal("%s: no %s", path, GUST_PLUGIN_ENTRY_NAME);
    }
    p->desc = entry(&api);
    if (!p->desc || p->desc->abi_major != GUST_ABI_MAJOR) {
        fatal("%s: no descriptor, or ABI major other than %d", path, GUST_ABI_MAJOR);
    }
    if (p->desc->init && p->desc->init(&api, &err) != 0) {
        fatal("%s: init: %s", path, err.msg);
    }
}

void fake_plugin_unload(struct fake_plugin *p)
{
    if (p->desc->fini) {
        p->desc->fini();
    }
    dlclose(p->dl);
}

const struct gust_plugin_type *fake_plugin_type(const struct fake_plugin *p, const char *name)
{
    for (size_t i = 0; i < p->desc->ntypes; i++) {
        if (strcmp(p->desc->types[i].name, name) == 0) {
            return &p->desc->types[i];
        }
    }
    return NULL;
}

struct gust_cfg *fake_cfg_create(const struct gust_schema_key *schema, ...)
{
    struct gust_cfg *cfg = calloc(1, sizeof(*cfg));
    const char *key;
    va_list ap;

    if (!cfg) {
        fatal("out of memory");
    }
    cfg->schema = schema;
    va_start(ap, schema);
    while ((key = va_arg(ap, const char *))) {
        if (cfg->n == MAX_PAIRS) {
            fatal("more than %d config pairs", MAX_PAIRS);
        }
        schema_key(cfg, key);
        cfg->key[cfg->n] = key;
        cfg->val[cfg->n++] = va_arg(ap, const char *);
    }
    va_end(ap);
    for (const struct gust_schema_key *k = schema; k->key; k++) {
        if ((k->flags & GUST_K_REQUIRED) && !raw(cfg, k->key)) {
            fatal("required key \"%s\" missing (the host would refuse the block)", k->key);
        }
    }
    return cfg;
}

void fake_cfg_destroy(struct gust_cfg *cfg)
{
    for (size_t i = 0; i < cfg->nlists; i++) {
        free(cfg->lists[i]);
    }
    free(cfg);
}

struct gust_instance *fake_instance(const char *name)
{
    static struct gust_instance inst;
    inst.name = name;
    return &inst;
}
