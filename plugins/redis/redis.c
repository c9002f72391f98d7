/* The redis plugin: `plugin redis;` provides two types on hiredis.
 *   redis_in   source: a stream read with a consumer group -> the bus, XACK after the PubAck
 *   redis_out  sink: the bus -> XADD to a stream, acked once Redis answered */
#include "redis.h"

const struct gust_host_api *redis_host;

static const struct gust_plugin_type types[] = {
    {
        .name = "redis_in",
        .kind = GUST_PLUGIN_SOURCE,
        .schema = redis_in_schema,
        .create = redis_in_create,
        .start = redis_in_start,
        .stop = redis_in_stop,
        .destroy = redis_in_destroy,
        .counters = redis_in_counters,
    },
    {
        .name = "redis_out",
        .kind = GUST_PLUGIN_SINK,
        .schema = redis_out_schema,
        .create = redis_out_create,
        .deliver = redis_out_deliver,
        .stop = redis_out_stop,
        .destroy = redis_out_destroy,
        .counters = redis_out_counters,
    },
};

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "redis",
    .version = "0.1.0",
    .types = types,
    .ntypes = sizeof(types) / sizeof(types[0]),
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    redis_host = api;
    return &desc;
}
