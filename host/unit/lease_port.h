/* Leases as the units see them: a task that runs while this process holds a key (a
 * detect unit's slice). host/cluster/lease.c is the implementation (gust_leases_port);
 * the units only know this interface. */
#ifndef GUST_UNIT_LEASE_PORT_H
#define GUST_UNIT_LEASE_PORT_H

#include <stdint.h>

#include "gust/err.h"

/* What runs while the lease is held. start and stop run on the lease manager's thread
 * (or, for stop, on the thread that detaches the task); start returns 0 or a negative
 * error (the lease is then given back and tried again later). */
struct gust_lease_task {
    int (*start)(void *ud, struct gust_err *err);
    void (*stop)(void *ud);
    void *ud;
    /* The leases of one group (a detect unit's slices: "detect.<unit>", group_size of
     * them) are spread evenly over the processes that attach to it; NULL: a lone task,
     * taken by whichever process comes first. */
    const char *group;
    uint32_t group_size;
};

struct gust_lease_port {
    void *impl;
    /* Runs task (copied) whenever this process holds key; see gust_leases_attach. */
    int (*attach)(void *impl, const char *key, const char *name, const struct gust_lease_task *task,
                  struct gust_err *err);
    /* Stops the task and forgets it; the lease stays held until it is given back. */
    void (*detach)(void *impl, const char *key);
    /* Held now, renewed recently enough that no peer can have taken it. */
    int (*holding)(void *impl, const char *key);
};

#endif
