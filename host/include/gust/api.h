/* The host API table a plugin receives from its entry function.
 *
 * Entries are only ever added at the end. A plugin that uses an entry newer than the
 * minor version it requires checks api->struct_size first (GUST_API_HAS). */
#ifndef GUST_API_H
#define GUST_API_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"
#include "gust/msg.h"
#include "gust/schema.h"

enum gust_log_level { GUST_LOG_ERROR = 0, GUST_LOG_WARN, GUST_LOG_INFO, GUST_LOG_DEBUG };

/* Host-owned handle of one plugin instance (a unit of host.conf). */
struct gust_instance;

/* Called once per publish, from a host thread: status 0 and the stream sequence when
 * the bus stored it, or a negative GUST_E* and the reason when it refused or timed out. */
typedef void (*gust_publish_done_fn)(void *ud, int status, uint64_t seq, const char *error);

/* ABI 1.4: one message for publish_msg. Fixed as it is: a later minor that needs more
 * adds another entry rather than growing it. */
struct gust_pub_msg {
    const char *subject;
    const void *data;
    size_t len;
    const char *msg_id;                /* Nats-Msg-Id, or NULL */
    const struct gust_header *headers; /* NATS headers (name, value), or NULL */
    size_t nheaders;
};

struct gust_host_api {
    uint32_t struct_size;
    /* The newest ABI this host implements. It loads plugins of abi_major.0 up to
     * abi_major.abi_minor; a plugin that could work with several minors picks the newest
     * this host offers (and may return NULL to refuse, with a log line). */
    uint16_t abi_major;
    uint16_t abi_minor;

    /* Logs with the instance's name as prefix (inst may be NULL). Thread-safe. */
    void (*log)(const struct gust_instance *inst, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    const char *(*instance_name)(const struct gust_instance *inst);

    /* Reading an instance's checked configuration by key (see gust/schema.h). ABI 1.1
     * plugins bind it instead (cfg_bind below), so a misspelt key fails to compile. */
    const char *(*cfg_str)(const struct gust_cfg *cfg, const char *key);
    int64_t (*cfg_int)(const struct gust_cfg *cfg, const char *key);
    size_t (*cfg_count)(const struct gust_cfg *cfg, const char *key);
    const char *(*cfg_item)(const struct gust_cfg *cfg, const char *key, size_t i);
    const char *(*cfg_where)(const struct gust_cfg *cfg, const char *key);

    /* Sources: publish to the durable bus. data is copied before the call returns.
     * done (may be NULL) fires once with the outcome. Returns GUST_EAGAIN when too
     * many publishes are pending: back off and retry (gust/sdk.h's source runner does).
     * Thread-safe. The host calls destroy only after every outcome of the instance's
     * publishes has been delivered (within nats { publish_timeout }), so done never runs
     * on a destroyed instance or an unloaded plugin. */
    int (*publish)(struct gust_instance *inst, const char *subject, const void *data, size_t len,
                   gust_publish_done_fn done, void *ud);

    /* ABI 1.1 */

    /* Writes the GUST_K_BOUND keys of schema (the plugin's type schema, entries key_size
     * bytes apart) from cfg into out. Call it from create; strings stay valid until
     * destroy. Returns 0 or GUST_EINVAL. gust_sdk_bind() passes key_size for you. */
    int (*cfg_bind)(const struct gust_cfg *cfg, const struct gust_schema_key *schema, size_t key_size,
                    void *out, struct gust_err *err);

    /* ABI 1.4 */

    /* publish, with a message id and headers (m and what it points to are copied before
     * the call returns). JetStream stores a repeat of m->msg_id within the event stream's
     * duplicate window once (done still says stored, with the first copy's sequence): a
     * source whose broker redelivers what it did not see committed (a Redis entry, a
     * Kafka offset) names each message after its broker identity, so a crash between
     * the PubAck and the commit stores it once. On the edge path (no bus) the id and the
     * headers are ignored. */
    int (*publish_msg)(struct gust_instance *inst, const struct gust_pub_msg *m, gust_publish_done_fn done,
                       void *ud);

    /* ABI 1.6 */

    /* The instance's current trouble in a line (a broker unreachable, credentials
     * refused), shown by /units as plugin_error with the time it began, until the plugin
     * clears it with NULL (connected again). Log it too: this is state, not history.
     * Copied; thread-safe. */
    void (*set_error)(struct gust_instance *inst, const char *text);
};

/* 1 when the host's table has the entry `field` (it may be older than the plugin's header). */
#define GUST_API_HAS(api, field)                                                                             \
    ((api)->struct_size >= offsetof(struct gust_host_api, field) + sizeof((api)->field) &&                   \
     (api)->field != NULL)

#endif
