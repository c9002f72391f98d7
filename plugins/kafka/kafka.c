/* The kafka plugin: `plugin kafka;` provides two types on librdkafka.
 *   kafka_in   source: topics read with a consumer group -> the bus, offsets committed
 *              after the PubAck
 *   kafka_out  sink: the bus -> a topic, idempotent producer, acked on the delivery report */
#include "kafka.h"

const struct gust_host_api *kafka_host;

static const struct gust_plugin_type types[] = {
    {
        .name = "kafka_in",
        .kind = GUST_PLUGIN_SOURCE,
        .schema = kafka_in_schema,
        .create = kafka_in_create,
        .start = kafka_in_start,
        .stop = kafka_in_stop,
        .destroy = kafka_in_destroy,
        .counters = kafka_in_counters,
    },
    {
        .name = "kafka_out",
        .kind = GUST_PLUGIN_SINK,
        .schema = kafka_out_schema,
        .create = kafka_out_create,
        .start = kafka_out_start,
        .deliver = kafka_out_deliver,
        .stop = kafka_out_stop,
        .destroy = kafka_out_destroy,
        .counters = kafka_out_counters,
        .wants_headers = 1, /* Nats-Msg-Id and the rest go on to the broker */
    },
};

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "kafka",
    .version = "0.1.0",
    .types = types,
    .ntypes = sizeof(types) / sizeof(types[0]),
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    kafka_host = api;
    return &desc;
}
