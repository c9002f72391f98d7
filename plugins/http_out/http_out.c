/* http_out: a sink that sends each message's body to one URL, POST (or PUT), over
 * kept-alive HTTP/1.1 connections with pipelining (http:// and https://; gust's own client,
 * see http_out_client.c).
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
 * The host owns retries and backoff; deliver sleeps only for a Retry-After (seconds or
 * an HTTP-date) on a 429 or 503, which pauses the whole sink, every message, for that
 * long, capped by retry_max_delay: no request is written before it ends, in this call or
 * a later one (the refused message itself is retried by the host, and its next
 * delivery waits for the pause too).
 *
 * A batch is spread over at most `connections` connections, each carrying up to `pipeline`
 * requests written at once, `max_inflight` over all of them. A request times out `timeout`
 * after it was written (connecting included); the requests pipelined behind it on its
 * connection wait behind it, and time out with it. A request on a connection that breaks
 * before any byte of its answer came is sent again once on a new connection in the same
 * call; a POST may so reach the server twice, which the bus's at-least-once delivery
 * allows anyway. https verifies the server against the system CA store (or tls_ca), with
 * its host name, and sends SNI. No proxy is taken from the environment. */
#include <stdlib.h>
#include <string.h>

#include "http_out.h"

struct http_out {
    struct gust_instance *inst;
    struct http_out_conf conf;
    struct http_out_client *client; /* between start and stop */
};

static const struct gust_host_api *host;

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
        host->log(h->inst, GUST_LOG_INFO, "%.*s %s, connections %zu, pipeline %zu, max_inflight %zu",
                  (int)((const char *)memchr(h->conf.head.data, ' ', h->conf.head.len) - h->conf.head.data),
                  h->conf.head.data, h->conf.url,
                  h->conf.connections, h->conf.pipeline, h->conf.max_inflight);
    }
    return rc;
}

static int http_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n,
                            struct gust_result *results)
{
    struct http_out *h = ctx;

    return http_out_client_deliver(h->client, msgs, n, results);
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

static const struct gust_plugin_type types[] = {{
    .name = "http_out",
    .kind = GUST_PLUGIN_SINK,
    .schema = http_out_schema,
    .create = http_out_create,
    .start = http_out_start,
    .deliver = http_out_deliver,
    .stop = http_out_stop,
    .destroy = http_out_destroy,
}};

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "http_out",
    .version = "0.1.0",
    .types = types,
    .ntypes = 1,
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    host = api;
    return &desc;
}
