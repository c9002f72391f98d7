/* Shadow replay: a flow unit's current script and a candidate, run side by side over
 * stored traffic of the unit's source, so that a change can be seen on real events
 * before it goes live (`gust replay`, POST /replay).
 *
 * The events are read through an ephemeral ordered consumer (the unit's durable
 * consumer is untouched) from the unit's stream. Nothing is published and no state is
 * written: each side's state reads see the live bucket, and what a side writes stays
 * in memory, for that side's later events. Both sides run the events in stream order,
 * in batches as a unit does (attempt 1, the unit's name in meta.unit), with the unit's
 * lua_path, tables and timeout; their log lines are dropped.
 *
 * An input is identical when both sides emit the same (subjects, headers, and payloads
 * compared as JSON: numbers by their text, strings byte for byte, members in any
 * order), or when both fail; otherwise it differs. Blocking (bus calls): not on an
 * event loop. */
#ifndef GUST_CORE_REPLAY_H
#define GUST_CORE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "../bus/bus.h"
#include "../common/buf.h"
#include "../flow/tables.h"
#include "config.h"

#define GUST_REPLAY_DEFAULT_LAST 1000

struct gust_replay_diff {
    uint64_t seq;
    const char *subject;
    const char *what; /* the first difference: "emit 1: payload differs at .country" */
    const char *json; /* the whole record, one JSON object (no newline): seq, subject,
                         difference, current and candidate ({error, emits}) */
    size_t len;
    const char *text; /* the same for people: a heading, then each side's emits */
};

struct gust_replay_opts {
    const struct gust_config *config; /* borrowed, as are all of these */
    struct gust_tables *tables;       /* the configuration's lookup tables */
    struct gust_bus *bus;
    const char *unit; /* a flow unit of config */
    const char *candidate_path; /* the candidate script (with candidate_text: its name) */
    const char *candidate_text; /* NULL: read candidate_path */
    size_t candidate_len;
    /* Which events, one of: the last N of the source (the default, GUST_REPLAY_DEFAULT_LAST),
     * those stored since since_ms (ms since the epoch), those from from_seq on. */
    uint64_t last;
    int64_t since_ms;
    uint64_t from_seq;
    /* Called for every input that differs, in stream order. NULL: counted only. */
    void (*on_diff)(void *ud, const struct gust_replay_diff *d);
    void *ud;
};

struct gust_replay_summary {
    char unit[80];
    char source[256];
    uint64_t first_seq, last_seq; /* of the inputs read; 0 when there were none */
    uint64_t inputs, identical, differing;
    uint64_t errors_current, errors_candidate; /* inputs each side failed on */
};

/* Runs the replay. Returns 0 with *out filled (whatever the differences), or an error:
 * GUST_ENOTFOUND (no such flow unit), GUST_ECONFIG (a script that does not load: the
 * message names it, or a unit whose input is not stored), GUST_EAGAIN / GUST_EIO (the
 * bus), with err filled. */
int gust_replay_run(const struct gust_replay_opts *o, struct gust_replay_summary *out, struct gust_err *err);

/* The summary as a JSON object: unit, source, from_seq, to_seq, inputs, identical,
 * differing, errors {current, candidate}. */
int gust_replay_summary_json(const struct gust_replay_summary *s, struct gust_buf *out);

/* "2026-11-29T23:49:03Z" (RFC 3339) or a duration before now ("10m", "2h"): into *ms
 * since the epoch. 0, or -1 when it is neither. */
int gust_replay_parse_since(const char *s, int64_t *ms);

#endif
