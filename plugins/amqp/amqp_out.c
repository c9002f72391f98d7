/* amqp_out: the bus -> basic.publish, each message acked on the bus only once the
 * broker confirmed it (publisher confirms).
 *
 *   sink aout { use amqp_out; source ev.amqp; url amqp://...; exchange ""; routing_key gust_out; }
 *
 * A batch is pipelined: every message published (mandatory, persistent, message_id from
 * its Nats-Msg-Id), then the confirms read. rabbitmq-c 0.11 has confirm.select but no
 * wait for confirms, so this reads the frames itself: basic.ack (multiple or not) ->
 * DELIVERED; basic.nack -> RETRY; basic.return (unroutable: the broker sends it before
 * the message's ack) -> REJECTED with the broker's reply text, matched to its message by
 * message_id; a channel the broker closes over a message it refuses (404 no such
 * exchange, 403 access refused, 406 too large) -> REJECTED with its text for every
 * message not yet confirmed, and the next batch opens a new connection at once. The
 * broker down, a lost connection, no confirm within `timeout`: RETRY, the bus keeps the
 * messages (never dead-lettered for it). A message confirmed and not acked on the bus
 * (gust died in between) is published again: at least once, same message_id. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_plugin.h"

struct amqp_out_keys {
    struct amqp_keys common;
    const char *exchange, *routing_key;
};

const struct gust_schema_key amqp_out_schema[] = {
    AMQP_COMMON_KEYS(struct amqp_out_keys),
    GUST_KEY(struct amqp_out_keys, exchange, STR, NULL, 0,
             "the exchange to publish to (default \"\": the default exchange, routing by queue name)"),
    GUST_KEY(struct amqp_out_keys, routing_key, STR, NULL, GUST_K_REQUIRED,
             "routing key; a template: {subject}, {payload.a.b}"),
    GUST_KEY_END,
};

struct amqp_out {
    struct gust_instance *inst;
    struct amqp_out_keys k;
    struct amqp_conf conf;
    struct amqp_link link;
    struct gust_tpl *rk;
    int confirming;
    uint64_t next_seq; /* the confirm tag of the next publish on this channel */
    int64_t isolate_until; /* monotonic ms: publish one message at a time until then */
    amqp_table_entry_t fields[AMQP_MAX_HEADERS];
    /* Per batch (grown as needed). */
    uint64_t *seq;
    char *returned; /* 1: came back with basic.return (its text in the result) */
    char *settled; /* 0: in play, 1: has its result, 2: waits for a later round */
    size_t slots;
    atomic_uint_fast64_t published, refused, returns, retried;
};

int amqp_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    const struct gust_host_api *h = amqp_host;
    struct amqp_out *o = calloc(1, sizeof(*o));
    char why[200];
    int rc;

    if (!o) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    o->inst = inst;
    if ((rc = gust_sdk_bind(h, cfg, amqp_out_schema, &o->k, err)) != 0 ||
        (rc = amqp_conf_load(&o->conf, &o->k.common, cfg, err)) != 0) {
        amqp_out_destroy(o);
        return rc;
    }
    if (!o->k.exchange) {
        o->k.exchange = "";
    }
    if (strlen(o->k.exchange) > 127) {
        amqp_out_destroy(o);
        return gust_err_set(err, GUST_ECONFIG, "%s: exchange: at most 127 bytes", h->cfg_where(cfg, "exchange"));
    }
    if (gust_tpl_compile(o->k.routing_key, &o->rk, why, sizeof(why)) != 0) {
        amqp_out_destroy(o);
        return gust_err_set(err, GUST_ECONFIG, "%s: routing_key: %s", h->cfg_where(cfg, "routing_key"), why);
    }
    amqp_link_init(&o->link, inst, &o->conf);
    *ctx = o;
    return 0;
}

static void retry_rest(struct amqp_out *o, struct gust_result *results, size_t n, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        if (!o->settled[i]) {
            results[i].status = GUST_RETRY;
            snprintf(results[i].error, sizeof(results[i].error), "amqp: %.190s", why);
            atomic_fetch_add(&o->retried, 1);
        }
    }
}

