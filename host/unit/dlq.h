/* The dead-letter envelope: what a message that could not be handled becomes. */
#ifndef GUST_UNIT_DLQ_H
#define GUST_UNIT_DLQ_H

#include <stdint.h>

#include "../common/buf.h"
#include "gust/plugin.h"

/* Appends {unit, original_subject, stream_seq, attempts, first_seen, dead_at, error,
 * payload} to out. payload is the original body as a JSON string, or payload_base64
 * when it is not valid UTF-8, so a replay restores it byte for byte. first_seen is
 * when the stream stored the message. */
int gust_dlq_envelope(struct gust_buf *out, const char *unit, const struct gust_msg *m, const char *error);
/* The same; with omit_payload, "payload_omitted": <its size in bytes> instead of the
 * payload (an envelope the server would refuse as too large: the message stays in the
 * stream at stream_seq until it is removed). */
int gust_dlq_envelope_as(struct gust_buf *out, const char *unit, const struct gust_msg *m, const char *error,
                         int omit_payload);

#endif
