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
#include "gust/schema.h"

struct gust_nats_link_conf {
    /* TLS: to every server when on (a tls:// URL, `tls on`, tls_ca or tls_cert). */
    int tls;
    const char *tls_ca;   /* PEM CA file, or NULL: the system's */
    const char *tls_cert; /* client certificate and its key, or NULL */
    const char *tls_key;
    int tls_verify;            /* 0: accept any certificate (tests only) */
    char tls_server_name[256]; /* the name the certificate must carry; "": chain only */
    /* Authentication, at most one of: */
    const char *creds;     /* JWT + seed, as nsc writes it */
    const char *nkey_seed; /* a user seed file */
    const char *token_file;
    const char *user; /* with password_file or password_env */
    const char *password_file;
    const char *password_env;
    /* Keepalive: a PING every ping_interval_ms; a server that leaves max_pings_out of
     * them unanswered is dropped (between ping_interval x max_pings_out and ping_interval
     * x (max_pings_out + 1) after it stopped answering) and reconnected to. */
    int64_t ping_interval_ms;
    int max_pings_out;
    /* Reconnection: the first wait, doubling while attempts fail (or connections drop
     * soon after they were made), up to the second. */
    int64_t reconnect_wait_ms;
    int64_t reconnect_max_wait_ms;
};

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

/* Reads the keys of a checked `nats { }` block (strings borrowed from it) and checks them:
 * every file exists and is readable, seeds and credentials files are well formed and the
 * JWT has not expired, an environment variable named is set, one way of authenticating,
 * TLS and the URLs agree. Errors name file:line. Runs at `gust -t` and at start. */
int gust_nats_link_conf_load(const struct gust_cfg *nats, struct gust_nats_link_conf *conf,
                             struct gust_err *err);

/* The defaults of a connection no configuration describes (a test tool's). */
void gust_nats_link_conf_defaults(struct gust_nats_link_conf *conf);

/* Fills opts (created by the caller, who also sets the servers and callbacks) from conf.
 * link names the connection in the log ("bus", "ingest"), borrowed for the process's
 * life. Reads the token or password now. */
int gust_nats_opts_fill(natsOptions *opts, const struct gust_nats_link_conf *conf, const char *link,
                        struct gust_err *err);

/* One attempt to connect to the servers (urls borrowed for the call) as the bus will:
 * 0 when it works or no server answers (the bus then retries in the background), else
 * GUST_ECONFIG with the cause the server gave (TLS, credentials) in err. A start-up
 * check: nats.c 3.4.1 gives a connection up for good, without saying why, when the
 * first server it reaches refuses it. */
int gust_nats_probe(const char *const *urls, size_t n, const struct gust_nats_link_conf *conf,
                    struct gust_err *err);

#endif