static void settle(struct amqp_out *o, struct gust_result *r, size_t i, int status, const char *why)
{
    o->settled[i] = 1;
    if (status == GUST_DELIVERED && o->returned[i]) {
        status = GUST_REJECTED; /* its text is already there */
        atomic_fetch_add(&o->refused, 1);
    } else if (status == GUST_DELIVERED) {
        atomic_fetch_add(&o->published, 1);
    } else if (status == GUST_RETRY) {
        atomic_fetch_add(&o->retried, 1);
    } else {
        atomic_fetch_add(&o->refused, 1);
    }
    r[i].status = status;
    if (why) {
        snprintf(r[i].error, sizeof(r[i].error), "%.199s", why);
    }
}

/* basic.ack or basic.nack for tag (and every earlier one when multiple). */
static size_t confirm(struct amqp_out *o, struct gust_result *r, size_t n, uint64_t tag, int multiple, int ack)
{
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        if (o->settled[i] || o->seq[i] > tag || (!multiple && o->seq[i] != tag)) {
            continue;
        }
        settle(o, r, i, ack ? GUST_DELIVERED : GUST_RETRY,
               ack ? NULL : "amqp: the broker nacked the message (queue full with reject-publish, or an internal error)");
        done++;
    }
    return done;
}

/* The message of a basic.return (its content follows the method): marked returned,
 * found by message_id among the messages not yet confirmed. */
static int returned(struct amqp_out *o, const struct gust_msg *msgs, struct gust_result *r, size_t n,
                    const amqp_basic_return_t *ret, char *why, size_t whysz)
{
    amqp_message_t m;
    amqp_rpc_reply_t rr = amqp_read_message(o->link.conn, 1, &m, 0);
    if (!amqp_reply_text(rr, "reading a returned message", why, whysz)) {
        return -1;
    }
    char text[200];
    snprintf(text, sizeof(text), "amqp: returned by the broker: %u %.*s (exchange \"%.*s\", routing key \"%.*s\")",
             ret->reply_code, (int)(ret->reply_text.len > 60 ? 60 : ret->reply_text.len),
             (const char *)ret->reply_text.bytes, (int)(ret->exchange.len > 40 ? 40 : ret->exchange.len),
             (const char *)ret->exchange.bytes, (int)(ret->routing_key.len > 40 ? 40 : ret->routing_key.len),
             (const char *)ret->routing_key.bytes);
    const amqp_bytes_t *id = &m.properties.message_id;
    int has_id = (m.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) != 0;
    for (size_t i = 0; i < n; i++) {
        if (o->settled[i] || o->returned[i]) {
            continue;
        }
        amqp_basic_properties_t p;
        char fallback[48];
        snprintf(fallback, sizeof(fallback), "gust:%" PRIu64, msgs[i].stream_seq);
        amqp_headers_to_props(&msgs[i], fallback, &p, o->fields);
        if (has_id && (p.message_id.len != id->len || memcmp(p.message_id.bytes, id->bytes, id->len) != 0)) {
            continue;
        }
        o->returned[i] = 1;
        atomic_fetch_add(&o->returns, 1);
        snprintf(r[i].error, sizeof(r[i].error), "%s", text);
        break;
    }
    amqp_destroy_message(&m);
    return 0;
}

/* The broker closed the channel over a message it refuses, without saying which. No
 * such exchange or access refused: every message not yet confirmed shares the exchange,
 * all are refused. Too large (406) is one message's fault: alone, it is rejected; among
 * several, they are retried and the next minute's batches go out one message at a time,
 * so the culprit is found and its batchmates get through. A new connection at once. */
static void refused(struct amqp_out *o, struct gust_result *r, size_t n, size_t left, int code, const char *why)
{
    char text[200];
    int isolate = code == AMQP_PRECONDITION_FAILED && left > 1;
    snprintf(text, sizeof(text), "amqp: refused by the broker: %.170s", why);
    if (isolate) {
        if (gust_clock_mono_ms() >= o->isolate_until) {
            amqp_host->log(o->inst, GUST_LOG_WARN,
                           "the broker refused one of %zu messages (%s): publishing one at a time for a minute "
                           "to find it",
                           left, why);
        }
        o->isolate_until = gust_clock_mono_ms() + 60000;
    }
    for (size_t i = 0; i < n; i++) {
        if (!o->settled[i]) {
            settle(o, r, i, isolate ? GUST_RETRY : GUST_REJECTED, text);
        }
    }
    amqp_link_reset(&o->link);
    o->confirming = 0;
}

