/* libFuzzer target: any bytes as input events. Each line is fed as one event to a
 * program with filters, sequences (Kleene, absence, cancellation) and windows of every
 * kind, so hostile payloads reach the decoder, the evaluator and the state. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpl.h"

static const char program[] =
    "event A:\n  x: int\nevent B:\n  x: int\nevent C:\n  x: int\n"
    "stream F = A.where(x > 1 and s.ends_with(\"z\") or m.k == 1)\n"
    "    .emit(x: x, s: upper(s), n: len(arr), j: split(s, \",\").last(), v: to_float(s) * 2)\n"
    "stream Seq = A as a -> all B where x >= a.x as bs -> C as c\n"
    "    .within(10s).partition_by(k).emit(a: a.x, n: count(bs), t: sum(bs.x), c: c.x)\n"
    "stream Lng = A as a -> all B as bs -> C as c .stnm().longest().partition_by(k)\n"
    "    .emit(n: count(bs))\n"
    "pattern Gap = A as a -> NOT B where k == a.k within 5s partition by k\n"
    "stream Abs = Gap .not(C) .emit(k: a.k)\n"
    "stream Tail = A as a -> all B as bs .within(1m) .emit(n: count(bs), ids: collect(bs.x))\n"
    "stream W1 = A.window(3).aggregate(n: count(), s: sum(x), d: stddev(x)).emit(n: n, s: s, d: d)\n"
    "stream W2 = B.partition_by(k).window(2s).aggregate(n: count(), f: first(s)).emit(n: n, f: f)\n"
    "stream W3 = C.window(session: 1s).aggregate(n: count(), e: ema(x, 3)).emit(n: n, e: e)\n"
    "stream W4 = A.window(5s, sliding: 1s).aggregate(d: count_distinct(k)).having(d > 1).emit(d: d)\n"
    "stream W5 = B.window(4, sliding: 2).aggregate(m: max(x) - min(x)).emit(m: m)\n";

static struct vpl_program *prog;

static void sink(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)ud, (void)stream, (void)topic, (void)json, (void)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vpl_error err;
    if (prog == NULL && vpl_program_compile(program, sizeof(program) - 1, "fuzz", &prog, &err) != 0)
        abort();
    struct vpl_limits lim = vpl_limits_default();
    lim.max_partitions = 64;
    lim.max_runs_per_partition = 64;
    lim.max_window_events = 64;
    lim.max_depth = 8;
    lim.max_string = 256;
    struct vpl_engine *eng = NULL;
    if (vpl_engine_create(prog, &lim, &eng, &err) != 0)
        abort();
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        vpl_engine_feed_json(eng, p, n, "A", 0, sink, NULL);
        p += n + 1;
    }
    struct vpl_stats st;
    vpl_engine_stats(eng, &st);
    vpl_engine_destroy(eng);
    return 0;
}
