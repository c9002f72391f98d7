/* redis_out: the bus -> XADD to a Redis stream, each message acked only once Redis
 * answered for it.
 *
 *   sink rout { use redis_out; source ev.redis; url redis://127.0.0.1:6379; stream s_out; }
 *
 * A batch is one pipeline: every XADD formatted into one buffer and written at once,
 * then every reply read. Redis down (no
 * connection, an I/O error, a timeout, or a transient error reply such as LOADING or
 * OOM): RETRY, the bus keeps the message and redelivers it, never dead-lettered. A
 * command refused for good (WRONGTYPE: the key is not a stream): REJECTED with Redis's
 * error, dead-lettered after max_deliver. A message stored by Redis whose reply was lost
 * with the connection is written again on the retry (at least once). */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis.h"

struct redis_out_keys {
    struct redis_keys common;
    const char *stream;
    int64_t maxlen;
};

const struct gust_schema_key redis_out_schema[] = {
    REDIS_COMMON_KEYS(struct redis_out_keys),
    GUST_KEY(struct redis_out_keys, stream, STR, NULL, GUST_K_REQUIRED, "the stream to append to (XADD)"),
    GUST_KEY_RANGE(struct redis_out_keys, maxlen, INT, "0", GUST_K_ZERO_OFF, 1, INT64_MAX,
                   "trim the stream to about this many entries (XADD MAXLEN ~ N); 0: never"),
    GUST_KEY_END,
};

struct redis_out {
    struct gust_instance *inst;
    struct redis_out_keys k;
    struct redis_conf conf;
    struct redis_conn conn;
    char maxlen[24];
    /* The batch's XADDs in Redis's protocol, their common head formatted once: the
     * deliver thread's own, reused from batch to batch. */
    struct gust_buf head, cmds;
    atomic_uint_fast64_t written, rejected, retried;
};

/* One bulk string of Redis's protocol ($<len>\r\n<bytes>\r\n; the length written by
 * hand: snprintf was a visible part of a batch's cost). */
static int put_bulk(struct gust_buf *b, const char *s, size_t len)
{
    char digits[20];
    size_t nd = gust_u64_dec(len, digits);
    if (gust_buf_reserve(b, 1 + nd + 2 + len + 2) != 0) {
        return GUST_ENOMEM;
    }
    char *p = b->data + b->len;
    *p++ = '$';
    memcpy(p, digits, nd);
    p += nd;
    memcpy(p, "\r\n", 2);
    memcpy(p + 2, s, len);
    memcpy(p + 2 + len, "\r\n", 2);
    b->len = (size_t)(p + 2 + len + 2 - b->data);
    return 0;
}

/* XADD's arguments before the message: XADD stream [MAXLEN ~ N] * field. */
static int format_head(struct redis_out *o)
{
    const char *argv[7];
    int argc = 0;
    argv[argc++] = "XADD";
    argv[argc++] = o->k.stream;
    if (o->k.maxlen > 0) {
        argv[argc++] = "MAXLEN";
        argv[argc++] = "~";
        argv[argc++] = o->maxlen;
    }
    argv[argc++] = "*";
    argv[argc++] = o->k.common.field;
    if (gust_buf_printf(&o->head, "*%d\r\n", argc + 1) != 0) {
        return GUST_ENOMEM;
    }
    for (int i = 0; i < argc; i++) {
        if (put_bulk(&o->head, argv[i], strlen(argv[i])) != 0) {
            return GUST_ENOMEM;
        }
    }
    return 0;
}

int redis_out_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    const struct gust_host_api *h = redis_host;
    struct redis_out *o = calloc(1, sizeof(*o));
    int rc;

    if (!o) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    o->inst = inst;
    if ((rc = gust_sdk_bind(h, cfg, redis_out_schema, &o->k, err)) != 0 ||
        (rc = redis_conf_load(&o->conf, &o->k.common, cfg, err)) != 0) {
        redis_out_destroy(o);
        return rc;
    }
    if (!o->k.stream[0]) {
        redis_out_destroy(o);
        return gust_err_set(err, GUST_ECONFIG, "%s: stream: must not be empty", h->cfg_where(cfg, "stream"));
    }
    snprintf(o->maxlen, sizeof(o->maxlen), "%" PRId64, o->k.maxlen);
    if (format_head(o) != 0) {
        redis_out_destroy(o);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    redis_conn_init(&o->conn, inst, &o->conf);
    *ctx = o;
    return 0;
}