/* Reads frames until every message in play (settled 0) has its confirm. */
static void wait_confirms(struct amqp_out *o, const struct gust_msg *msgs, struct gust_result *r, size_t n)
{
    int64_t deadline = gust_clock_mono_ms() + o->conf.timeout_ms;
    size_t left = 0;
    char why[400] = "";

    for (size_t i = 0; i < n; i++) {
        left += !o->settled[i];
    }

    while (left > 0) {
        int64_t ms = deadline - gust_clock_mono_ms();
        struct timeval tv = {.tv_sec = ms > 0 ? ms / 1000 : 0, .tv_usec = ms > 0 ? (ms % 1000) * 1000 : 0};
        amqp_frame_t f;
        int rc = amqp_simple_wait_frame_noblock(o->link.conn, &f, &tv);
        if (rc != AMQP_STATUS_OK) {
            if (rc == AMQP_STATUS_TIMEOUT) {
                snprintf(why, sizeof(why), "no publisher confirm within %" PRId64 " ms", o->conf.timeout_ms);
            } else {
                snprintf(why, sizeof(why), "reading confirms: %s", amqp_error_string2(rc));
            }
            break;
        }
        if (f.frame_type != AMQP_FRAME_METHOD) {
            continue;
        }
        const amqp_method_t *m = &f.payload.method;
        if (m->id == AMQP_BASIC_ACK_METHOD) {
            const amqp_basic_ack_t *a = m->decoded;
            left -= confirm(o, r, n, a->delivery_tag, a->multiple, 1);
        } else if (m->id == AMQP_BASIC_NACK_METHOD) {
            const amqp_basic_nack_t *a = m->decoded;
            left -= confirm(o, r, n, a->delivery_tag, a->multiple, 0);
        } else if (m->id == AMQP_BASIC_RETURN_METHOD) {
            amqp_basic_return_t ret = *(const amqp_basic_return_t *)m->decoded;
            /* The method's strings live in the frame pool, which reading the content keeps. */
            if (returned(o, msgs, r, n, &ret, why, sizeof(why)) != 0) {
                break;
            }
        } else if (m->id == AMQP_CHANNEL_CLOSE_METHOD) {
            const amqp_channel_close_t *c = m->decoded;
            amqp_close_text(o->link.conn, m, why, sizeof(why));
            if (c->reply_code == AMQP_NOT_FOUND || c->reply_code == AMQP_ACCESS_REFUSED ||
                c->reply_code == AMQP_PRECONDITION_FAILED) {
                refused(o, r, n, left, c->reply_code, why);
                return;
            }
            break;
        } else if (amqp_close_text(o->link.conn, m, why, sizeof(why))) {
            break;
        }
    }
    if (left > 0) {
        retry_rest(o, r, n, why);
        amqp_link_drop(&o->link, why);
        o->confirming = 0;
    }
}

static int grow(struct amqp_out *o, size_t n)
{
    if (n <= o->slots) {
        return 0;
    }
    uint64_t *seq = realloc(o->seq, n * sizeof(*seq));
    if (seq) {
        o->seq = seq;
    }
    char *ret = realloc(o->returned, n);
    if (ret) {
        o->returned = ret;
    }
    char *set = realloc(o->settled, n);
    if (set) {
        o->settled = set;
    }
    if (!seq || !ret || !set) {
        return -1;
    }
    o->slots = n;
    return 0;
}

/* Connected with confirms on, or why not. */
static int ready(struct amqp_out *o, char *why, size_t whysz)
{
    if (amqp_link_ensure(&o->link, why, whysz) != 0) {
        return -1;
    }
    if (!o->confirming) {
        if (!amqp_confirm_select(o->link.conn, 1)) {
            amqp_reply_text(amqp_get_rpc_reply(o->link.conn), "confirm.select", why, whysz);
            amqp_link_drop(&o->link, why);
            return -1;
        }
        o->confirming = 1;
        o->next_seq = 1;
        amqp_link_ready(&o->link);
    }
    return 0;
}

/* Messages waiting for a later round are back in play, for retry_rest. */
static void unpark(struct amqp_out *o, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (o->settled[i] == 2) {
            o->settled[i] = 0;
        }
    }
}

