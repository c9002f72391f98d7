/* The Gust plugin ABI: the entry symbol, the descriptor and the plugin types.
 * docs/PLUGINS.md is the guide; this header is the contract.
 *
 * A plugin is a shared object `<plugin_dir>/<name>.so` loaded by `plugin <name>;` in
 * host.conf. It exports one function, GUST_PLUGIN_ENTRY, which receives the host's API
 * table (gust/api.h) and returns a descriptor. Everything else in the plugin should be
 * hidden (build with -fvisibility=hidden; `pkg-config --cflags gust-plugin` says so).
 *
 * Versions: the host refuses a descriptor whose abi_major differs from its own, or whose
 * abi_minor is newer than its own, naming both. It accepts every older minor: structs
 * and arrays only grow at the end, and the host reads a plugin's arrays with the element
 * sizes the plugin was built with (the *_size fields, which GUST_PLUGIN_DESC_INIT fills).
 *
 * A plugin provides one or more types (mqtt provides mqtt_in and mqtt_out). A unit in
 * host.conf names its type with `use <type>;`; each such unit is an instance.
 *
 * Lifecycle: the plugin is loaded once per process, at the first generation that names
 * it, and shared by every later generation: init runs once after loading, fini once at
 * exit. An instance lives for one generation: create (allocate, check values; no I/O) ->
 * start (connect, start threads) -> deliver... (sinks) -> stop -> destroy. A reload
 * destroys the old generation's instances and creates new ones from the new host.conf,
 * so every key of a plugin is reloadable.
 *
 * Threads: a sink's deliver() runs on its unit's thread and may block until the batch
 * is done; instances of one type may run on different threads at once. A source
 * publishes from its own threads through api->publish(), which is thread-safe. A plugin
 * never touches host state other than through the API table. */
#ifndef GUST_PLUGIN_H
#define GUST_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "gust/api.h"
#include "gust/err.h"
#include "gust/msg.h"
#include "gust/schema.h"

#define GUST_ABI_MAJOR 1
#define GUST_ABI_MINOR 8
#define GUST_PLUGIN_ENTRY gust_plugin_entry
#define GUST_PLUGIN_ENTRY_NAME "gust_plugin_entry"

enum gust_plugin_kind { GUST_PLUGIN_SOURCE = 1, GUST_PLUGIN_SINK = 2 };

/* ABI 1.4: one of an instance's own counters, shown by /units (sinks: member "plugin")
 * and /metrics (gust_plugin_value{unit,name}). */
struct gust_plugin_counter {
    const char *name; /* [a-z0-9_]+, static */
    uint64_t value;
};
#define GUST_PLUGIN_COUNTERS_MAX 16

/* The end of a counters callback: copies the first max of all[0..n) into out and
 * returns how many. */
static inline size_t gust_plugin_counters_put(struct gust_plugin_counter *out, size_t max,
                                              const struct gust_plugin_counter *all, size_t n)
{
    size_t i = 0;
    for (; i < n && i < max; i++) {
        out[i] = all[i];
    }
    return i;
}

/* ABI 1.5: how the host fetches messages for a sink instance (fetch_limits below). Fixed
 * as it is: a later minor that needs more adds another callback rather than growing it. */
struct gust_fetch_limits {
    /* In: nats { ack_wait }: a message handed to deliver() and not settled within it is
     * delivered again (to any process). */
    int64_t ack_wait_ms;
    /* In: the unit's `batch`. Out: the most messages one deliver() call gets (>= 1).
     * The host asks for the next batch while deliver() runs, so a message may wait two
     * calls: a sink that sends slowly (a rate limit) keeps 2 * max within ack_wait. */
    size_t max;
    /* In: 0. Out: once a first message is there, how long the host waits for `max`
     * before it calls deliver() with what it has (a batching sink's linger). */
    int64_t linger_ms;
};

/* ABI 1.7: what a sink's `ordered` callback answers.
 *   GUST_ORDER_STREAM  every message reaches the far end in stream order: the host hands
 *                      deliver() one batch at a time and, while messages of it come back
 *                      GUST_RETRY, calls deliver() again with those (still in order), at
 *                      its retry delays, keeping them in progress on the bus, before it
 *                      takes the next batch; deliver() sends nothing after a message that
 *                      failed (the rest of the call is GUST_RETRY, unsent).
 *   GUST_ORDER_KEY     the plugin keeps order per key itself (a RETRY of one key holds
 *                      that key's later messages, RETRY too, until it went); the host
 *                      settles as for an unordered sink.
 * Either way a GUST_REJECTED message is dead-lettered at once (retrying it later would
 * send it after the ones behind it), and a restart reads the consumer again from its
 * first unacknowledged message (the host recreates it there when it had any). */
