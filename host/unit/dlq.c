#include "dlq.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/json_out.h"

int gust_dlq_envelope(struct gust_buf *out, const char *unit, const struct gust_msg *m, const char *error)
{
    return gust_dlq_envelope_as(out, unit, m, error, 0);
}

int gust_dlq_envelope_as(struct gust_buf *out, const char *unit, const struct gust_msg *m, const char *error,
                         int omit_payload)
{
    char dead_at[GUST_RFC3339_SIZE], first_seen[GUST_RFC3339_SIZE];
    gust_rfc3339_ms(gust_clock_wall_ms(), dead_at);
    gust_rfc3339_ms(m->stored_ns / 1000000, first_seen);
    int rc = gust_buf_append(out, "{\"unit\":", 8);
    rc = rc ? rc : gust_json_append_string(out, unit, strlen(unit));
    rc = rc ? rc : gust_buf_append(out, ",\"original_subject\":", 20);
    rc = rc ? rc : gust_json_append_string(out, m->subject, strlen(m->subject));
    rc = rc ? rc : gust_buf_printf(out, ",\"stream_seq\":%" PRIu64 ",\"attempts\":%u", m->stream_seq, m->attempt);
    if (m->stored_ns > 0) {
        rc = rc ? rc : gust_buf_printf(out, ",\"first_seen\":\"%s\"", first_seen);
    }
    rc = rc ? rc : gust_buf_printf(out, ",\"dead_at\":\"%s\",\"error\":", dead_at);
    rc = rc ? rc : gust_json_append_string(out, error, strlen(error));
    if (omit_payload) {
        rc = rc ? rc : gust_buf_printf(out, ",\"payload_omitted\":%zu", m->len);
    } else if (gust_utf8_valid(m->data, m->len)) {
        rc = rc ? rc : gust_buf_append(out, ",\"payload\":", 11);
        rc = rc ? rc : gust_json_append_string(out, m->data, m->len);
    } else {
        rc = rc ? rc : gust_buf_append(out, ",\"payload_base64\":", 18);
        rc = rc ? rc : gust_json_append_base64(out, m->data, m->len);
    }
    return rc ? rc : gust_buf_append(out, "}", 1);
}