int amqp_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    struct amqp_out *o = ctx;
    char why[400], rk[256], fallback[48];

    if (grow(o, n) != 0) {
        return GUST_ENOMEM;
    }
    memset(o->settled, 0, n);
    memset(o->returned, 0, n);
    if (o->link.conn) {
        amqp_maybe_release_buffers(o->link.conn);
    }
    amqp_bytes_t exchange = amqp_cstring_bytes(o->k.exchange);
    /* Normally one round: the whole batch, then its confirms. */
    size_t step = gust_clock_mono_ms() < o->isolate_until ? 1 : n;
    for (size_t from = 0; from < n; from += step) {
        size_t to = from + step < n ? from + step : n;
        if (ready(o, why, sizeof(why)) != 0) {
            retry_rest(o, results, n, why);
            return 0;
        }
        for (size_t i = to; i < n; i++) {
            o->settled[i] = o->settled[i] ? o->settled[i] : 2;
        }
        size_t sent = 0;
        for (size_t i = from; i < to; i++) {
            if (o->settled[i]) {
                continue;
            }
            if (gust_tpl_render(o->rk, &msgs[i], NULL, NULL, rk, sizeof(rk), why, sizeof(why)) != 0) {
                char text[200];
                snprintf(text, sizeof(text), "amqp: routing_key: %.170s", why);
                settle(o, results, i, GUST_REJECTED, text);
                continue;
            }
            amqp_basic_properties_t p;
            snprintf(fallback, sizeof(fallback), "gust:%" PRIu64, msgs[i].stream_seq);
            amqp_headers_to_props(&msgs[i], fallback, &p, o->fields);
            amqp_bytes_t body = {msgs[i].len, (void *)msgs[i].data};
            int rc = amqp_basic_publish(o->link.conn, 1, exchange, amqp_cstring_bytes(rk), 1, 0, &p, body);
            if (rc != AMQP_STATUS_OK) {
                snprintf(why, sizeof(why), "basic.publish: %s", amqp_error_string2(rc));
                amqp_link_drop(&o->link, why);
                o->confirming = 0;
                unpark(o, n);
                retry_rest(o, results, n, why);
                return 0;
            }
            o->seq[i] = o->next_seq++;
            sent++;
        }
        if (sent > 0) {
            wait_confirms(o, msgs, results, n);
        }
        unpark(o, n);
        if (!o->link.conn && o->link.retry_at > gust_clock_mono_ms()) {
            retry_rest(o, results, n, o->link.last_error);
            return 0;
        }
    }
    return 0;
}

size_t amqp_out_counters(void *ctx, struct gust_plugin_counter *c, size_t max)
{
    struct amqp_out *o = ctx;
    const struct gust_plugin_counter all[] = {
        {"connected", (uint64_t)atomic_load(&o->link.connected)},
        {"published", (uint64_t)atomic_load(&o->published)},
        {"refused", (uint64_t)atomic_load(&o->refused)},
        {"returned", (uint64_t)atomic_load(&o->returns)},
        {"retried", (uint64_t)atomic_load(&o->retried)},
        {"connects", (uint64_t)atomic_load(&o->link.connects)},
        {"connection_errors", (uint64_t)atomic_load(&o->link.errors)},
    };
    return gust_plugin_counters_put(c, max, all, sizeof(all) / sizeof(all[0]));
}

void amqp_out_stop(void *ctx)
{
    struct amqp_out *o = ctx;
    amqp_link_close(&o->link);
    o->confirming = 0;
    amqp_host->log(o->inst, GUST_LOG_INFO,
                   "stopped: %" PRIu64 " published and confirmed, %" PRIu64 " refused by the broker (%" PRIu64
                   " returned unroutable), %" PRIu64 " retried",
                   (uint64_t)atomic_load(&o->published), (uint64_t)atomic_load(&o->refused),
                   (uint64_t)atomic_load(&o->returns), (uint64_t)atomic_load(&o->retried));
}

void amqp_out_destroy(void *ctx)
{
    struct amqp_out *o = ctx;
    amqp_conf_free(&o->conf);
    gust_tpl_free(o->rk);
    free(o->seq);
    free(o->returned);
    free(o->settled);
    free(o);
}
