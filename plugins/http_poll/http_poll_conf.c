/* Reading and checking an http_poll instance's keys. The host has checked their types;
 * what is left are the values only this plugin understands, and the secrets.
 *
 * Secrets (header values, header_file, bearer_token_file, bearer_token_env) are read at
 * start, kept only in the curl header list, overwritten when freed, and never put in a
 * message: errors about them name the key, the file and the line number, not the text. */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_poll.h"

/* Fills conf->url_shown; -1 when url is not an http:// or https:// URL. */
static int parse_url(struct http_poll_conf *conf, const char *url)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *hostname = NULL, *port = NULL, *path = NULL;
    int ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
             curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
             (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0) &&
             curl_url_get(u, CURLUPART_HOST, &hostname, 0) == CURLUE_OK &&
             curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK;

    if (ok) {
        curl_url_get(u, CURLUPART_PORT, &port, 0); /* absent: the scheme's default */
        snprintf(conf->url_shown, sizeof(conf->url_shown), "%s://%s%s%s%s", scheme, hostname, port ? ":" : "",
                 port ? port : "", path);
    }
    curl_free(scheme);
    curl_free(hostname);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return ok ? 0 : -1;
}

#define KEY(f, T, def, flags, help) GUST_KEY(struct http_poll_keys, f, T, def, flags, help)
#define KEY_RANGE(f, T, def, flags, lo, hi, help) GUST_KEY_RANGE(struct http_poll_keys, f, T, def, flags, lo, hi, help)
const struct gust_schema_key http_poll_schema[] = {
    GUST_KEY_URL(struct http_poll_keys, url, NULL, GUST_K_REQUIRED, "http|https", "what to GET"),
    KEY(subject, SUBJECT, NULL, GUST_K_REQUIRED, "where to publish the body"),
    KEY_RANGE(interval, DURATION, "10s", 0, 10, INT64_MAX, "time between polls; the first is at start"),
    KEY_RANGE(timeout, DURATION, "5s", 0, 10, INT64_MAX, "limit for one request, connecting included"),
    KEY(header, LIST, NULL, GUST_K_SECRET,
        "request header \"Name: value\", repeatable; literal (use ${ENV}), never logged"),
    KEY(header_file, PATH, NULL, GUST_K_SECRET,
        "file of \"Name: value\" lines (blank and # lines skipped), read at start: secret headers kept out of "
        "host.conf"),
    KEY(bearer_token_file, PATH, NULL, GUST_K_SECRET,
        "file whose first line is sent as \"Authorization: Bearer ...\", read at start"),
    KEY(bearer_token_env, STR, NULL, 0, "or the environment variable holding that token, read at start"),
    KEY(envelope, BOOL, "off", 0,
        "on: publish {\"url\",\"fetched_at\",\"status\",\"body\"} (url without user info and query)"),
    KEY(split_array, BOOL, "off", 0, "on: a JSON array body is published as one message per element"),
    KEY_RANGE(max_body, SIZE, "1m", 0, 2, INT64_MAX, "larger bodies are an error (counted, logged)"),
    KEY_RANGE(stats_interval, DURATION, "60s", GUST_K_ZERO_OFF, 100, INT64_MAX,
              "log the counters this often (0: only when stopping)"),
    GUST_KEY_END,
};

int http_poll_conf_load(struct http_poll_conf *c, const struct gust_host_api *api, const struct gust_cfg *cfg,
                        struct gust_err *err)
{
    int auth_header = 0;

    memset(c, 0, sizeof(*c));
    int rc = gust_sdk_bind(api, cfg, http_poll_schema, &c->k, err);
    if (rc != 0) {
        return rc;
    }
    const struct http_poll_keys *k = &c->k;
    c->url = k->url;
    if (!c->url || parse_url(c, c->url) != 0) {
        /* The URL may hold credentials: it is not repeated here. */
        return gust_err_set(err, GUST_ECONFIG, "%s: url: not an http:// or https:// URL",
                          api->cfg_where(cfg, "url"));
    }
    c->subject = k->subject;
    c->interval_ms = k->interval;
    c->timeout_ms = k->timeout;
    c->stats_ms = k->stats_interval;
    c->max_body = (size_t)k->max_body;
    c->envelope = k->envelope;
    c->split_array = k->split_array;
    for (size_t i = 0; i < k->header.n; i++) {
        const char *h = k->header.items[i];
        const char *why = gust_http_header_problem(h);
        if (why) {
            /* The value may be a secret: the header is named by its position only. */
            return gust_err_set(err, GUST_ECONFIG, "%s: header #%zu %s", api->cfg_where(cfg, "header"), i + 1,
                              why);
        }
        auth_header |= gust_http_header_is(h, "Authorization");
    }
    if (k->bearer_token_file && k->bearer_token_env) {
        return gust_err_set(err, GUST_ECONFIG, "%s: bearer_token_file and bearer_token_env are exclusive",
                          api->cfg_where(cfg, "bearer_token_env"));
    }
    if (auth_header && (k->bearer_token_file || k->bearer_token_env)) {
        return gust_err_set(err, GUST_ECONFIG, "%s: an Authorization header and a bearer token are exclusive",
                          api->cfg_where(cfg, "header"));
    }
    return 0;
}

