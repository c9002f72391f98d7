/* The embedded default: a `nats-server -js` child on a free loopback port, its store
 * under the state directory, restarted if it dies, stopped with the host. */
#ifndef GUST_BUS_EMBEDDED_H
#define GUST_BUS_EMBEDDED_H

#include <stddef.h>

#include "gust/err.h"

struct gust_nats_child;

/* Starts the server and waits until it accepts connections. server_bin may be NULL
 * ("nats-server" from PATH). Fills url ("nats://127.0.0.1:PORT"). */
int gust_nats_child_start(const char *server_bin, const char *state_dir, char *url, size_t url_size,
                          struct gust_nats_child **out, struct gust_err *err);
/* Stops the server (SIGTERM, then SIGKILL after 2 s) and reaps it. NULL is a no-op. */
void gust_nats_child_stop(struct gust_nats_child *child);

#endif
