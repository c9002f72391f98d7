/* A Kafka message -> the event's JSON and its NATS headers.
 *
 * Flows take one JSON object per event, so a value that is not one follows non_json as
 * in mqtt_in: reject (counted, logged, committed: never published), wrap
 * ({"payload_base64","topic","partition","offset"}) or pass (unchanged; the unit that
 * reads it dead-letters it). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kafka.h"

static int is_object(const void *data, size_t len)
{
    char why[200];
    return gust_json_check(data, len, NULL, NULL, why, sizeof(why)) == GUST_JSON_OBJECT;
}

int kafka_payload_json(const rd_kafka_message_t *m, int non_json, struct gust_buf *out)
{
    const char *v = m->payload ? m->payload : "";
    size_t len = m->payload ? m->len : 0;
    const char *topic = rd_kafka_topic_name(m->rkt);

    out->len = 0;
    if (non_json == KAFKA_NJ_PASS || is_object(v, len)) {
        return gust_buf_append(out, v, len) ? GUST_ENOMEM : 0;
    }
    if (non_json == KAFKA_NJ_REJECT) {
        return 1;
    }
    int rc = gust_buf_append(out, "{\"payload_base64\":", 18);
    rc = rc ? rc : gust_json_append_base64(out, (const unsigned char *)v, len);
    rc = rc ? rc : gust_buf_append(out, ",\"topic\":", 9);
    rc = rc ? rc : gust_json_append_string(out, topic, strlen(topic));
    rc = rc ? rc : gust_buf_printf(out, ",\"partition\":%" PRId32 ",\"offset\":%" PRId64 "}", m->partition,
                                   (int64_t)m->offset);
    return rc ? GUST_ENOMEM : 0;
}

int kafka_header_ok(const char *name, const void *value, size_t len)
{
    if (!name[0]) {
        return 0;
    }
    for (const char *c = name; *c; c++) {
        if (*c <= ' ' || *c >= 127 || *c == ':') {
            return 0;
        }
    }
    if (!value) {
        return 1; /* a null value: an empty one, which the host leaves out of the NATS message */
    }
    return gust_utf8_valid(value, len) && !memchr(value, '\r', len) && !memchr(value, '\n', len) &&
           !memchr(value, '\0', len);
}

/* Appends name and value (NUL-terminated each) to store; their offsets in pos. */
static int put(struct gust_buf *store, size_t pos[2], const char *name, const void *value, size_t len)
{
    pos[0] = store->len;
    if (gust_buf_append(store, name, strlen(name) + 1) != 0) {
        return -1;
    }
    pos[1] = store->len;
    if ((len && gust_buf_append(store, value, len) != 0) || gust_buf_append(store, "", 1) != 0) {
        return -1;
    }
    return 0;
}

size_t kafka_payload_headers(const rd_kafka_message_t *m, const rd_kafka_headers_t *hdrs, struct gust_buf *store,
                             struct gust_header *out, size_t *skipped)
{
    size_t pos[KAFKA_HEADERS_MAX][2];
    size_t n = 0;
    char num[32];
    const char *topic = rd_kafka_topic_name(m->rkt);

    store->len = 0;
    *skipped = 0;
    if (put(store, pos[n++], "Kafka-Topic", topic, strlen(topic)) != 0) {
        return 0;
    }
    snprintf(num, sizeof(num), "%" PRId32, m->partition);
    if (put(store, pos[n++], "Kafka-Partition", num, strlen(num)) != 0) {
        return 0;
    }
    snprintf(num, sizeof(num), "%" PRId64, (int64_t)m->offset);
    if (put(store, pos[n++], "Kafka-Offset", num, strlen(num)) != 0) {
        return 0;
    }
    if (m->key && m->key_len > 0 && kafka_header_ok("Kafka-Key", m->key, m->key_len)) {
        if (put(store, pos[n++], "Kafka-Key", m->key, m->key_len) != 0) {
            return 0;
        }
    }
    if (hdrs) {
        const char *name;
        const void *value;
        size_t len;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &value, &len) == RD_KAFKA_RESP_ERR_NO_ERROR;
             i++) {
            if (n >= KAFKA_HEADERS_MAX || !kafka_header_ok(name, value, len)) {
                (*skipped)++;
                continue;
            }
            if (put(store, pos[n++], name, value, value ? len : 0) != 0) {
                return 0;
            }
        }
    }
    /* The store is complete: no more reallocation, so pointers into it stay valid. */
    for (size_t i = 0; i < n; i++) {
        out[i].name = store->data + pos[i][0];
        out[i].value = store->data + pos[i][1];
    }
    return n;
}
