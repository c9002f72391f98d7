/* The edge path: a flow or detect unit fed straight from a source instance in memory,
 * without JetStream. At most once, on purpose: what is in a queue when the process
 * dies is gone, and a full queue drops (and counts) what comes in.
 *
 *   source sensors   { use mqtt_in; ... qos 0; }
 *   flow   telemetry { script scripts/telemetry.lua; edge sensors; edge_queue 65536; }
 *
 * The source's api->publish hands each message to the queue of every unit fed by it
 * (gust_edge_set_publish) and reports it done at once. The unit's thread takes batches
 * from its queue (gust_edge_take), runs the usual handler, publishes its emits to the
 * bus with the barrier, then gives the slots back (gust_edge_release). */
#ifndef GUST_UNIT_EDGE_H
#define GUST_UNIT_EDGE_H

#include <stddef.h>
#include <stdint.h>

#include "../bus/port.h"
#include "gust/err.h"
#include "gust/plugin.h"

struct gust_edge;

/* A bounded queue of `capacity` messages for unit `unit`, fed by source unit `source`
 * (both copied, for /units and logs). */
int gust_edge_create(const char *unit, const char *source, size_t capacity, struct gust_edge **out,
                     struct gust_err *err);
void gust_edge_destroy(struct gust_edge *e);

/* Producer side (any thread): copies the message in; 0, or GUST_EAGAIN when the queue is
 * full (the message is dropped and counted). */
int gust_edge_push(struct gust_edge *e, const char *subject, const void *data, size_t len);

/* Consumer side (the unit's thread only): waits up to wait_ms for messages, then fills
 * msgs[0..n) with up to max of them, oldest first, and returns n. They stay valid (and
 * their slots taken) until gust_edge_release(e, n). */
size_t gust_edge_take(struct gust_edge *e, struct gust_msg *msgs, size_t max, int wait_ms);
void gust_edge_release(struct gust_edge *e, size_t n);
/* Wakes a consumer waiting in gust_edge_take. */
void gust_edge_wake(struct gust_edge *e);

/* The queue as its unit's feed (port.h), which owns e from here on: closing the feed
 * destroys the queue. Once the unit is asked to stop it no longer waits, and handles
 * what is queued (at most a queue's worth) before it stops. NULL when out of memory
 * (e is then destroyed). */
struct gust_feed *gust_edge_feed(struct gust_edge *e);

const char *gust_edge_source(const struct gust_edge *e);
size_t gust_edge_capacity(const struct gust_edge *e);
size_t gust_edge_depth(struct gust_edge *e);
uint64_t gust_edge_dropped(const struct gust_edge *e);
uint64_t gust_edge_received(const struct gust_edge *e);

/* The units one source instance feeds. The queues are borrowed (their units own them,
 * and a source is stopped before its units). */
struct gust_edge_set {
    struct gust_edge **v;
    size_t n;
};

/* What api->publish does for a source with edge units: push into each queue, then
 * done(ud, 0, 0, NULL) at once, kept or dropped (there is nothing to wait for). */
int gust_edge_set_publish(struct gust_edge_set *set, const char *subject, const void *data, size_t len,
                          gust_publish_done_fn done, void *ud);

#endif
