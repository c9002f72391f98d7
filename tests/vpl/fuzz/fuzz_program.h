/* The program the engine fuzz targets run: filters, sequences (Kleene, absence,
 * cancellation, longest) and windows of every kind, so that inputs reach all the state
 * an engine keeps. */
#ifndef FUZZ_PROGRAM_H
#define FUZZ_PROGRAM_H

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

#endif
