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
 * Batching (batch_max, batch_bytes, batch_linger, batch_format): each request carries a
 * batch of messages as a JSON array (or ndjson); see http_out_client.c. A rate (rate,
 * rate_burst, rate_key) is a token bucket per sink, or per key, in this process.
 * Templates in url (path and query), method and header values: http_out_tpl.c.
 * forward_headers (and the trace context): http_out_fwd.c. reply_to (the answer of a 2xx
 * published as an event before the ack): http_out_reply.c. Signed requests (sign: Standard
 * Webhooks, or an HMAC header): http_out_sign.c. `ordered on` and `ordered_by` (stream
 * order, or per key): http_out_client.c, http_out_order.c and the host's sink handler
 * (host/plugin/sink_handler.c).
 *
 * The host owns retries and backoff; deliver sleeps only for a rate's token, and for the
 * outage pause (http_out_client.c): a far end found down (every answer of a call a
 * RETRY) gets one probe at a time, at a backoff capped by retry_max_delay, as long as a
 * Retry-After (seconds or an HTTP-date) on a 429 or 503 asks too; no request is written
 * before the next probe, in this call or a later one, and a call waits for it only up to
 * a third of ack_wait (its messages go back to the bus unsent otherwise).
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
    struct http_out_reply *reply;   /* reply_to's publisher, between start and stop */
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

    if (rc == 0 && h->conf.reply_to != NULL && (rc = http_out_reply_create(&h->reply, host, h->inst, &h->conf, err)) != 0) {
        http_out_client_destroy(h->client);
        h->client = NULL;
    }
    if (rc == 0) {
        host->log(h->inst, GUST_LOG_INFO, "%s %s, connections %zu, pipeline %zu, max_inflight %zu%s%s%s%s",
                  h->conf.k.method, h->conf.url, h->conf.connections, h->conf.pipeline, h->conf.max_inflight,
                  h->conf.batching ? ", batches of " : "", h->conf.batching ? h->conf.k.batch_format : "",
                  h->conf.rate > 0 ? ", rate limited" : "",
                  h->conf.order == GUST_ORDER_STREAM ? ", in stream order (one request in flight)"
                  : h->conf.order == GUST_ORDER_KEY  ? ", in order per ordered_by key"
                                                     : "");
    }
    return rc;
}

static int http_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n,
                            struct gust_result *results)
{
    struct http_out *h = ctx;

    int rc = http_out_client_deliver(h->client, msgs, n, results);
    if (rc == 0 && h->reply != NULL) {
        http_out_reply_publish(h->reply, h->client, msgs, n, results);
    }
    return rc;
}

/* Fetches that fill batches, and that a rate can send within ack_wait (see
 * http_out_client.c for why batches are made within one deliver call). */
static void http_out_fetch_limits(void *ctx, struct gust_fetch_limits *l)
{
    struct http_out *h = ctx;
    const struct http_out_conf *c = &h->conf;

    http_out_client_set_ack_wait(h->client, l->ack_wait_ms);
    if (c->batching) {
        /* Whole batches: a multiple of batch_max (at least one), near the unit's batch. */
        size_t per = c->batch_max < 100000 ? c->batch_max : l->max;
        l->max = per * (l->max / per > 0 ? l->max / per : 1);
        l->linger_ms = c->batch_linger_ms;
    }
    if (c->rate > 0) {
        /* The host asks for the next fetch while one is delivered: a message may wait two
         * of them. Two fetches sent at the rate take two thirds of ack_wait at most. */
        /* A batch bounded by bytes may hold a single message: count one per request. */
        double per_request = c->batching && c->batch_bytes == 0 ? (double)c->batch_max : 1.0;
        double fit = c->rate * per_request * (double)l->ack_wait_ms / 1000.0 / 3.0;
        if (fit < (double)l->max) {
            l->max = fit >= 1.0 ? (size_t)fit : 1;
        }
        if (fit < 1.0) {
            host->log(h->inst, GUST_LOG_WARN,
                      "rate %g/s is below one request per %lld ms (a third of nats ack_wait): messages "
                      "waiting for it are delivered again meanwhile; raise ack_wait",
                      c->rate, (long long)(l->ack_wait_ms / 3));
        }
    }
}

/* ordered on: the host holds each batch until it went (gust/plugin.h); ordered_by: the
 * client keeps order per key itself (http_out_client.c). */
static int http_out_ordered(void *ctx)
{
    struct http_out *h = ctx;

    return h->conf.order;
}

/* The outage pause: outage (1 while the far end is down), outages, probes; with
 * ordered_by, keys_held and held (the messages they wait for). */
static size_t http_out_counters(void *ctx, struct gust_plugin_counter *out, size_t max)
{
    struct http_out *h = ctx;

    return http_out_client_counters(h->client, out, max);
}

static void http_out_stop(void *ctx)
{
    struct http_out *h = ctx;

    http_out_reply_destroy(h->reply);
    h->reply = NULL;
    http_out_client_destroy(h->client);
    h->client = NULL;
}

static void http_out_destroy(void *ctx)
{
    struct http_out *h = ctx;

    if (!h) {
        return;
    }
    http_out_reply_destroy(h->reply);
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
    .fetch_limits = http_out_fetch_limits,
    .counters = http_out_counters,
    .destroy = http_out_destroy,
    .ordered = http_out_ordered,
    /* forward_headers, the trace context and reply_to's Gust-Request-Id read the
     * message's headers. The flag is the type's, not an instance's (the types table is
     * shared by every instance): every http_out pays the header parse, which the trace
     * context forwarded by default needs anyway. */
    .wants_headers = 1,
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
