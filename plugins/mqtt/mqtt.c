/* The mqtt plugin: `plugin mqtt;` provides two types.
 *   mqtt_in   source: MQTT topics -> the bus, PUBACK after the PubAck (mqtt_in.c)
 *   mqtt_out  sink: the bus -> an MQTT topic, acked after the PUBACK (mqtt_out.c) */
#include <mosquitto.h>
#include <openssl/ssl.h>

#include "mqtt.h"

const struct gust_host_api *mqtt_host;

static int mqtt_init(const struct gust_host_api *api, struct gust_err *err)
{
    (void)api;
    int rc = mosquitto_lib_init();
    if (rc != MOSQ_ERR_SUCCESS) {
        return gust_err_set(err, GUST_EIO, "mqtt: libmosquitto: %s", mosquitto_strerror(rc));
    }
    /* TLS of mqtt_in's own client (gust/sock.h); libmosquitto (mqtt_out's client) has
     * initialised OpenSSL the same way, so this is a no-op after it, kept for clarity. */
    OPENSSL_init_ssl(0, NULL);
    return 0;
}

static void mqtt_fini(void)
{
    mosquitto_lib_cleanup();
}

static const struct gust_plugin_type types[] = {
    {
        .name = "mqtt_in",
        .kind = GUST_PLUGIN_SOURCE,
        .schema = mqtt_in_schema,
        .create = mqtt_in_create,
        .start = mqtt_in_start,
        .stop = mqtt_in_stop,
        .destroy = mqtt_in_destroy,
    },
    {
        .name = "mqtt_out",
        .kind = GUST_PLUGIN_SINK,
        .schema = mqtt_out_schema,
        .create = mqtt_out_create,
        .start = mqtt_out_start,
        .deliver = mqtt_out_deliver,
        .stop = mqtt_out_stop,
        .destroy = mqtt_out_destroy,
    },
};

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "mqtt",
    .version = "0.1.0",
    .types = types,
    .ntypes = sizeof(types) / sizeof(types[0]),
    .init = mqtt_init,
    .fini = mqtt_fini,
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    mqtt_host = api;
    return &desc;
}