static int add_header(struct http_poll_conf *c, const char *line, struct gust_err *err)
{
    struct curl_slist *l = curl_slist_append(c->headers, line);
    if (!l) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    c->headers = l;
    return 0;
}

static void wipe(char *s, size_t n)
{
    volatile char *p = s;
    while (n--) {
        *p++ = 0;
    }
}

/* Each non-blank line of the file not starting with '#' is one header. */
static int read_header_file(struct http_poll_conf *c, const struct gust_host_api *api,
                            const struct gust_cfg *cfg, struct gust_err *err)
{
    const char *path = c->k.header_file;
    char line[4096];
    int rc = 0, lineno = 0;
    FILE *f;

    if (!path) {
        return 0;
    }
    if (!(f = fopen(path, "re"))) {
        return gust_err_set(err, GUST_ECONFIG, "%s: header_file: %s: %s", api->cfg_where(cfg, "header_file"),
                          path, strerror(errno));
    }
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        size_t n = strcspn(line, "\r\n");
        const char *why;
        lineno++;
        line[n] = '\0';
        if (n == 0 || line[0] == '#') {
            continue;
        }
        if ((why = gust_http_header_problem(line)) != NULL) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: header_file: %s:%d %s",
                            api->cfg_where(cfg, "header_file"), path, lineno, why);
        } else if (gust_http_header_is(line, "Authorization") &&
                   (c->k.bearer_token_file || c->k.bearer_token_env)) {
            rc = gust_err_set(err, GUST_ECONFIG,
                            "%s: header_file: %s:%d sets Authorization, and so does the bearer token",
                            api->cfg_where(cfg, "header_file"), path, lineno);
        } else {
            rc = add_header(c, line, err);
        }
    }
    wipe(line, sizeof(line));
    fclose(f);
    return rc;
}

/* "Authorization: Bearer <token>" from bearer_token_file (its first line) or the
 * environment variable bearer_token_env names. */
static int add_bearer(struct http_poll_conf *c, const struct gust_host_api *api, const struct gust_cfg *cfg,
                      struct gust_err *err)
{
    const char *path = c->k.bearer_token_file;
    const char *env = c->k.bearer_token_env;
    const char *key = path ? "bearer_token_file" : "bearer_token_env";
    char token[4096], line[4200];
    int rc;

    if (path) {
        FILE *f = fopen(path, "re");
        if (!f) {
            return gust_err_set(err, GUST_ECONFIG, "%s: bearer_token_file: %s: %s", api->cfg_where(cfg, key),
                              path, strerror(errno));
        }
        if (!fgets(token, sizeof(token), f)) {
            token[0] = '\0';
        }
        fclose(f);
    } else if (env) {
        const char *v = getenv(env);
        snprintf(token, sizeof(token), "%s", v ? v : "");
    } else {
        return 0;
    }
    token[strcspn(token, "\r\n")] = '\0';
    if (!token[0]) {
        rc = gust_err_set(err, GUST_ECONFIG,
                        path ? "%s: bearer_token_file: %s is empty"
                             : "%s: bearer_token_env: $%s is not set or empty",
                        api->cfg_where(cfg, key), path ? path : env);
    } else {
        snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
        rc = add_header(c, line, err);
    }
    wipe(token, sizeof(token));
    wipe(line, sizeof(line));
    return rc;
}

int http_poll_conf_headers(struct http_poll_conf *c, const struct gust_host_api *api,
                           const struct gust_cfg *cfg, struct gust_err *err)
{
    int rc, accept = 0;

    for (size_t i = 0; i < c->k.header.n; i++) {
        const char *h = c->k.header.items[i];
        accept |= gust_http_header_is(h, "Accept");
        if ((rc = add_header(c, h, err)) != 0) {
            return rc;
        }
    }
    if ((rc = read_header_file(c, api, cfg, err)) != 0 || (rc = add_bearer(c, api, cfg, err)) != 0) {
        return rc;
    }
    for (struct curl_slist *l = c->headers; l; l = l->next) {
        accept |= gust_http_header_is(l->data, "Accept");
    }
    return accept ? 0 : add_header(c, "Accept: application/json", err);
}

void http_poll_conf_free(struct http_poll_conf *c)
{
    for (struct curl_slist *l = c->headers; l; l = l->next) {
        wipe(l->data, strlen(l->data));
    }
    curl_slist_free_all(c->headers);
    c->headers = NULL;
}
