/* The non-JSON policy of mqtt_in. Flows take one JSON object per event (the host
 * dead-letters anything else), so that is what "JSON" means here too; `non_json wrap`
 * turns anything else into an object that carries the bytes in base64. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt.h"

int mqtt_is_json_object(const void *data, size_t len)
{
    int root;
    return mqtt_json_scan(data, len, NULL, 0, &root) == 0 && root == MQTT_JSON_OBJECT;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t b64(const unsigned char *in, size_t len, char *out)
{
    size_t o = 0, i = 0;

    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = B64[v >> 18];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = B64[(v >> 6) & 63];
        out[o++] = B64[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = B64[v >> 18];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = i + 1 < len ? B64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    return o;
}

char *mqtt_wrap_payload(const char *topic, size_t topic_len, const void *data, size_t len, size_t *outlen)
{
    static const char head[] = "{\"payload_base64\":\"", mid[] = "\",\"topic\":\"", tail[] = "\"}";
    /* A topic byte takes at most 6 (\u00XX). */
    size_t cap = sizeof(head) + (len + 2) / 3 * 4 + sizeof(mid) + topic_len * 6 + sizeof(tail);
    char *out = malloc(cap), *o;

    if (!out) {
        return NULL;
    }
    o = out;
    memcpy(o, head, sizeof(head) - 1);
    o += sizeof(head) - 1;
    o += b64(data, len, o);
    memcpy(o, mid, sizeof(mid) - 1);
    o += sizeof(mid) - 1;
    for (size_t i = 0; i < topic_len; i++) {
        unsigned char c = (unsigned char)topic[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20) {
            o += sprintf(o, "\\u%04x", c);
        } else {
            *o++ = (char)c; /* MQTT topics are UTF-8 (the broker checks): valid JSON text */
        }
    }
    memcpy(o, tail, sizeof(tail) - 1);
    o += sizeof(tail) - 1;
    *outlen = (size_t)(o - out);
    return out;
}
