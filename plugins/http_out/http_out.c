/* http_out: a sink that sends each message's body to one URL, POST (or PUT), with up to
 * max_inflight requests in flight over kept-alive connections (libcurl multi; http:// and
 * https://).
 *
 *   sink crm { use http_out; source ev.orders.out; url http://127.0.0.1:9099/hit;
 *              header "Authorization: Bearer ${CRM_TOKEN}"; timeout 2s; }
 *
 * What each answer means for the message:
 *   2xx                                        DELIVERED
 *   5xx, 408, 429, timeout, connection error   RETRY     "http 503 from URL", "timeout after
 *                                                         5000 ms", "connect: Connection refused"
 *   any other (4xx, 3xx: redirects are not     REJECTED  "http 404 from URL: " + the first
 *   followed)                                             120 bytes of the response body
 * The host owns retries and backoff; deliver never sleeps. */
#include <curl/curl.h>
#include <stdlib.h>

#include "http_out.h"

struct http_out {
    struct gust_instance *inst;
    struct http_out_conf conf;
    struct http_out_client *client; /* between start and stop */
};

static const struct gust_host_api *host;

static const struct gust_schema_key schema[] = {
    {"url", GUST_T_STR, NULL, GUST_K_REQUIRED, "where to send each message (http:// or https://)"},
    {"method", GUST_T_STR, "POST", 0, "POST or PUT"},
    {"header", GUST_T_LIST, NULL, GUST_K_SECRET,
     "extra request header \"Name: value\", repeatable; values are literal (use ${ENV})"},
    {"content_type", GUST_T_STR, "application/json", 0, "Content-Type of the requests"},
    {"timeout", GUST_T_DURATION, "5s", 0, "limit for one request, connecting included"},
    {"max_inflight", GUST_T_INT, "16", 0,
     "requests of one batch in flight at once; HTTP/1.1 needs a connection for each, so "
     "`connections` bounds it too"},
    {"connections", GUST_T_INT, "16", 0,
     "most connections open to the server, kept alive between batches"},
    {NULL, 0, NULL, 0, NULL},
};

static int http_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                           struct gust_err *err)
{
    struct http_out *h = calloc(1, sizeof(*h));
    int rc;

    if (!h) {
        return gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
    }
    h->inst = inst;
    if ((rc = http_out_conf_load(&h->conf, host, cfg, err)) != 0) {
        free(h);
        return rc;
    }
    *ctx = h;
    return 0;
}

static int http_out_start(void *ctx, struct gust_err *err)
{
    struct http_out *h = ctx;
    int rc = http_out_client_create(&h->client, &h->conf, err);

    if (rc == 0) {
        host->log(h->inst, GUST_LOG_INFO, "%s %s, max_inflight %zu, connections %ld",
                  h->conf.put ? "PUT" : "POST", h->conf.url, h->conf.max_inflight,
                  h->conf.connections);
    }
    return rc;
}

static int http_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n,
                            struct gust_result *results)
{
    struct http_out *h = ctx;
    struct gust_err err;
    int rc = http_out_client_deliver(h->client, msgs, n, results, &err);

    if (rc != 0) {
        host->log(h->inst, GUST_LOG_ERROR, "%s", err.msg);
    }
    return rc;
}

static void http_out_stop(void *ctx)
{
    struct http_out *h = ctx;

    http_out_client_destroy(h->client);
    h->client = NULL;
}

static void http_out_destroy(void *ctx)
{
    struct http_out *h = ctx;

    if (!h) {
        return;
    }
    http_out_client_destroy(h->client);
    http_out_conf_free(&h->conf);
    free(h);
}

static int http_out_init(const struct gust_host_api *api, struct gust_err *err)
{
    (void)api;
    CURLcode c = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (c != CURLE_OK) {
        return gust_err_set(err, GUST_EIO, "http_out: libcurl: %s", curl_easy_strerror(c));
    }
    return 0;
}

static void http_out_fini(void)
{
    curl_global_cleanup();
}

static const struct gust_plugin_type types[] = {{
    .name = "http_out",
    .kind = GUST_PLUGIN_SINK,
    .schema = schema,
    .create = http_out_create,
    .start = http_out_start,
    .deliver = http_out_deliver,
    .stop = http_out_stop,
    .destroy = http_out_destroy,
}};

static const struct gust_plugin_desc desc = {
    .struct_size = sizeof(struct gust_plugin_desc),
    .abi_major = GUST_ABI_MAJOR,
    .abi_minor = GUST_ABI_MINOR,
    .name = "http_out",
    .version = "0.1.0",
    .types = types,
    .ntypes = 1,
    .init = http_out_init,
    .fini = http_out_fini,
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    host = api;
    return &desc;
}
