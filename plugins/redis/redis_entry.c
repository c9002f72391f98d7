/* A stream entry -> the message's JSON.
 *
 * The entry's field `field` (default "data") holds the message; an entry without it is
 * taken whole, as a JSON object of its fields (values as strings). Flows take one JSON
 * object per event, so anything else follows non_json as in mqtt_in: reject (counted,
 * logged, acknowledged: never published), wrap ({"payload_base64","stream","id"}) or pass
 * (unchanged; the unit that reads it dead-letters it). */
#include <string.h>

#include "redis.h"

static int is_object(const char *data, size_t len)
{
    char why[200];
    return gust_json_check(data, len, NULL, NULL, why, sizeof(why)) == GUST_JSON_OBJECT;
}

static int wrap(const struct redis_entry *e, const char *stream, const char *data, size_t len,
                struct gust_buf *out)
{
    int rc = gust_buf_append(out, "{\"payload_base64\":", 18);
    rc = rc ? rc : gust_json_append_base64(out, (const unsigned char *)data, len);
    rc = rc ? rc : gust_buf_append(out, ",\"stream\":", 10);
    rc = rc ? rc : gust_json_append_string(out, stream, strlen(stream));
    rc = rc ? rc : gust_buf_append(out, ",\"id\":", 6);
    rc = rc ? rc : gust_json_append_string(out, e->id, strlen(e->id));
    rc = rc ? rc : gust_buf_append(out, "}", 1);
    return rc ? GUST_ENOMEM : 0;
}

/* Every field as a string member; 1 when a name or value is not UTF-8 (no JSON text). */
static int whole(const struct redis_entry *e, struct gust_buf *out)
{
    int rc = gust_buf_append(out, "{", 1);
    for (size_t i = 0; rc == 0 && i < e->nfields; i++) {
        if (!gust_utf8_valid(e->names[i], e->name_lens[i]) ||
            !gust_utf8_valid(e->values[i], e->value_lens[i])) {
            return 1;
        }
        rc = i > 0 ? gust_buf_append(out, ",", 1) : 0;
        rc = rc ? rc : gust_json_append_string(out, e->names[i], e->name_lens[i]);
        rc = rc ? rc : gust_buf_append(out, ":", 1);
        rc = rc ? rc : gust_json_append_string(out, e->values[i], e->value_lens[i]);
    }
    rc = rc ? rc : gust_buf_append(out, "}", 1);
    return rc ? GUST_ENOMEM : 0;
}

int redis_entry_json(const struct redis_entry *e, const char *field, const char *stream, int non_json,
                     struct gust_buf *out)
{
    size_t flen = strlen(field);
    out->len = 0;
    for (size_t i = 0; i < e->nfields; i++) {
        if (e->name_lens[i] != flen || memcmp(e->names[i], field, flen) != 0) {
            continue;
        }
        const char *v = e->values[i];
        size_t vl = e->value_lens[i];
        if (non_json == REDIS_NJ_PASS || is_object(v, vl)) {
            return gust_buf_append(out, v, vl) ? GUST_ENOMEM : 0;
        }
        return non_json == REDIS_NJ_WRAP ? wrap(e, stream, v, vl, out) : 1;
    }
    int rc = whole(e, out);
    if (rc != 1) {
        return rc;
    }
    /* A field that is not UTF-8: the entry cannot be a JSON object of strings. */
    if (non_json == REDIS_NJ_REJECT) {
        return 1;
    }
    out->len = 0;
    /* wrap and pass: the bytes of every field cannot pass as they are; wrap the first
     * value so nothing is published that is not JSON. */
    return wrap(e, stream, e->nfields ? e->values[0] : "", e->nfields ? e->value_lens[0] : 0, out);
}
