/* Leases: at most one process of a cluster runs each singleton task (a source, a slice
 * of a detect unit).
 *
 * Several gust processes with the same host.conf on one NATS share the units' durable
 * consumers, but a timer or a poller must run once, not once per process. Each such
 * source holds a lease, a key of KV bucket GUST_LEASES whose value names the holder and
 * the time it expires ({"holder": "...", "expires_ms": <unix ms>}: nats-server 2.9 has
 * no per-key TTL). A process takes a free or expired lease by compare-and-set, renews
 * it by compare-and-set at a third of the TTL, and stops the source at once when a
 * renewal fails. On a clean stop it writes an expired value, again by compare-and-set,
 * so a waiting peer takes over at its next poll instead of after the TTL.
 *
 * One manager per process, with its own thread (nats.c's KV calls block). Tasks are
 * attached by name; a reload detaches the old generation's task and attaches the new
 * one's under the same name without letting the lease go. */
#ifndef GUST_CLUSTER_LEASE_H
#define GUST_CLUSTER_LEASE_H

#include <stdint.h>

#include "../common/buf.h"
#include "../unit/lease_port.h" /* struct gust_lease_task */
#include "gust/err.h"

struct gust_bus;

struct gust_lease_conf {
    const char *bucket; /* "GUST_LEASES" */
    int64_t ttl_ms;     /* a holder that stops renewing loses the lease after this */
    int64_t poll_ms;    /* how often a process without the lease looks at it */
    int replicas;       /* of the bucket's stream */
    const char *holder; /* this process's name in the lease values; NULL: host:pid */
};


struct gust_leases;

/* No I/O: the bucket is made when the first task is attached. bus is borrowed. */
int gust_leases_create(const struct gust_lease_conf *conf, struct gust_bus *bus, struct gust_leases **out,
                       struct gust_err *err);
/* Stops every task and gives back every lease. NULL is a no-op. */
void gust_leases_destroy(struct gust_leases *l);

/* Runs task (copied) whenever this process holds the lease of key `key` ("source.tick",
 * "detect.lateral.3"; copied), which /units and the log call `name`. When the lease is
 * free now, the task starts before this returns, and its start error is returned (the
 * task is then not attached); later starts that fail are logged and retried. */
int gust_leases_attach(struct gust_leases *l, const char *key, const char *name, const struct gust_lease_task *task,
                       struct gust_err *err);
/* Stops the task of `key` if it runs, and forgets it; the lease itself stays held
 * until gust_leases_prune, so a reload's new task takes over without a gap. */
void gust_leases_detach(struct gust_leases *l, const char *key);
/* Whether this process holds lease `key` now, renewed recently enough that no peer can
 * have taken it: what a task checks before it writes something only the holder may. */
int gust_leases_holding(struct gust_leases *l, const char *key);
/* Gives back the leases that have no task attached (their source left the config). */
void gust_leases_prune(struct gust_leases *l);

/* The leases as the units' interface (lease_port.h); l is borrowed. */
struct gust_lease_port gust_leases_port(struct gust_leases *l);

/* This process's name in the lease values (node_name, or host:pid). */
const char *gust_leases_self(const struct gust_leases *l);

/* The members "self": "...", "leases": [{"name", "held", "running", "holder",
 * "expires_ms"}] of the caller's object (/units' "cluster"), the holder as last seen in
 * the bucket. */
void gust_leases_render_fields(struct gust_leases *l, struct gust_buf *out);

#endif
