/* The last events of each unit, in memory, for GET /events and the status page.
 *
 * One ring of GUST_RECENT_EVENTS entries per unit name, allocated when the unit first
 * records and kept for the life of the process (so a unit restarted by a reload keeps
 * its history). Recording copies at most a few KiB per event (payloads and emits
 * truncated) into its slot's own block, under a lock taken once per batch; a slot's
 * block grows only when an event needs more than the slot's earlier ones did. The
 * unit's thread writes, the HTTP thread reads. */
#ifndef GUST_UNIT_RECENT_H
#define GUST_UNIT_RECENT_H

#include <stdint.h>

#include "../common/buf.h"
#include "unit.h"

#define GUST_RECENT_EVENTS 50
#define GUST_RECENT_LOGS 100

/* What became of a message, as /events shows it. */
enum gust_fate {
    GUST_FATE_OK = 0,         /* handled; its emits stored; acked */
    GUST_FATE_RETRY,          /* failed; redelivered later */
    GUST_FATE_WAIT,           /* the far end was unavailable; redelivered later */
    GUST_FATE_DEAD,           /* dead-lettered */
    GUST_FATE_PUBLISH_FAILED, /* an emit or its dead letter was not stored; redelivered */
};

struct gust_recent;

/* The ring of unit, created on first use (NULL only when out of memory). Thread-safe. */
struct gust_recent *gust_recent_get(const char *unit);
/* The ring of unit, or NULL when it never recorded anything. Thread-safe. */
struct gust_recent *gust_recent_find(const char *unit);
/* Records the last messages of a finished batch: fate[i] (enum gust_fate) for msgs[i],
 * with its error and emits as b holds them. r NULL is a no-op. */
void gust_recent_record(struct gust_recent *r, const struct gust_batch *b, const uint8_t *fate);
/* Keeps a line a flow logged (level: enum gust_log_level; text: UTF-8, len bytes, cut
 * to a few hundred) while handling message seq, attempt (0, 0: outside any message).
 * The last GUST_RECENT_LOGS lines are kept; /events shows each with its event.
 * r NULL is a no-op. Thread-safe. */
void gust_recent_log(struct gust_recent *r, int level, uint64_t seq, uint32_t attempt, const char *text,
                     size_t len);
/* Counts lines a unit's log rate limit dropped. */
void gust_recent_log_dropped(struct gust_recent *r, uint64_t n);
/* The lines logged (kept) and dropped so far; 0, 0 for r NULL. */
void gust_recent_log_counts(struct gust_recent *r, uint64_t *lines, uint64_t *dropped);
/* Appends a JSON array of the ring's events, newest first:
 * [{seq, subject, attempt, at, outcome, error, payload | payload_base64,
 *   payload_bytes, truncated, emits: [{subject, payload | payload_base64,
 *   payload_bytes, truncated}], emits_total, logs: [{level, at, text}]}]. */
int gust_recent_render(struct gust_recent *r, struct gust_buf *out);

#endif
