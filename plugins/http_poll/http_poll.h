/* http_poll internals shared by its files. Nothing here is exported from the .so.
 *
 *   http_poll.c        the descriptor, the instance, one poll: fetch, check, publish
 *   http_poll_conf.c   keys, URL checks, request headers and the secrets they hold
 *   http_poll_fetch.c  one GET with libcurl's multi interface, interruptible by stop
 * The schedule, publishing with back-pressure and the JSON helpers come from libgust-sdk. */
#ifndef GUST_HTTP_POLL_H
#define GUST_HTTP_POLL_H

#include <stddef.h>
#include <stdint.h>

#include "gust/plugin.h"
#include "gust/sdk.h"
#include "gust/source.h"

struct curl_slist;

/* The keys as written, bound by http_poll_schema (strings borrowed from the cfg, which
 * outlives the instance). */
struct http_poll_keys {
    const char *url;
    const char *subject;
    int64_t interval;
    int64_t timeout;
    struct gust_list header;
    const char *header_file;
    const char *bearer_token_file;
    const char *bearer_token_env;
    int envelope;
    int split_array;
    int64_t max_body;
    int64_t stats_interval;
};

extern const struct gust_schema_key http_poll_schema[];

struct http_poll_conf {
    struct http_poll_keys k;
    const char *url;     /* k.url */
    char url_shown[512]; /* scheme://host[:port]/path: the user info and query may hold
                            credentials, so logs and envelopes get this form only */
    const char *subject;
    int64_t interval_ms;
    int64_t timeout_ms;
    int64_t stats_ms;
    size_t max_body;
    int envelope;
    int split_array;
    struct curl_slist *headers; /* owned, built at start (it holds the secrets); wiped when freed */
};

/* Checks every key of cfg (borrowed); reads no file (create does no I/O). */
int http_poll_conf_load(struct http_poll_conf *conf, const struct gust_host_api *api,
                        const struct gust_cfg *cfg, struct gust_err *err);
/* Builds the request headers: `header` lines, header_file, the bearer token. At start. */
int http_poll_conf_headers(struct http_poll_conf *conf, const struct gust_host_api *api,
                           const struct gust_cfg *cfg, struct gust_err *err);
/* Frees the headers, overwriting them first. */
void http_poll_conf_free(struct http_poll_conf *conf);

struct http_poll_fetch;

/* conf is borrowed and must outlive the fetcher; the runner tells it to give up (stop). */
int http_poll_fetch_create(struct http_poll_fetch **out, const struct http_poll_conf *conf,
                           struct gust_source_runner *core, struct gust_err *err);
/* One GET. Returns 0 with the HTTP status in *status and the body in *body, *len
 * (borrowed until the next call), or negative with the reason in why (no secret in it):
 * GUST_EIO connection error or timeout, GUST_EINVAL body over max_body, GUST_EAGAIN
 * stopped. */
int http_poll_fetch_get(struct http_poll_fetch *f, long *status, const char **body, size_t *len, char *why,
                        size_t why_size);
/* Makes a GET in progress return at once. Thread-safe. */
void http_poll_fetch_wake(struct http_poll_fetch *f);
void http_poll_fetch_destroy(struct http_poll_fetch *f);

#endif