enum gust_order { GUST_ORDER_NONE = 0, GUST_ORDER_STREAM = 1, GUST_ORDER_KEY = 2 };

struct gust_plugin_type {
    const char *name;                     /* what `use <name>;` names */
    int kind;                             /* enum gust_plugin_kind */
    const struct gust_schema_key *schema; /* the instance's keys; NULL-key terminated */

    /* Allocate the instance from its checked config. No I/O. cfg is borrowed and
     * stays valid until destroy. */
    int (*create)(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err);
    /* Connect, start threads. May be NULL. */
    int (*start)(void *ctx, struct gust_err *err);
    /* Sinks: deliver msgs[0..n), fill results[0..n). Runs on the unit's thread and may
     * block until every message has an outcome. Returns 0, or negative when the whole
     * batch failed (every message is then retried). */
    int (*deliver)(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results);
    /* Stop threads and connections; after it returns the instance publishes nothing. */
    void (*stop)(void *ctx);
    void (*destroy)(void *ctx);
    /* ABI 1.4. Optional. Fills up to max (GUST_PLUGIN_COUNTERS_MAX) of the instance's
     * counters and returns how many. Called from the HTTP thread between start and stop,
     * while the instance runs: read atomics. */
    size_t (*counters)(void *ctx, struct gust_plugin_counter *out, size_t max);
    /* ABI 1.5. Optional (sinks). Called once after start, on the unit's thread, before
     * the first fetch: may lower or raise l->max and set l->linger_ms. */
    void (*fetch_limits)(void *ctx, struct gust_fetch_limits *l);
    /* ABI 1.5. Sinks: nonzero when deliver() reads msgs[].headers. The host parses a
     * message's NATS headers only for such a type (it costs a parse per message). */
    int wants_headers;
    /* ABI 1.7. Optional (sinks). Called once after start: how the instance wants its
     * messages settled, GUST_ORDER_*. NULL, or GUST_ORDER_NONE: in any order, in
     * parallel (the default). */
    int (*ordered)(void *ctx);
    /* New fields go here, at the end (the host reads types type_size bytes apart). */
};

struct gust_plugin_desc {
    uint32_t struct_size; /* sizeof(struct gust_plugin_desc) as the plugin was built */
    uint16_t abi_major;
    uint16_t abi_minor;
    const char *name;
    const char *version;
    const struct gust_plugin_type *types;
    size_t ntypes;
    /* Called once after loading (may be NULL). A failure refuses the plugin. */
    int (*init)(const struct gust_host_api *api, struct gust_err *err);
    /* Called once before unloading, at exit (may be NULL). */
    void (*fini)(void);

    /* ABI 1.1: the element sizes of the arrays that cross the ABI, as the plugin was
     * built. A 1.0 descriptor ends before them; the host then uses 1.0's sizes. */
    uint32_t type_size;   /* sizeof(struct gust_plugin_type): types[] */
    uint32_t key_size;    /* sizeof(struct gust_schema_key): every schema[] */
    uint32_t msg_size;    /* sizeof(struct gust_msg): deliver's msgs[] */
    uint32_t result_size; /* sizeof(struct gust_result): deliver's results[] */
};

/* The version and size fields of a descriptor, for its initializer:
 *   static const struct gust_plugin_desc desc = {GUST_PLUGIN_DESC_INIT, .name = "x", ...}; */
#define GUST_PLUGIN_DESC_INIT                                                                            \
    .struct_size = sizeof(struct gust_plugin_desc), .abi_major = GUST_ABI_MAJOR, .abi_minor = GUST_ABI_MINOR, \
    .type_size = sizeof(struct gust_plugin_type), .key_size = sizeof(struct gust_schema_key),                \
    .msg_size = sizeof(struct gust_msg), .result_size = sizeof(struct gust_result)

/* The one symbol a plugin exports. api is borrowed and valid until fini. */
typedef const struct gust_plugin_desc *(*gust_plugin_entry_fn)(const struct gust_host_api *api);

#define GUST_PLUGIN_EXPORT __attribute__((visibility("default")))

#endif
