/* The Gust plugin ABI.
 *
 * A plugin is a shared object `<plugin_dir>/<name>.so` loaded by `plugin <name>;` in
 * host.conf. It exports one function, GUST_PLUGIN_ENTRY, which receives the host's API
 * table and returns a descriptor. Everything else in the plugin should be static
 * (build with -fvisibility=hidden).
 *
 * Compatibility: the host refuses a descriptor whose abi_major differs from its own,
 * naming both. It accepts an older abi_minor; struct_size tells which trailing fields
 * exist, so structures only ever grow at the end. Plugins likewise check
 * api->struct_size before using an API entry newer than the minor they were built for.
 *
 * A plugin provides one or more types (mqtt provides mqtt_in and mqtt_out). A unit in
 * host.conf names its type with `use <type>;`; each such unit is an instance.
 *
 * Lifecycle of an instance: create (allocate, check values; no I/O) -> start (connect,
 * start threads) -> deliver... (sinks) -> stop -> destroy.
 *
 * Threads: a sink's deliver() runs on its unit's thread and may block until the batch
 * is done. A source publishes from its own threads through api->publish(), which is
 * thread-safe. A plugin never touches host state other than through the API table. */
#ifndef GUST_PLUGIN_H
#define GUST_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"
#include "gust/schema.h"

#define GUST_ABI_MAJOR 1
#define GUST_ABI_MINOR 0
#define GUST_PLUGIN_ENTRY gust_plugin_entry
#define GUST_PLUGIN_ENTRY_NAME "gust_plugin_entry"

enum gust_log_level { GUST_LOG_ERROR = 0, GUST_LOG_WARN, GUST_LOG_INFO, GUST_LOG_DEBUG };

enum gust_plugin_kind { GUST_PLUGIN_SOURCE = 1, GUST_PLUGIN_SINK = 2 };

/* One message handed to a sink. Borrowed: valid only during the deliver() call. */
struct gust_msg {
    const char *subject;
    const void *data;
    size_t len;
    uint64_t stream_seq;
    uint32_t attempt;  /* 1 on first delivery */
    int64_t stored_ns; /* when the stream stored it, ns since the epoch (0: unknown) */
};

/* What a sink says about one message. */
enum gust_delivery {
    GUST_DELIVERED = 0, /* done: the host acks it */
    GUST_RETRY = 1,     /* the far end is down or busy: redelivered with backoff until it
                           takes it; the bus holds it meanwhile, never dead-lettered */
    GUST_REJECTED = 2,  /* the far end refused it: max_deliver attempts (it may be fixed
                           meanwhile), then the dead-letter stream */
};

struct gust_result {
    int status;       /* enum gust_delivery */
    char error[200];  /* why, for RETRY and REJECTED; goes into the dead-letter envelope */
};

/* Host-owned handle of one plugin instance (a unit of host.conf). */
struct gust_instance;

/* Called once per publish, from a host thread: status 0 and the stream sequence when
 * the bus stored it, or a negative GUST_E* and the reason when it refused or timed out. */
typedef void (*gust_publish_done_fn)(void *ud, int status, uint64_t seq, const char *error);

struct gust_host_api {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;

    /* Logs with the instance's name as prefix (inst may be NULL). */
    void (*log)(const struct gust_instance *inst, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    const char *(*instance_name)(const struct gust_instance *inst);

    /* Reading an instance's checked configuration (see gust/schema.h). */
    const char *(*cfg_str)(const struct gust_cfg *cfg, const char *key);
    int64_t (*cfg_int)(const struct gust_cfg *cfg, const char *key);
    size_t (*cfg_count)(const struct gust_cfg *cfg, const char *key);
    const char *(*cfg_item)(const struct gust_cfg *cfg, const char *key, size_t i);
    const char *(*cfg_where)(const struct gust_cfg *cfg, const char *key);

    /* Sources: publish to the durable bus. data is copied before the call returns.
     * done (may be NULL) fires once with the outcome. Returns GUST_EAGAIN when too
     * many publishes are pending: back off and retry. Thread-safe. The host calls
     * destroy only after every outcome of the instance's publishes has been delivered
     * (within nats { publish_timeout }), so done never runs on a destroyed instance or
     * an unloaded plugin. */
    int (*publish)(struct gust_instance *inst, const char *subject, const void *data, size_t len,
                   gust_publish_done_fn done, void *ud);
};

struct gust_plugin_type {
    const char *name;                      /* what `use <name>;` names */
    int kind;                              /* enum gust_plugin_kind */
    const struct gust_schema_key *schema;  /* the instance's keys; NULL-key terminated */

    /* Allocate the instance from its checked config. No I/O. cfg is borrowed and
     * stays valid until destroy. */
    int (*create)(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                  struct gust_err *err);
    /* Connect, start threads. May be NULL. */
    int (*start)(void *ctx, struct gust_err *err);
    /* Sinks: deliver msgs[0..n), fill results[0..n). Runs on the unit's thread and may
     * block until every message has an outcome. Returns 0, or negative when the whole
     * batch failed (every message is then retried). */
    int (*deliver)(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results);
    /* Stop threads and connections; after it returns the instance publishes nothing. */
    void (*stop)(void *ctx);
    void (*destroy)(void *ctx);
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
    /* Called once before unloading (may be NULL). */
    void (*fini)(void);
};

/* The one symbol a plugin exports. api is borrowed and valid until fini. */
typedef const struct gust_plugin_desc *(*gust_plugin_entry_fn)(const struct gust_host_api *api);

#define GUST_PLUGIN_EXPORT __attribute__((visibility("default")))

#endif
