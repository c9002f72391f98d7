/* One blocking hiredis connection with timeouts, and its reconnect policy: 100 ms
 * doubling to 10 s between attempts, reset once a connection has stayed up 10 s (a
 * server that accepts and then drops us is not hammered). A lost connection and the
 * recovery are logged once each; repeated failures only when the reason changes. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "redis.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

void redis_conn_init(struct redis_conn *c, struct gust_instance *inst, const struct redis_conf *conf)
{
    memset(c, 0, sizeof(*c));
    c->inst = inst;
    c->conf = conf;
    c->backoff_ms = BACKOFF_MIN_MS;
}

int redis_error_transient(const char *msg)
{
    static const char *const transient[] = {"LOADING",  "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN",
                                            "READONLY", "OOM",  "NOAUTH",   "NOREPLICAS",  "MISCONF"};
    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++) {
        size_t n = strlen(transient[i]);
        if (strncmp(msg, transient[i], n) == 0 && (msg[n] == ' ' || msg[n] == '\0')) {
            return 1;
        }
    }
    return 0;
}

static void failed(struct redis_conn *c, const char *why)
{
    atomic_fetch_add(&c->errors, 1);
    if (strcmp(why, c->last_error) != 0) {
        redis_host->log(c->inst, GUST_LOG_WARN, "redis %s: %s (retrying with backoff up to 10s)",
                        c->conf->shown, why);
        snprintf(c->last_error, sizeof(c->last_error), "%s", why);
        redis_host->set_error(c->inst, why);
    }
    c->retry_at = gust_clock_mono_ms() + c->backoff_ms;
    c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

/* The password: the first line of password_file, read at each connect so a rotated
 * file is picked up. */
static int read_password(const char *path, char *out, size_t outsz, char *why, size_t whysz)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, whysz, "password_file %s: cannot be read", path);
        return -1;
    }
    if (!fgets(out, (int)outsz, f)) {
        out[0] = '\0';
    }
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

/* A command during the handshake; 0 when Redis said OK. */
static int handshake(redisContext *ctx, int argc, const char **argv, char *why, size_t whysz)
{
    redisReply *r = redisCommandArgv(ctx, argc, argv, NULL);
    if (!r) {
        snprintf(why, whysz, "%s: %s", argv[0], ctx->errstr);
        return -1;
    }
    int ok = r->type != REDIS_REPLY_ERROR;
    if (!ok) {
        snprintf(why, whysz, "%s refused: %s", argv[0], r->str);
    }
    freeReplyObject(r);
    return ok ? 0 : -1;
}

int redis_conn_ensure(struct redis_conn *c, char *why, size_t whysz)
{
    const struct redis_conf *cf = c->conf;
    struct timeval tv = {.tv_sec = cf->timeout_ms / 1000, .tv_usec = (cf->timeout_ms % 1000) * 1000};
    char pw[512], db[16];

    if (c->ctx) {
        if (c->backoff_ms > BACKOFF_MIN_MS && gust_clock_mono_ms() - c->up_since > 10000) {
            c->backoff_ms = BACKOFF_MIN_MS;
        }
        return 0;
    }
    if (gust_clock_mono_ms() < c->retry_at) {
        snprintf(why, whysz, "%s", c->last_error[0] ? c->last_error : "not connected");
        return GUST_EAGAIN;
    }
    redisContext *ctx = redisConnectWithTimeout(cf->host, cf->port, tv);
    if (!ctx || ctx->err) {
        snprintf(why, whysz, "connect: %s", ctx ? ctx->errstr : "out of memory");
        redisFree(ctx);
        failed(c, why);
        return GUST_EAGAIN;
    }
    redisSetTimeout(ctx, tv);
    redisEnableKeepAlive(ctx);
    int rc = 0;
    if (cf->password_file) {
        rc = read_password(cf->password_file, pw, sizeof(pw), why, whysz);
        if (rc == 0) {
            const char *argv[3] = {"AUTH", cf->user ? cf->user : pw, pw};
            rc = handshake(ctx, cf->user ? 3 : 2, argv, why, whysz);
        }
        memset(pw, 0, sizeof(pw));
    }
    if (rc == 0 && cf->db != 0) {
        snprintf(db, sizeof(db), "%d", cf->db);
        const char *argv[2] = {"SELECT", db};
        rc = handshake(ctx, 2, argv, why, whysz);
    }
    if (rc != 0) {
        redisFree(ctx);
        failed(c, why);
        return GUST_EAGAIN;
    }
    c->ctx = ctx;
    c->up_since = gust_clock_mono_ms();
    atomic_fetch_add(&c->connects, 1);
    atomic_store(&c->connected, 1);
    redis_host->log(c->inst, GUST_LOG_INFO, "%s redis %s", c->was_up ? "reconnected to" : "connected to",
                    cf->shown);
    c->was_up = 1;
    c->last_error[0] = '\0';
    redis_host->set_error(c->inst, NULL);
    return 0;
}

void redis_conn_drop(struct redis_conn *c, const char *why)
{
    if (c->ctx) {
        redisFree(c->ctx);
        c->ctx = NULL;
        atomic_store(&c->connected, 0);
    }
    failed(c, why);
}

int64_t redis_conn_wait_ms(const struct redis_conn *c)
{
    int64_t left = c->retry_at - gust_clock_mono_ms();
    return c->ctx || left < 0 ? 0 : left;
}

void redis_conn_close(struct redis_conn *c)
{
    if (c->ctx) {
        redisFree(c->ctx);
        c->ctx = NULL;
        atomic_store(&c->connected, 0);
    }
}
