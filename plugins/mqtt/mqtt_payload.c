/* The non-JSON policy of mqtt_in. Flows take one JSON object per event (the host
 * dead-letters anything else), so that is what "JSON" means here too; `non_json wrap`
 * turns anything else into an object that carries the bytes in base64 (written with the
 * SDK's JSON output). */
#include "mqtt.h"

int mqtt_is_json_object(const void *data, size_t len)
{
    int root;
    return gust_json_scan(data, len, NULL, 0, &root) == 0 && root == GUST_JV_OBJECT;
}

char *mqtt_wrap_payload(const char *topic, size_t topic_len, const void *data, size_t len, size_t *outlen)
{
    struct gust_buf b = {0};
    /* A topic byte takes at most 6 (\u00XX). */
    int rc = gust_buf_reserve(&b, 40 + (len + 2) / 3 * 4 + topic_len * 6);

    rc = rc ? rc : gust_buf_append(&b, "{\"payload_base64\":", 18);
    rc = rc ? rc : gust_json_append_base64(&b, data, len);
    rc = rc ? rc : gust_buf_append(&b, ",\"topic\":", 9);
    /* MQTT topics are UTF-8 (the broker checks): valid JSON text once escaped. */
    rc = rc ? rc : gust_json_append_string(&b, topic, topic_len);
    rc = rc ? rc : gust_buf_append(&b, "}", 1);
    if (rc != 0) {
        gust_buf_free(&b);
        return NULL;
    }
    *outlen = b.len;
    return b.data;
}
