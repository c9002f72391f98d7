/* http_poll: a source that GETs a URL every interval and publishes the JSON body.
 *
 *   source prices { use http_poll; url https://api.example.com/v1/prices; interval 30s;
 *                   subject ev.prices; bearer_token_file /etc/gust/prices.token; }
 *
 * What each poll does:
 *   2xx with a JSON body     published (see envelope and split_array below), "ok"
 *   2xx with an empty body   nothing to publish (a 204 "no news"), counted "empty"
 *   2xx, body not JSON       counted "not JSON", logged
 *   any other status         counted "HTTP errors", logged ("http 500 from URL"); 3xx too,
 *                            since redirects are not followed
 *   connection error/timeout counted "connection errors", logged
 * Errors are logged when the reason changes (a server that stays down logs once), and
 * the return to normal is logged; the counters go to the log every stats_interval and
 * at stop. The source keeps polling whatever happens.
 *
 * Publishing: the body as it is (any JSON value; a JSON array is one message), or with
 * `split_array on` each element of an array body as its own message; with `envelope on`
 * each message is {"url","fetched_at","status","body"} with the body (or element) inside.
 * Flows take JSON objects only: poll an API that answers arrays with split_array (of
 * objects) or envelope on. */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_poll.h"

static const struct gust_host_api *host;


struct http_poll {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    struct http_poll_conf conf;
    struct gust_source_runner *core;
    struct http_poll_fetch *fetch; /* between start and destroy */

    /* The core's thread only, but for stats, which it also runs. */
    uint64_t polls, ok, empty, not_json, http_errors, conn_errors, too_large;
    uint64_t streak;      /* polls failed in a row */
    char last_error[200]; /* the reason last logged, "" when polls are fine */

    /* The envelope being built. */
    struct gust_buf env;
    char fetched_at[GUST_RFC3339_SIZE];
    long status;
};

/* Logs a failed poll when its reason differs from the last one logged. */
static void poll_failed(struct http_poll *p, uint64_t *counter, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void poll_failed(struct http_poll *p, uint64_t *counter, const char *fmt, ...)
{
    char why[200];
    va_list ap;

    (*counter)++;
    p->streak++;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (strcmp(why, p->last_error) != 0) {
        host->log(p->inst, GUST_LOG_WARN, "poll failed: %s (kept polling; repeats are counted, not logged)",
                  why);
        snprintf(p->last_error, sizeof(p->last_error), "%s", why);
    }
}

static void poll_ok(struct http_poll *p)
{
    if (p->streak > 0) {
        host->log(p->inst, GUST_LOG_INFO, "polling %s works again after %" PRIu64 " failed poll(s)",
                  p->conf.url_shown, p->streak);
    }
    p->streak = 0;
    p->last_error[0] = '\0';
}

static int publish_one(void *ud, const char *data, size_t len)
{
    struct http_poll *p = ud;

    if (p->conf.envelope) {
        struct gust_buf *e = &p->env;
        e->len = 0;
        const char *url = p->conf.url_shown;
        int rc = gust_buf_append(e, "{\"url\":", 7);
        rc = rc ? rc : gust_json_append_string(e, url, strlen(url));
        rc = rc ? rc : gust_buf_printf(e, ",\"fetched_at\":\"%s\",\"status\":%ld,\"body\":", p->fetched_at, p->status);
        rc = rc ? rc : gust_buf_append(e, data, len);
        rc = rc ? rc : gust_buf_append(e, "}", 1);
        if (rc != 0) {
            host->log(p->inst, GUST_LOG_ERROR, "out of memory for an envelope of %zu bytes", len);
            return 0;
        }
        gust_source_publish(p->core, p->conf.subject, e->data, e->len);
    } else {
        gust_source_publish(p->core, p->conf.subject, data, len);
    }
    /* A failed publish is counted and logged by the core; the other elements go on. */
    return gust_source_stopping(p->core);
}

static void poll_run(void *ud, uint64_t n)
{
    struct http_poll *p = ud;
    const char *body;
    size_t len, start = 0;
    char why[200];
    int rc, kind;

    (void)n;
    p->polls++;
    rc = http_poll_fetch_get(p->fetch, &p->status, &body, &len, why, sizeof(why));
    if (rc == GUST_EAGAIN) {
        p->polls--; /* stopped: no poll was made */
        return;
    }
    if (rc != 0) {
        poll_failed(p, rc == GUST_EINVAL ? &p->too_large : &p->conn_errors, "%s: %s", p->conf.url_shown, why);
        return;
    }
    if (p->status < 200 || p->status > 299) {
        poll_failed(p, &p->http_errors, "http %ld from %s", p->status, p->conf.url_shown);
        return;
    }
    while (start < len &&
           (body[start] == ' ' || body[start] == '\t' || body[start] == '\r' || body[start] == '\n')) {
        start++;
    }
    while (len > start && (body[len - 1] == ' ' || body[len - 1] == '\t' || body[len - 1] == '\r' ||
                           body[len - 1] == '\n')) {
        len--;
    }
    if (len == start) {
        p->empty++;
        poll_ok(p);
        return;
    }
    kind = gust_json_check(body + start, len - start, NULL, NULL, why, sizeof(why));
    if (kind == 0) {
        /* The body itself is not logged: it may echo what was sent. */
        poll_failed(p, &p->not_json, "body from %s is not JSON (%zu bytes): %s", p->conf.url_shown,
                    len - start, why);
        return;
    }
    p->ok++;
    poll_ok(p);
    gust_rfc3339_ms(gust_clock_wall_ms(), p->fetched_at);
    if (kind == GUST_JSON_ARRAY && p->conf.split_array) {
        gust_json_each(body + start, len - start, publish_one, p);
    } else {
        publish_one(p, body + start, len - start);
    }
}

static void poll_stats(void *ud, int final)
{
    struct http_poll *p = ud;
    const struct gust_pub_counts *c = gust_source_counts(p->core);

    host->log(p->inst, GUST_LOG_INFO,
              "%s%" PRIu64 " polls: %" PRIu64 " ok, %" PRIu64 " empty, %" PRIu64 " not JSON, %" PRIu64
              " HTTP errors, %" PRIu64 " connection errors, %" PRIu64 " too large, %" PRIu64
              " skipped; messages: %" PRIu64 " stored, %" PRIu64 " failed, %" PRIu64 " pending",
              final ? "stopping: " : "", p->polls, p->ok, p->empty, p->not_json, p->http_errors,
              p->conn_errors, p->too_large, (uint64_t)atomic_load(&c->skipped),
              (uint64_t)atomic_load(&c->stored), (uint64_t)atomic_load(&c->failed),
              gust_source_pending(p->core));
}

static void poll_wake(void *ud)
{
    http_poll_fetch_wake(((struct http_poll *)ud)->fetch);
}

static void http_poll_destroy(void *ctx);

static int http_poll_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                            struct gust_err *err)
{
    struct http_poll *p = calloc(1, sizeof(*p));
    int rc;

    if (!p) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    p->inst = inst;
    p->cfg = cfg;
    if ((rc = http_poll_conf_load(&p->conf, host, cfg, err)) != 0) {
        goto fail;
    }
    struct gust_source_conf cc = {
        .api = host,
        .inst = inst,
        .interval_ms = p->conf.interval_ms,
        .stats_ms = p->conf.stats_ms,
        .run = poll_run,
        .wake = poll_wake,
        .stats = poll_stats,
        .ud = p,
    };
    if ((rc = gust_source_create(&p->core, &cc, err)) != 0) {
        goto fail;
    }
    *ctx = p;
    return 0;

fail:
    http_poll_destroy(p);
    return rc;
}

