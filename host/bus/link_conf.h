/* What every connection gust opens to its NATS servers is made with: TLS, credentials,
 * keepalive and reconnection, as the nats { } block gives them. nats_opts.h turns it into
 * nats.c's options; this header stays free of nats.h, so that the layers above the bus
 * can carry the configuration without seeing NATS. */
#ifndef GUST_BUS_LINK_CONF_H
#define GUST_BUS_LINK_CONF_H

#include <stddef.h>
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

/* Reads the keys of a checked `nats { }` block (strings borrowed from it) and checks them:
 * every file exists and is readable, seeds and credentials files are well formed and the
 * JWT has not expired, an environment variable named is set, one way of authenticating,
 * TLS and the URLs agree. Errors name file:line. Runs at `gust -t` and at start. */
int gust_nats_link_conf_load(const struct gust_cfg *nats, struct gust_nats_link_conf *conf,
                             struct gust_err *err);

/* The defaults of a connection no configuration describes (a test tool's). */
void gust_nats_link_conf_defaults(struct gust_nats_link_conf *conf);

/* One attempt to connect to the servers (urls borrowed for the call) as the bus will:
 * 0 when it works or no server answers (the bus then retries in the background), else
 * GUST_ECONFIG with the cause the server gave (TLS, credentials) in err, or GUST_EAGAIN
 * for a server that misbehaved otherwise (worth another try). A start-up
 * check: nats.c 3.4.1 gives a connection up for good, without saying why, when the
 * first server it reaches refuses it. */
int gust_nats_probe(const char *const *urls, size_t n, const struct gust_nats_link_conf *conf,
                    struct gust_err *err);

#endif
