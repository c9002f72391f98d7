/* The subjects something published to since it started, each with a count: what a
 * flow emits to (scripts declare nothing), what a source or ingest publishes. The
 * console (GET /topology) draws an arrow per subject from it and its rate from the
 * counts. Bounded: past GUST_TALLY_MAX distinct subjects the rest are only counted
 * together, so that a flow emitting to one subject per key costs no memory. */
#ifndef GUST_COMMON_TALLY_H
#define GUST_COMMON_TALLY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define GUST_TALLY_MAX 32
#define GUST_TALLY_SUBJECT 128

struct gust_tally {
    pthread_mutex_t lock;
    size_t n;
    size_t last;     /* where the last subject was found: a publisher mostly repeats it */
    uint64_t others; /* publishes to subjects past the first GUST_TALLY_MAX */
    struct {
        char subject[GUST_TALLY_SUBJECT];
        uint64_t count;
    } v[GUST_TALLY_MAX];
};

void gust_tally_init(struct gust_tally *t);
void gust_tally_destroy(struct gust_tally *t);
/* Counts n publishes to subject (borrowed). Any thread. */
void gust_tally_add(struct gust_tally *t, const char *subject, uint64_t n);
/* Calls fn on each subject with its count, under the tally's lock (fn must be quick and
 * not call back). Returns the count of the subjects not kept. */
uint64_t gust_tally_each(struct gust_tally *t, void (*fn)(void *ud, const char *subject, uint64_t count),
                         void *ud);

#endif
