/* How every connection gust opens to its NATS servers is made: TLS, credentials,
 * keepalive and reconnection. The bus's connections, ingest's and the test tools' all
 * fill their natsOptions with gust_nats_opts_fill, so they connect the same way.
 *
 * Secrets stay in files or the environment: the configuration holds their names, and
 * the token or password is read when a connection is set up, handed to nats.c and wiped
 * from gust's own memory. Nothing here logs a secret or puts one on a command line. */
#ifndef GUST_BUS_NATS_OPTS_H
#define GUST_BUS_NATS_OPTS_H

#include <nats/nats.h>
#include <stdint.h>

#include "gust/err.h"
#include "link_conf.h"

/* nats.c's last error on the calling thread, without the "(conn.c:733): " it starts
 * with, or NULL. */
const char *gust_nats_last_error(void);

/* Reconnection delays: the first wait, doubling with each failed attempt and with each
 * connection that dropped within 10 s of being made, up to the longest wait (plus up to
 * a quarter of jitter). Logs a new reason for failing once, and a flapping connection.
 * Not thread-safe: one owner. */
struct gust_nats_backoff {
    char name[32]; /* the link, in the log */
    int64_t base_ms, max_ms;
    int64_t connected_ms;
    int flaps;
    char last_error[256];
};
void gust_nats_backoff_init(struct gust_nats_backoff *b, const struct gust_nats_link_conf *conf,
                            const char *link);
/* The wait before attempt number attempts + 1 (attempts: those failed in a row, 1 for
 * the first after a connection was lost); why: the last failure's reason, or NULL. */
int64_t gust_nats_backoff_delay(struct gust_nats_backoff *b, int attempts, const char *why);
/* A connection was made: the next loss is judged against now. */
void gust_nats_backoff_connected(struct gust_nats_backoff *b);


/* Fills opts (created by the caller, who also sets the servers and callbacks) from conf.
 * link names the connection in the log ("bus", "ingest"), borrowed for the process's
 * life. Reads the token or password now. */
int gust_nats_opts_fill(natsOptions *opts, const struct gust_nats_link_conf *conf, const char *link,
                        struct gust_err *err);

#endif
