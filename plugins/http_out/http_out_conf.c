/* Reading and checking an http_out instance's keys. The host has already checked their
 * types; what is left are the values only this plugin understands. */
#include <ctype.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http_out.h"
#include "http_header.h"


static int check_url(const char *url)
{
    CURLU *u = curl_url();
    char *scheme = NULL;
    int ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
             curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
             (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0);
    curl_free(scheme);
    curl_url_cleanup(u);
    return ok ? 0 : -1;
}

/* Returns NULL when h is a usable "Name: value" line, else what is wrong with it. */
static const char *check_header(const char *h)
{
    const char *why = gust_http_header_problem(h);
    if (why != NULL) {
        return why;
    }
    const char *colon = strchr(h, ':');
    /* The body's framing and type are the plugin's: content_type sets the type. */
    if ((colon - h == 12 && strncasecmp(h, "Content-Type", 12) == 0) ||
        (colon - h == 14 && strncasecmp(h, "Content-Length", 14) == 0)) {
        return "sets a header the plugin owns (use content_type for the type)";
    }
    return NULL;
}

static int add_header(struct http_out_conf *conf, const char *line, struct gust_err *err)
{
    struct curl_slist *l = curl_slist_append(conf->headers, line);
    if (!l) {
        return gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
    }
    conf->headers = l;
    return 0;
}

int http_out_conf_load(struct http_out_conf *conf, const struct gust_host_api *api,
                       const struct gust_cfg *cfg, struct gust_err *err)
{
    char line[1024];
    int rc;

    memset(conf, 0, sizeof(*conf));
    conf->url = api->cfg_str(cfg, "url");
    if (!conf->url || check_url(conf->url) != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: url: \"%s\" is not an http:// or https:// URL",
                          api->cfg_where(cfg, "url"), conf->url ? conf->url : "");
        goto fail;
    }

    const char *method = api->cfg_str(cfg, "method");
    if (strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: method: \"%s\" is neither POST nor PUT",
                          api->cfg_where(cfg, "method"), method);
        goto fail;
    }
    conf->put = strcmp(method, "PUT") == 0;

    static const struct {
        const char *key;
        long max;
    } limits[] = {{"timeout", 3600000}, {"max_inflight", 65536}, {"connections", 65536}};
    long vals[3];
    for (size_t i = 0; i < 3; i++) {
        int64_t v = api->cfg_int(cfg, limits[i].key);
        if (v < 1 || v > limits[i].max) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: %s: %lld is not within 1..%ld",
                              api->cfg_where(cfg, limits[i].key), limits[i].key, (long long)v,
                              limits[i].max);
            goto fail;
        }
        vals[i] = (long)v;
    }
    conf->timeout_ms = vals[0];
    conf->max_inflight = (size_t)vals[1];
    conf->connections = vals[2];

    const char *ctype = api->cfg_str(cfg, "content_type");
    if (strpbrk(ctype, "\r\n")) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: content_type: holds a line break",
                          api->cfg_where(cfg, "content_type"));
        goto fail;
    }
    snprintf(line, sizeof(line), "Content-Type: %s", ctype);
    if ((rc = add_header(conf, line, err)) != 0) {
        goto fail;
    }
    for (size_t i = 0, n = api->cfg_count(cfg, "header"); i < n; i++) {
        const char *h = api->cfg_item(cfg, "header", i);
        const char *why = check_header(h);
        if (why) {
            /* The value may be a secret: name the header by its position only. */
            rc = gust_err_set(err, GUST_ECONFIG, "%s: header #%zu %s",
                              api->cfg_where(cfg, "header"), i + 1, why);
            goto fail;
        }
        if ((rc = add_header(conf, h, err)) != 0) {
            goto fail;
        }
    }
    /* libcurl would otherwise wait for "100 Continue" before sending a large body: one
     * round trip more for every big message. */
    if ((rc = add_header(conf, "Expect:", err)) != 0) {
        goto fail;
    }
    return 0;

fail:
    http_out_conf_free(conf);
    return rc;
}

void http_out_conf_free(struct http_out_conf *conf)
{
    curl_slist_free_all(conf->headers);
    conf->headers = NULL;
}
