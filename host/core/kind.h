/* A unit kind: what a block `KIND NAME { ... }` of host.conf becomes.
 *
 * Each kind is one const struct gust_kind, in its own file (kind_flow.c, kind_detect.c,
 * kind_relay.c, kind_plugin.c for sink and source), registered by one line in GUST_KINDS
 * (kinds.h). Nothing else names a kind: config.c parses its blocks with its schema,
 * host.c checks, starts and stops its units through it, --help prints its keys, the
 * config digest, reload, edges, /replay's script directories and `gust -t` read its
 * flags and hooks. docs/ARCHITECTURE.md has the recipe. */
#ifndef GUST_CORE_KIND_H
#define GUST_CORE_KIND_H

#include "config.h"
#include "gust/err.h"
#include "gust/schema.h"

struct gust_bus;
struct gust_host;

/* A kind's keys, bound into struct gust_unit_keys (config.h, the keys the kinds share)
 * or into a struct of its own (keys_size; GUST_KIND_KEY). Units are rebuilt at every
 * reload: all their keys are reloadable. */
#define GUST_UNIT_KEY(f, T, def, flags, help) \
    GUST_KEY(struct gust_unit_keys, f, T, def, (flags) | GUST_K_RELOADABLE, help)
#define GUST_UNIT_KEY_RANGE(f, T, def, flags, lo, hi, help) \
    GUST_KEY_RANGE(struct gust_unit_keys, f, T, def, (flags) | GUST_K_RELOADABLE, lo, hi, help)
#define GUST_KIND_KEY(S, f, T, def, flags, help) GUST_KEY(S, f, T, def, (flags) | GUST_K_RELOADABLE, help)
#define GUST_KIND_KEY_RANGE(S, f, T, def, flags, lo, hi, help) \
    GUST_KEY_RANGE(S, f, T, def, (flags) | GUST_K_RELOADABLE, lo, hi, help)

enum gust_kind_flags {
    /* Its keys are its schema's plus those of the plugin type its `use` names (kind's
     * plugin_kind): they are checked once the plugins are loaded. */
    GUST_KIND_PLUGIN = 1 << 0,
    /* It may feed other units in memory (their `edge NAME;` names it), so it starts
     * after every other kind, once the queues it feeds exist. */
    GUST_KIND_FEEDS_EDGES = 1 << 1,
    /* A reload keeps it running, state and all, when its block and files are unchanged
     * (its start adopts it: gust_units_adopt). */
    GUST_KIND_KEPT = 1 << 2,
    /* Its `script` is a Lua flow: shadow replay (/replay) runs it, and its folder and
     * lua_path are script directories (script_dirs.h), `gust test-flow` takes its
     * lua_path. */
    GUST_KIND_LUA = 1 << 3,
};

struct gust_kind {
    const char *name; /* the block's word */
    const char *help; /* --help's heading: "NAME NAME { }" then this (may be "") */
    const struct gust_schema_key *schema; /* its keys */
    /* 0: schema binds into u->k (struct gust_unit_keys); else into a struct of this size
     * of the kind's own, u->keys (zeroed first, freed with the config). */
    size_t keys_size;
    unsigned flags;                       /* enum gust_kind_flags */
    int plugin_kind;                      /* GUST_KIND_PLUGIN: GUST_PLUGIN_SINK or _SOURCE */
    /* Keys naming files whose contents, not paths, count in the config digest (a kept
     * unit, the cluster guard): NULL-terminated, or NULL. */
    const char *const *file_keys;

    /* Optional: checks a unit as far as can be done without I/O (gust -t, a reload's
     * preparation): compile its script, create its plugin instance unstarted... Errors
     * name file:line. u is the host's, which the check may complete (a plugin unit's
     * keys). */
    int (*check)(struct gust_host *host, struct gust_unit_conf *u, struct gust_err *err);
    /* Optional: what `gust -t` runs beyond check (a detect unit's rule tests). */
    int (*test)(const struct gust_unit_conf *u, struct gust_err *err);
    /* Starts the unit on bus (borrowed). A consumer-core unit joins host->units (the
     * registry stops it); a unit with state of its own sets *state (kept even when the
     * start fails), which stop gets back. A unit that may not run (a secret that did
     * not resolve) logs it and returns 0. */
    int (*start)(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus, void **state,
                 struct gust_err *err);
    /* Stops and frees what start made with *state (required when start sets it), before
     * the registry stops the consumer-core units. */
    void (*stop)(struct gust_host *host, const struct gust_unit_conf *u, void *state);
};

#endif
