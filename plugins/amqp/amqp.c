/* The amqp plugin: `plugin amqp;` provides two types on rabbitmq-c.
 *   amqp_in   source: a queue consumed -> the bus, basic.ack after the PubAck
 *   amqp_out  sink: the bus -> basic.publish, acked once the broker confirmed it */
#include <amqp_ssl_socket.h>

#include "amqp_plugin.h"

const struct gust_host_api *amqp_host;

static const struct gust_plugin_type types[] = {
    {
        .name = "amqp_in",
        .kind = GUST_PLUGIN_SOURCE,
        .schema = amqp_in_schema,
        .create = amqp_in_create,
        .start = amqp_in_start,
        .stop = amqp_in_stop,
        .destroy = amqp_in_destroy,
        .counters = amqp_in_counters,
    },
    {
        .name = "amqp_out",
        .kind = GUST_PLUGIN_SINK,
        .schema = amqp_out_schema,
        .create = amqp_out_create,
        .deliver = amqp_out_deliver,
        .stop = amqp_out_stop,
        .destroy = amqp_out_destroy,
        .counters = amqp_out_counters,
        .wants_headers = 1, /* Nats-Msg-Id and the rest go on to the broker */
    },
};

atomic_int amqp_tls_used;

/* rabbitmq-c sets up its OpenSSL state (a BIO method, a lock array) at the first TLS
 * socket and keeps it until amqp_uninitialize_ssl_library, which must not run when that
 * never happened (it would destroy a lock array it never made). */
static void fini(void)
{
    if (atomic_load(&amqp_tls_used)) {
        amqp_uninitialize_ssl_library();
    }
}

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "amqp",
    .version = "0.1.0",
    .types = types,
    .ntypes = sizeof(types) / sizeof(types[0]),
    .fini = fini,
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    amqp_host = api;
    return &desc;
}