static int http_poll_start(void *ctx, struct gust_err *err)
{
    struct http_poll *p = ctx;
    int rc;

    if ((rc = http_poll_conf_headers(&p->conf, host, p->cfg, err)) != 0 ||
        (rc = http_poll_fetch_create(&p->fetch, &p->conf, p->core, err)) != 0 ||
        (rc = gust_source_start(p->core, 0, err)) != 0) {
        return rc;
    }
    host->log(p->inst, GUST_LOG_INFO, "polling %s every %" PRId64 " ms to %s%s%s", p->conf.url_shown,
              p->conf.interval_ms, p->conf.subject, p->conf.envelope ? ", in an envelope" : "",
              p->conf.split_array ? ", arrays split" : "");
    return 0;
}

static void http_poll_stop(void *ctx)
{
    gust_source_stop(((struct http_poll *)ctx)->core);
}

static void http_poll_destroy(void *ctx)
{
    struct http_poll *p = ctx;

    if (!p) {
        return;
    }
    gust_source_destroy(p->core); /* stops first: nothing uses fetch after it */
    http_poll_fetch_destroy(p->fetch);
    http_poll_conf_free(&p->conf);
    gust_buf_free(&p->env);
    free(p);
}

static int http_poll_init(const struct gust_host_api *api, struct gust_err *err)
{
    (void)api;
    CURLcode c = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (c != CURLE_OK) {
        return gust_err_set(err, GUST_EIO, "http_poll: libcurl: %s", curl_easy_strerror(c));
    }
    return 0;
}

static void http_poll_fini(void)
{
    curl_global_cleanup();
}

static const struct gust_plugin_type types[] = {{
    .name = "http_poll",
    .kind = GUST_PLUGIN_SOURCE,
    .schema = http_poll_schema,
    .create = http_poll_create,
    .start = http_poll_start,
    .stop = http_poll_stop,
    .destroy = http_poll_destroy,
}};

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "http_poll",
    .version = "0.1.0",
    .types = types,
    .ntypes = 1,
    .init = http_poll_init,
    .fini = http_poll_fini,
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    host = api;
    return &desc;
}
