/* What the counting sink counts: bodies, unique ids, duplicates and latency percentiles. */
#ifndef GUST_BENCH_SINK_STATS_H
#define GUST_BENCH_SINK_STATS_H

#include <stddef.h>
#include <stdint.h>

struct sink_stats;

struct sink_stats *sink_stats_create(void);
void sink_stats_destroy(struct sink_stats *st);

/* Counts one body received at now_us (epoch microseconds). id (borrowed, may be NULL when
 * the body had none) is copied into the set of ids seen; t_us < 0 means the body had no t. */
void sink_stats_add(struct sink_stats *st, int64_t now_us, const char *id, size_t id_len,
                    int64_t t_us);

/* Counts one accepted connection, to show whether clients keep theirs alive. */
void sink_stats_connection(struct sink_stats *st);
/* Counts one request body (a batch holds several events): "bodies" against "received". */
void sink_stats_body(struct sink_stats *st);

uint64_t sink_stats_unique(const struct sink_stats *st);

/* Writes the stats as one JSON object (no newline) into buf; returns its length, or the
 * length it would need when that is >= size, like snprintf. */
int sink_stats_json(const struct sink_stats *st, char *buf, size_t size);

#endif
