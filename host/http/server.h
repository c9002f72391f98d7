/* The h2o front: one event loop on the main thread serving every route. */
#ifndef GUST_HTTP_SERVER_H
#define GUST_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"
#include "listen_conf.h"

struct gust_bus;
struct gust_cfg;
struct gust_units;
struct gust_leases;
struct gust_nodes;
struct gust_http;
struct gust_webhook_conf;

/* What a reload may change in the front: security and limits (see the README's HTTP
 * section). Strings are borrowed for the call that takes them. */
struct gust_http_settings {
    size_t max_body;               /* bytes */
    size_t max_depth;              /* ingest: arrays and objects nested at most (0: no limit) */
    const char *admin_token_file;  /* NULL, or a file holding the admin bearer token */
    const char *admin_token_env;   /* NULL, or the environment variable holding it */
    const char *admin_read_token_file; /* a read-only admin token: reads only (admin_gate.c) */
    const char *admin_read_token_env;
    const char *ingest_token_file; /* the same for POST /ingest (none: ingest is open) */
    const char *ingest_token_env;
    int metrics_public;            /* 1: /metrics needs no token even with an admin token */
    const char *const *trusted_proxies; /* addresses or address/bits */
    size_t ntrusted_proxies;
    int64_t client_timeout_ms;     /* a request's headers and body must arrive within it;
                                      also the keep-alive idle timeout */
    size_t max_connections;        /* beyond it new connections are closed at accept */
    size_t max_header;             /* request line + headers, bytes (431 beyond) */
    int64_t drain_ms;              /* how long shutdown waits for requests in flight */
    int64_t call_timeout_ms;       /* POST /call (and `respond flow`) waits this long for a reply */
    const char *listen;            /* the listen address as written: its host is a name the
                                      admin routes answer to; loopback or not */
    int listen_ssl;                /* `listen ADDR ssl;` */
    const char *const *server_names; /* more names the admin routes answer to (origin.h) */
    size_t nserver_names;
    const struct gust_webhook_conf *webhooks; /* the webhook blocks (../core/config.h) */
    size_t nwebhooks;
};

/* settings made ready to serve: token files read, proxies parsed. */
struct gust_http_policy;

/* Off the loop (it reads files): errors name the key. */
int gust_http_policy_create(const struct gust_http_settings *s, struct gust_http_policy **out, struct gust_err *err);
/* NULL is a no-op. */
void gust_http_policy_destroy(struct gust_http_policy *p);
/* Thread-safe: p (owned from here on) serves every request handled from now on; the
 * policy it replaces is freed on the loop. */
void gust_http_set_policy(struct gust_http *http, struct gust_http_policy *p);

struct gust_http_conf {
    struct gust_listen_conf listen; /* checked by gust_listen_conf_load */
    const char *base_path; /* "/" or "/gust" */
    struct gust_units *units; /* borrowed: shown by /units and /metrics */
    /* Borrowed, shown as the "cluster" of /units and /topology: the leases (NULL: none)
     * and the node directory (NULL without `cluster on;`). */
    struct gust_leases *leases;
    struct gust_nodes *nodes;
    /* POST /reload: asks the host for a reload. Thread-safe, returns at once (the
     * reload runs on the host's own thread). */
    void (*request_reload)(void *ud);
    void *reload_ud;
    /* Before that, on the admin worker (it may block): 0 to go ahead, or the HTTP status
     * to refuse with and why. NULL: every reload goes ahead. */
    int (*check_reload)(void *ud, int force, char *why, size_t size);

    struct gust_http_settings settings;
    /* What every event subject starts with ("ev." of `subjects ev.>;`): ingest
     * publishes POST /ingest/<suffix> to <prefix><suffix>. */
    const char *subject_prefix;

    /* host.conf: POST /replay reads the unit's script and settings from it. NULL: no
     * replay. */
    const char *config_path;

    /* The dead-letter stream, for /dlq. */
    const char *dlq_stream;   /* "GUST_DLQ" */
    const char *dlq_subjects; /* "dlq.>" */
};

/* Binds the listener. bus is borrowed and must outlive the server. */
int gust_http_create(const struct gust_http_conf *conf, struct gust_bus *bus, struct gust_http **out,
                     struct gust_err *err);
/* Runs the loop until a stop was requested and the requests in flight are answered
 * (or the policy's drain_ms passed). */
void gust_http_run(struct gust_http *http);
/* Thread-safe and async-signal-unsafe: called from the signal thread. Stops
 * accepting and makes gust_http_run return once drained. */
void gust_http_request_stop(struct gust_http *http);
/* After the bus is gone: frees what the last publishes left and closes the listener.
 * The h2o loop itself lives until the process exits. NULL is a no-op. */
void gust_http_close(struct gust_http *http);

#endif