static void retry_all(struct gust_result *results, size_t from, size_t n, const char *why)
{
    for (size_t i = from; i < n; i++) {
        results[i].status = GUST_RETRY;
        snprintf(results[i].error, sizeof(results[i].error), "redis: %.190s", why);
    }
}

int redis_out_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    struct redis_out *o = ctx;
    char why[300];

    if (redis_conn_ensure(&o->conn, why, sizeof(why)) != 0) {
        retry_all(results, 0, n, why);
        atomic_fetch_add(&o->retried, n);
        return 0;
    }
    redisContext *c = o->conn.ctx;
    /* hiredis would format each command into a buffer of its own and copy it into its
     * output buffer; the batch is formatted here once and handed over in one piece. */
    o->cmds.len = 0;
    for (size_t i = 0; i < n; i++) {
        if (gust_buf_append(&o->cmds, o->head.data, o->head.len) != 0 ||
            put_bulk(&o->cmds, msgs[i].data, msgs[i].len) != 0) {
            retry_all(results, 0, n, "out of memory");
            atomic_fetch_add(&o->retried, n);
            return 0;
        }
    }
    if (redisAppendFormattedCommand(c, o->cmds.data, o->cmds.len) != REDIS_OK) {
        snprintf(why, sizeof(why), "XADD: %s", c->errstr);
        redis_conn_drop(&o->conn, why);
        retry_all(results, 0, n, why);
        atomic_fetch_add(&o->retried, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
            snprintf(why, sizeof(why), "XADD: %s", c->errstr[0] ? c->errstr : "no reply");
            redis_conn_drop(&o->conn, why);
            retry_all(results, i, n, why);
            atomic_fetch_add(&o->retried, n - i);
            return 0;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            int transient = redis_error_transient(r->str);
            results[i].status = transient ? GUST_RETRY : GUST_REJECTED;
            snprintf(results[i].error, sizeof(results[i].error), "redis XADD %.60s: %.120s", o->k.stream,
                     r->str);
            atomic_fetch_add(transient ? &o->retried : &o->rejected, 1);
        } else {
            results[i].status = GUST_DELIVERED;
            atomic_fetch_add(&o->written, 1);
        }
        freeReplyObject(r);
    }
    return 0;
}

size_t redis_out_counters(void *ctx, struct gust_plugin_counter *c, size_t max)
{
    struct redis_out *o = ctx;
    const struct gust_plugin_counter all[] = {
        {"connected", (uint64_t)atomic_load(&o->conn.connected)},
        {"written", (uint64_t)atomic_load(&o->written)},
        {"refused", (uint64_t)atomic_load(&o->rejected)},
        {"retried", (uint64_t)atomic_load(&o->retried)},
        {"connects", (uint64_t)atomic_load(&o->conn.connects)},
        {"connection_errors", (uint64_t)atomic_load(&o->conn.errors)},
    };
    return gust_plugin_counters_put(c, max, all, sizeof(all) / sizeof(all[0]));
}

void redis_out_stop(void *ctx)
{
    struct redis_out *o = ctx;
    redis_conn_close(&o->conn);
    redis_host->log(o->inst, GUST_LOG_INFO,
                    "stopped: %" PRIu64 " written, %" PRIu64 " refused by redis, %" PRIu64 " retried",
                    (uint64_t)atomic_load(&o->written), (uint64_t)atomic_load(&o->rejected),
                    (uint64_t)atomic_load(&o->retried));
}

void redis_out_destroy(void *ctx)
{
    struct redis_out *o = ctx;
    redis_conf_free(&o->conf);
    gust_buf_free(&o->head);
    gust_buf_free(&o->cmds);
    free(o);
}
