/* The node directory: with `cluster on;` each process keeps an entry `node.<name>` in the
 * cluster's bucket saying which units it runs (a digest: core/config_digest.h) and until
 * when:
 * {"holder": "...", "instance", "host", "pid", "config": "<digest>", "expires_ms": <unix
 * ms>} (cluster/bucket.h; one key per process: node.<name>.<instance>), rewritten at a third
 * of the lease TTL and deleted on a clean stop, so a crashed node drops out after the
 * TTL. Peers read the directory to tell whether they all run the same units: the
 * split-brain guard (core/guard.h), start-up and reload warnings, and /units. */
#ifndef GUST_CLUSTER_NODES_H
#define GUST_CLUSTER_NODES_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "gust/err.h"

#define GUST_DIGEST_LEN 16 /* hex digits of a node's digest of its units */

struct gust_bus;

struct gust_nodes_conf {
    const char *bucket;
    int64_t ttl_ms;
    int replicas;
    const char *self; /* this process's name, as in the leases */
};

struct gust_node {
    char name[128];
    char config[GUST_DIGEST_LEN + 1];
    char host[64]; /* where it runs, as it says */
    long pid;
};

#define GUST_NODES_MAX 64 /* peers read; a larger cluster is cut to these */

struct gust_nodes;

/* No I/O until the first gust_nodes_advertise. bus is borrowed. */
int gust_nodes_create(const struct gust_nodes_conf *conf, struct gust_bus *bus, struct gust_nodes **out,
                      struct gust_err *err);
/* Deletes this process's entry. NULL is a no-op. */
void gust_nodes_destroy(struct gust_nodes *n);

/* This process runs digest from now on: writes its entry at once (blocking) and keeps
 * it fresh. Logs a warning when live peers run other units. */
void gust_nodes_advertise(struct gust_nodes *n, const char *digest);
/* The digest last advertised ("" before the first). */
void gust_nodes_running(struct gust_nodes *n, char out[GUST_DIGEST_LEN + 1]);
/* Reads the live peers' entries (not this process's), at most GUST_NODES_MAX. Blocking;
 * 0, or an error when the bucket cannot be read. */
int gust_nodes_peers(struct gust_nodes *n, struct gust_node *out, size_t *count, struct gust_err *err);
/* {"config": "<digest>", "peers": [{"name", "config"}]}: the peers as last read. */
void gust_nodes_render_json(struct gust_nodes *n, struct gust_buf *out);

#endif
