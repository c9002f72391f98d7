/* gust-bench-redis-relay HOST PORT SRC DST N [BATCH]: Redis's own side of
 * bench/brokers.sh, on hiredis. Moves N entries from stream SRC to stream DST with the
 * guarantee gust's redis_in -> redis_out path gives, and no bus between: a consumer
 * group (bench, created from the first entry if missing) reads BATCH entries (default
 * 256, redis_in's default) with XREADGROUP, then one pipelined write appends each
 * entry's field `data` to DST (XADD DST * data VALUE) and, only after every XADD is
 * answered, acks the batch (XACK). Prints {"moved":N,"seconds":S}; exits 1 on an error
 * reply or a dropped connection, 2 on bad arguments. */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bad_reply(redisContext *c, redisReply *r, const char *what)
{
    fprintf(stderr, "gust-bench-redis-relay: %s: %s\n", what,
            r == NULL                      ? c->errstr
            : r->type == REDIS_REPLY_ERROR ? r->str
                                           : "unexpected reply");
    return 1;
}

/* The value of field `data` in an entry's field list (NULL when it has none). */
static const redisReply *data_of(const redisReply *fields)
{
    for (size_t i = 0; fields->type == REDIS_REPLY_ARRAY && i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i];
        if (k->type == REDIS_REPLY_STRING && k->len == 4 && memcmp(k->str, "data", 4) == 0) {
            return fields->element[i + 1];
        }
    }
    return NULL;
}

/* Moves one batch (the entries of XREADGROUP's reply r); returns how many, -1 on error. */
static long move_batch(redisContext *c, const char *src, const char *dst, redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->elements < 2) {
        return 0; /* nil: nothing new */
    }
    const redisReply *entries = r->element[0]->element[1];
    size_t n = entries->elements;
    const char **argv = malloc(sizeof(*argv) * (n + 3));
    size_t *lens = malloc(sizeof(*lens) * (n + 3));
    if (argv == NULL || lens == NULL) {
        free(argv);
        free(lens);
        return -1;
    }
    argv[0] = "XACK";
    lens[0] = 4;
    argv[1] = src;
    lens[1] = strlen(src);
    argv[2] = "bench";
    lens[2] = 5;
    for (size_t i = 0; i < n; i++) {
        const redisReply *e = entries->element[i];
        const redisReply *v = data_of(e->element[1]);
        if (v == NULL || v->type != REDIS_REPLY_STRING) {
            fprintf(stderr, "gust-bench-redis-relay: entry %s has no field data\n", e->element[0]->str);
            free(argv);
            free(lens);
            return -1;
        }
        const char *xadd[] = {"XADD", dst, "*", "data", v->str};
        size_t xlen[] = {4, strlen(dst), 1, 4, v->len};
        redisAppendCommandArgv(c, 5, xadd, xlen);
        argv[3 + i] = e->element[0]->str;
        lens[3 + i] = e->element[0]->len;
    }
    long ok = (long)n;
    for (size_t i = 0; i < n; i++) {
        redisReply *x = NULL;
        if (redisGetReply(c, (void **)&x) != REDIS_OK || x->type == REDIS_REPLY_ERROR) {
            bad_reply(c, x, "XADD");
            ok = -1;
        }
        freeReplyObject(x);
        if (ok < 0) {
            break;
        }
    }
    if (ok >= 0) {
        redisReply *a = redisCommandArgv(c, (int)(n + 3), argv, lens);
        if (a == NULL || a->type != REDIS_REPLY_INTEGER || (size_t)a->integer != n) {
            bad_reply(c, a, "XACK");
            ok = -1;
        }
        freeReplyObject(a);
    }
    free(argv);
    free(lens);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: gust-bench-redis-relay HOST PORT SRC DST N [BATCH]\n");
        return 2;
    }
    const char *src = argv[3], *dst = argv[4];
    uint64_t n = strtoull(argv[5], NULL, 10);
    long batch = argc > 6 ? atol(argv[6]) : 256;
    if (n == 0 || batch < 1) {
        fprintf(stderr, "usage: gust-bench-redis-relay HOST PORT SRC DST N [BATCH]\n");
        return 2;
    }
    redisContext *c = redisConnect(argv[1], atoi(argv[2]));
    if (c == NULL || c->err) {
        fprintf(stderr, "gust-bench-redis-relay: connect: %s\n", c ? c->errstr : "out of memory");
        return 1;
    }
    redisReply *r = redisCommand(c, "XGROUP CREATE %s bench 0 MKSTREAM", src);
    if (r == NULL || (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9) != 0)) {
        return bad_reply(c, r, "XGROUP CREATE");
    }
    freeReplyObject(r);
    char count[24];
    snprintf(count, sizeof(count), "%ld", batch);
    double t0 = now_s(), idle_since = t0;
    uint64_t moved = 0;
    while (moved < n) {
        r = redisCommand(c, "XREADGROUP GROUP bench relay COUNT %s BLOCK 1000 STREAMS %s >", count, src);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            return bad_reply(c, r, "XREADGROUP");
        }
        long got = move_batch(c, src, dst, r);
        freeReplyObject(r);
        if (got < 0) {
            return 1;
        }
        double t = now_s();
        if (got > 0) {
            idle_since = t;
        } else if (t - idle_since > 30) {
            fprintf(stderr,
                    "gust-bench-redis-relay: %" PRIu64 " of %" PRIu64 " moved, nothing new for 30 s\n", moved,
                    n);
            return 1;
        }
        moved += (uint64_t)got;
    }
    printf("{\"moved\":%" PRIu64 ",\"seconds\":%.3f}\n", moved, now_s() - t0);
    redisFree(c);
    return 0;
}
