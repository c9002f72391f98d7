/* gust-bench-vpl: the VPL correlation engine alone, in memory (bench/WORKLOAD.md).
 *
 *   orders    rules/bench_orders.vpl over N orders events (the bench/WORKLOAD.md shape).
 *   sequence  rules/bench_sequence.vpl over the bench/WORKLOAD.md pair generator: per pair i a
 *             SysmonNetworkConnect (port 445) at t = T0 + i on host h(i % HOSTS), and the
 *             SysmonProcessCreate (parent ...\services.exe) of the same host at T0 + i + LAG,
 *             published LAG pairs later. Rate per LAG, open runs (measured, not assumed),
 *             state bytes and RSS per open run.
 *   nopart    the same program with its .partition_by line deleted, at small LAGs only:
 *             every ProcessCreate is offered to every open run, so the cost per event
 *             grows with LAG and the whole run is quadratic in it.
 *   join      bench/vpl_join.vpl, join(Order, Payment).on(...).window(1s): per step j an
 *             Order (id o<j>) and the Payment of order j - 10, 10 ms of event time
 *             apart, so the window holds about a hundred events of each source; every
 *             tenth payment is short and .where() drops its pair.
 *   fn        bench/vpl_fn.vpl: the orders shape with varying totals, each given a band by
 *             a `fn` block (the tool computes the band to check every alert).
 *
 * Every measurement runs in a forked child (a clean heap, so the RSS delta is its own),
 * REPS times by each method, alternated; medians are reported. Before any timing, a
 * checked pass of each configuration verifies the alerts: count == pairs, every
 * NetworkConnect (its DestinationIp encodes the pair index) matched exactly once, a
 * sample alert's fields; every timed run checks the alert count. Every event is
 * distinct (never a cycled pool), written as JSON by the same generator for both methods:
 *   cold  (rates, rate_median, cpu_rate_median, ...): all of them before the clock
 *         starts (130 MB for 400 000 orders), so the engine reads each event from DRAM.
 *   warm  (warm_rates, warm_rate_median, warm_cpu_rate_median, ...): the next CHUNK
 *         events written into one reused buffer just before they are fed, as a detect
 *         unit's fetch of a batch leaves the messages nats.c has just read in cache;
 *         only the feeds are timed (the sum of each chunk's interval). What a unit sees,
 *         so the bench/WORKLOAD.md targets read it.
 *
 * Options (defaults in brackets):
 *   --rules DIR            directory of bench_orders.vpl and bench_sequence.vpl [source rules/]
 *   --programs DIR         directory of vpl_join.vpl and vpl_fn.vpl [source bench/]
 *   --reps R               timed runs per measurement [3]
 *   --orders N             orders events, 0 skips [200000]
 *   --pairs P              pairs per sequence run, at least 3*LAG are used [200000]
 *   --lags L,L,..          [1,100,1000,10000,30000,100000]
 *   --hosts H              hosts of the generator [500]
 *   --distinct             also run the "distinct" generator: max(HOSTS, LAG+1) hosts, so no
 *                          host has two runs open and exactly LAG+1 runs stay open
 *   --nopart-lags L,..     [1,100,1000]; "none" skips
 *   --nopart-pairs P       [50000]
 *   --join N               join steps (an order and a payment each), 0 skips [200000]
 *   --fn N                 fn orders, 0 skips [200000]
 *   --only orders|sequence|nopart|join|fn   one part only (repeatable)
 *   --dump-events FILE     write the sequence events (first LAG, --pairs, --hosts) as JSON
 *                          lines and exit: bench/detect.sh publishes exactly these
 *   --chunk K              the warm method's events per chunk [256: a unit's fetch batch]
 *   --method cold|warm     time one method only [both]
 *   --snapshot             checkpoints instead of rates (section "snapshot"): for each LAG,
 *                          the sequence run is snapshot at its peak of open runs and goes
 *                          on in a new engine restored from it (its alerts checked as in
 *                          every run); snapshot size per open run against the state's
 *                          bytes per open run, and the times to take and to restore it
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vpl.h"

#ifndef BENCH_SOURCE_DIR
#define BENCH_SOURCE_DIR "."
#endif

#define T0 INT64_C(1600000000000)
#define MAX_LAGS 16

/* ---- small utilities ------------------------------------------------------------- */

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gust-bench-vpl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        die("cannot read %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *p = malloc(cap);
    for (size_t r; p != NULL && (r = fread(p + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (n + 1 == cap)
            p = realloc(p, cap *= 2);
    }
    fclose(f);
    if (p == NULL)
        die("out of memory");
    p[n] = '\0';
    *len = n;
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0) {
        return 0; /* a method not run (--method) */
    }
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- events -------------------------------------------------------------------------- */

struct events {
    char *mem;   /* every event, back to back */
    size_t *off; /* start of event i */
    uint32_t *len;
    uint8_t *kind; /* sequence: 0 network connect, 1 process create */
    size_t n, size, cap;
};

static void ev_add(struct events *e, const char *s, int len, uint8_t kind)
{
    if (e->size + (size_t)len + 1 > e->cap) {
        e->cap = (e->cap ? e->cap * 2 : 1 << 20) + (size_t)len;
        if ((e->mem = realloc(e->mem, e->cap)) == NULL)
            die("out of memory");
    }
    memcpy(e->mem + e->size, s, (size_t)len);
    e->mem[e->size + (size_t)len] = '\n';
    e->off[e->n] = e->size;
    e->len[e->n] = (uint32_t)len;
    e->kind[e->n] = kind;
    e->size += (size_t)len + 1;
    e->n++;
}

static void ev_init(struct events *e, size_t n)
{
    memset(e, 0, sizeof(*e));
    e->off = malloc(n * sizeof(*e->off));
    e->len = malloc(n * sizeof(*e->len));
    e->kind = malloc(n);
    if (e->off == NULL || e->len == NULL || e->kind == NULL)
        die("out of memory");
}

static void ev_free(struct events *e)
{
    free(e->mem);
    free(e->off);
    free(e->len);
    free(e->kind);
}

static const char *const countries[] = {"France", "Germany", "Italy", "Spain"};

/* The fn program's total of order i: 0.50 .. 799.50, so that every band occurs. */
static long fn_total(long i)
{
    return (i * 37) % 800;
}

/* What bench/vpl_fn.vpl's band() gives order i. */
static const char *fn_band(long i)
{
    double total = (double)fn_total(i) + 0.5;
    const char *country = countries[i % 4];
    int eu =
        strcmp(country, "France") == 0 || strcmp(country, "Germany") == 0 || strcmp(country, "Italy") == 0;
    if (total >= 500.0)
        return eu ? "eu-high" : "high";
    if (total >= 100.0)
        return eu && total * 0.2 >= 50.0 ? "eu-mid" : "mid";
    return "low";
}

/* The bench/WORKLOAD.md orders event i; t has a microsecond fraction. With vary, the
 * total of order i is fn_total(i) + 0.50 instead of 347.00. */
static int orders_event(char *buf, size_t cap, long i, int vary)
{
    char total[32];
    long id = 1001 + i;
    if (vary)
        snprintf(total, sizeof(total), "%ld.50", fn_total(i));
    else
        snprintf(total, sizeof(total), "347.00");
    return snprintf(buf, cap,
                    "{\"id\":\"SO#%ld\",\"email\":\"Jane.Doe@ACME.com\",\"total_price\":\"%s\","
                    "\"t\":%" PRId64 ".%03ld,\"shipping_address\":{\"country\":\"%s\"},\"line_items\":["
                    "{\"sku\":\"A-12\",\"quantity\":\"2\",\"unit_price_cents\":9900},"
                    "{\"sku\":\"B-07\",\"quantity\":\"1\",\"unit_price_cents\":14900},"
                    "{\"sku\":\"C-33\",\"quantity\":\"4\",\"unit_price_cents\":450}]}",
                    id, total, INT64_C(1764400000000) + i, i % 1000, countries[i % 4]);
}

#define JOIN_LAG 10     /* steps between an order and its payment */
#define JOIN_STEP_MS 10 /* event time of a step */

/* bench/vpl_join.vpl's events: step j publishes Order j (j < n) and then the Payment of
 * order j - JOIN_LAG, both at T0 + j * JOIN_STEP_MS. Order i's total is i % 500 + 0.25;
 * its payment pays that, or one less when i % 10 == 9. */
static int join_order(char *buf, size_t cap, long j)
{
    int64_t t = T0 + (int64_t)j * JOIN_STEP_MS;
    return snprintf(buf, cap,
                    "{\"event_type\":\"Order\",\"ts\":%" PRId64 ",\"id\":\"o%ld\",\"total\":%ld.25,"
                    "\"customer\":\"c%ld\"}",
                    t, j, j % 500, j % 500);
}

static int join_payment(char *buf, size_t cap, long j)
{
    int64_t t = T0 + (int64_t)j * JOIN_STEP_MS;
    long i = j - JOIN_LAG;
    return snprintf(buf, cap,
                    "{\"event_type\":\"Payment\",\"ts\":%" PRId64 ",\"order_id\":\"o%ld\",\"amount\":%ld.25,"
                    "\"method\":\"card\"}",
                    t, i, i % 500 - (i % 10 == 9));
}

/* The bench/WORKLOAD.md sequence generator (the events rules/bench_sequence.vpl pairs):
 * step j publishes the NetworkConnect of pair j (j < pairs) and then the ProcessCreate of
 * pair j - lag (j >= lag). DestinationIp encodes the pair index i, so an alert names the
 * run it closed; the ProcessCreate's t (the alert's t) is T0 + i + lag. */
static int seq_connect(char *buf, size_t cap, long j, long hosts)
{
    int64_t t = T0 + j;
    return snprintf(buf, cap,
                    "{\"event_type\":\"SysmonNetworkConnect\",\"ts\":%" PRId64 ",\"t\":%" PRId64
                    ",\"Image\":\"C:\\\\tools\\\\svc.exe\",\"DestinationIp\":\"10.%ld.%ld.%ld\","
                    "\"DestinationPort\":445,\"Hostname\":\"h%ld\"}",
                    t, t, (j >> 16) & 255, (j >> 8) & 255, j & 255, j % hosts);
}

static int seq_process(char *buf, size_t cap, long j, long lag, long hosts)
{
    long i = j - lag;
    int64_t t = T0 + i + lag;
    return snprintf(buf, cap,
                    "{\"event_type\":\"SysmonProcessCreate\",\"ts\":%" PRId64 ",\"t\":%" PRId64
                    ",\"Image\":\"C:\\\\Windows\\\\System32\\\\cmd.exe\","
                    "\"ParentImage\":\"C:\\\\Windows\\\\System32\\\\services.exe\",\"Hostname\":\"h%ld\"}",
                    t, t, i % hosts);
}

enum workload { W_ORDERS, W_SEQUENCE, W_JOIN, W_FN };

/* A workload's events one after another, so that they can be written all at once
 * before the clock starts (the cold method) or a chunk at a time just before they are
 * fed (the warm one) with the same bytes. */
struct gen {
    enum workload w;
    long n; /* orders, join steps with an order, sequence pairs */
    long lag, hosts;
    long j;     /* the step of the next event */
    int second; /* the next event is the step's second one (join, sequence) */
    size_t total, done;
};

static void gen_start(struct gen *g, enum workload w, long n, long lag, long hosts)
{
    memset(g, 0, sizeof(*g));
    g->w = w;
    g->n = n;
    g->lag = w == W_JOIN ? JOIN_LAG : lag;
    g->hosts = hosts;
    g->total = w == W_ORDERS || w == W_FN ? (size_t)n : 2 * (size_t)n;
}

/* Writes the next event into buf; its length, or 0 when there is none left. */
static int gen_next(struct gen *g, char *buf, size_t cap, uint8_t *kind)
{
    if (g->done == g->total)
        return 0;
    if (g->w == W_ORDERS || g->w == W_FN) {
        *kind = 0;
        g->done++;
        return orders_event(buf, cap, g->j++, g->w == W_FN);
    }
    for (;;) {
        long j = g->j;
        if (!g->second) {
            g->second = 1;
            if (j < g->n) {
                *kind = 0;
                g->done++;
                return g->w == W_JOIN ? join_order(buf, cap, j) : seq_connect(buf, cap, j, g->hosts);
            }
        } else {
            g->second = 0;
            g->j++;
            if (j >= g->lag) {
                *kind = 1;
                g->done++;
                return g->w == W_JOIN ? join_payment(buf, cap, j)
                                      : seq_process(buf, cap, j, g->lag, g->hosts);
            }
        }
    }
}

/* Appends up to max of g's next events to e; how many. */
static size_t gen_fill(struct gen *g, struct events *e, size_t max)
{
    char buf[1024];
    uint8_t kind = 0;
    size_t k = 0;
    for (int len; k < max && (len = gen_next(g, buf, sizeof(buf), &kind)) > 0; k++)
        ev_add(e, buf, len, kind);
    return k;
}

/* ---- one measured run ------------------------------------------------------------------ */

struct check {
    enum workload w;
    long want; /* expected alerts */
    long lag;
    long nids;      /* ids are 0 .. nids - 1 */
    uint8_t *seen;  /* by id: orders and fn order_ref - 1001, sequence the pair of
                       DestinationIp, join the order of order_id */
    uint8_t *seenp; /* sequence: by the ProcessCreate's pair */
    long alerts, bad, dup, exact, proc_unique;
    int sample_ok;
    char sample[512];
};

static void on_alert_count(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)stream, (void)topic, (void)json, (void)len;
    ((struct check *)ud)->alerts++;
}

static long num_after(const char *json, size_t len, const char *key)
{
    const char *p = memmem(json, len, key, strlen(key));
    if (p == NULL)
        return -1;
    return strtol(p + strlen(key), NULL, 10);
}

static void on_alert_check(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)topic;
    struct check *c = ud;
    if (c->alerts++ == 0)
        snprintf(c->sample, sizeof(c->sample), "%s: %.*s", stream, (int)len, json);
    long id;
    if (c->w == W_ORDERS) {
        id = num_after(json, len, "\"order_ref\":\"") - 1001;
        if (c->alerts == 1)
            c->sample_ok =
                strcmp(stream, "Out") == 0 &&
                strstr(json, "\"order_ref\":\"1001\",\"customer_email\":\"jane.doe@acme.com\","
                             "\"total_eur\":347.0,\"country\":\"FR\",\"t\":1764400000000.0") != NULL;
    } else if (c->w == W_FN) {
        id = num_after(json, len, "\"order_ref\":\"") - 1001;
        char want[64];
        snprintf(want, sizeof(want), "\"band\":\"%s\",", id >= 0 ? fn_band(id) : "?");
        if (id >= 0 && memmem(json, len, want, strlen(want)) == NULL)
            id = -1; /* the wrong band */
        if (c->alerts == 1)
            c->sample_ok =
                strcmp(stream, "Out") == 0 &&
                strstr(json, "\"order_ref\":\"1001\",\"band\":\"low\",\"t\":1764400000000.0}") != NULL;
    } else if (c->w == W_JOIN) {
        id = num_after(json, len, "\"order_id\":\"o");
        if (id % 10 == 9)
            id = -1; /* a short payment: .where() drops it */
        if (c->alerts == 1)
            c->sample_ok = strcmp(stream, "Paid") == 0 &&
                           strstr(json, "\"order_id\":\"o0\",\"customer\":\"c0\",\"paid\":0.25,"
                                        "\"method\":\"card\"}") != NULL;
    } else {
        const char *ip = memmem(json, len, "\"target_ip\":\"10.", 16);
        long a = -1, b = -1, d = -1;
        if (ip == NULL || sscanf(ip + 16, "%ld.%ld.%ld", &a, &b, &d) != 3)
            id = -1;
        else
            id = (a << 16) | (b << 8) | d;
        long pt = num_after(json, len, ",\"t\":");
        long pi = pt < 0 ? -1 : (long)(pt - T0 - c->lag);
        if (pi >= 0 && pi < c->want) {
            c->exact += pi == id;
            c->proc_unique += !c->seenp[pi];
            c->seenp[pi] = 1;
        }
        if (c->alerts == 1) {
            /* Pair 0 closes first whatever LAG: its host, ip 10.0.0.0, t T0 + LAG. */
            char want[256];
            snprintf(want, sizeof(want),
                     "\"rule\":\"bench_lateral\",\"source_host\":\"h0\",\"target_ip\":\"10.0.0.0\","
                     "\"remote_process\":\"C:\\\\Windows\\\\System32\\\\cmd.exe\",\"t\":%" PRId64 "}",
                     T0 + c->lag);
            c->sample_ok = strcmp(stream, "LateralMovement") == 0 && strstr(json, want) != NULL;
        }
    }
    if (id < 0 || id >= c->nids)
        c->bad++;
    else if (c->seen[id])
        c->dup++;
    else
        c->seen[id] = 1;
}

struct result {
    int ok;
    double secs, cpu_secs, rate, cpu_rate;
    long alerts, bad, dup, exact, proc_unique;
    int sample_ok;
    uint64_t open_peak, state_at_peak, state_peak, partitions_peak, runs_dropped, partitions_dropped;
    double open_mean; /* sampled every 64 events over the timed feed */
    long rss_before, rss_peak, rss_after;
    /* --snapshot: taken at peak_at, the run going on in the engine restored from it */
    uint64_t snap_bytes, snap_open_runs, snap_state_bytes;
    double snap_ms, restore_ms;
    char sample[512];
    char err[256];
};

static int snapshot_mode;
static size_t chunk = 256; /* the warm method's events per chunk (--chunk) */
static int methods = 3;    /* bits: 1 cold, 2 warm (--method) */

/* Snapshots eng, restores it into a new engine that replaces it: the run goes on there. */
static void snapshot_and_restore(const struct vpl_program *prog, const struct vpl_limits *lim,
                                 struct vpl_engine **eng, struct result *r)
{
    struct vpl_stats st;
    vpl_engine_stats(*eng, &st);
    r->snap_open_runs = st.open_runs;
    r->snap_state_bytes = st.state_bytes;
    void *data = NULL;
    size_t len = 0;
    struct vpl_error err = {0};
    double t0 = mono_s();
    if (vpl_engine_snapshot(*eng, &data, &len, &err) != 0) {
        snprintf(r->err, sizeof(r->err), "snapshot: %.200s", err.msg);
        return;
    }
    double t1 = mono_s();
    struct vpl_engine *next = NULL;
    if (vpl_engine_create(prog, lim, &next, &err) != 0 || vpl_engine_restore(next, data, len, &err) != 0) {
        snprintf(r->err, sizeof(r->err), "restore: %.200s", err.msg);
        vpl_engine_destroy(next);
        free(data);
        return;
    }
    r->restore_ms = (mono_s() - t1) * 1e3;
    r->snap_ms = (t1 - t0) * 1e3;
    r->snap_bytes = len;
    free(data);
    vpl_engine_destroy(*eng);
    *eng = next;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Compiles src, feeds g0's events, fills r. The cold method (ev, every event written
 * before the clock starts: each is read from DRAM) times the whole feed; the warm one
 * (ev NULL) writes the next `chunk` events into one reused buffer, as a unit's fetch of
 * a batch leaves them in cache, and times only the engine's work on each chunk.
 * `peak_at`: the event index after which the RSS is read (the sequence's peak of open
 * runs, just before the first ProcessCreate). */
static void run_once(const char *src, size_t srclen, const struct gen *g0, const struct events *ev,
                     enum workload w, long want, long nids, long lag, size_t peak_at, int checked,
                     struct result *r)
{
    memset(r, 0, sizeof(*r));
    struct vpl_program *prog = NULL;
    struct vpl_engine *eng = NULL;
    struct vpl_error err = {0};
    struct vpl_limits lim = vpl_limits_default();
    lim.max_partitions = 1u << 30; /* the distinct-host generator needs LAG+1 partitions */
    if (vpl_program_compile(src, srclen, NULL, &prog, &err) != 0 ||
        vpl_engine_create(prog, &lim, &eng, &err) != 0) {
        snprintf(r->err, sizeof(r->err), "compile: %.200s", err.msg);
        return;
    }
    struct check c = {.w = w, .want = want, .lag = lag, .nids = nids};
    if (checked) {
        c.seen = calloc((size_t)nids + 1, 1);
        c.seenp = calloc((size_t)nids + 1, 1);
        if (c.seen == NULL || c.seenp == NULL)
            die("out of memory");
    }
    vpl_alert_fn cb = checked ? on_alert_check : on_alert_count;
    const char *dtype = w == W_ORDERS || w == W_FN ? "Order" : NULL;
    struct vpl_stats st;
    double open_sum = 0;
    long open_n = 0;
    struct gen g = *g0;
    struct events ck;
    size_t nev = ev != NULL ? ev->n : g.total;
    if (ev == NULL) {
        /* Every page of the chunk touched before the RSS is read: it is not the engine's. */
        ev_init(&ck, chunk);
        ck.cap = chunk * 1024;
        if ((ck.mem = malloc(ck.cap)) == NULL)
            die("out of memory");
        memset(ck.mem, 0, ck.cap);
    }
    malloc_trim(0); /* what the parent freed is not the engine's */
    r->rss_before = rss_kb();
    double secs = 0, cpus = 0;
    size_t i = 0;
    while (i < nev && r->err[0] == '\0') {
        const struct events *cur = ev;
        if (ev == NULL) {
            ck.n = ck.size = 0;
            if (gen_fill(&g, &ck, chunk) == 0)
                die("the generator ended at event %zu of %zu", i, nev);
            cur = &ck;
        }
        double t0 = mono_s(), c0 = cpu_s();
        for (size_t k = 0; k < cur->n; k++, i++) {
            int rc = vpl_engine_feed_json(eng, cur->mem + cur->off[k], cur->len[k], dtype, T0 + (int64_t)i,
                                          cb, &c);
            if (rc != 0) {
                snprintf(r->err, sizeof(r->err), "event %zu: %d %s", i, rc, vpl_engine_last_error(eng));
                break;
            }
            if (w == W_SEQUENCE && (i & 63) == 0) {
                vpl_engine_stats(eng, &st);
                open_sum += (double)st.open_runs;
                open_n++;
                if (st.open_runs > r->open_peak) {
                    r->open_peak = st.open_runs;
                    r->state_at_peak = st.state_bytes;
                }
                if (st.state_bytes > r->state_peak)
                    r->state_peak = st.state_bytes;
                if (st.partitions > r->partitions_peak)
                    r->partitions_peak = st.partitions;
            }
            if (i == peak_at) {
                /* Exact figures at the designed peak (outside the 1-in-64 sampling). */
                vpl_engine_stats(eng, &st);
                if (st.open_runs >= r->open_peak) {
                    r->open_peak = st.open_runs;
                    r->state_at_peak = st.state_bytes;
                }
                if (st.partitions > r->partitions_peak)
                    r->partitions_peak = st.partitions;
                r->rss_peak = rss_kb(); /* one read, ~10 us: noise at these counts */
                if (snapshot_mode) {
                    snapshot_and_restore(prog, &lim, &eng, r);
                    if (r->err[0] != '\0')
                        break;
                }
            }
        }
        cpus += cpu_s() - c0;
        secs += mono_s() - t0;
    }
    if (ev == NULL)
        ev_free(&ck);
    r->cpu_secs = cpus;
    r->secs = secs;
    r->rate = (double)nev / r->secs;
    r->cpu_rate = (double)nev / r->cpu_secs;
    r->rss_after = rss_kb();
    if (r->rss_peak == 0)
        r->rss_peak = r->rss_after;
    vpl_engine_stats(eng, &st);
    r->runs_dropped = st.runs_dropped;
    r->partitions_dropped = st.partitions_dropped;
    r->open_mean = open_n ? open_sum / (double)open_n : 0;
    r->alerts = c.alerts;
    r->bad = c.bad;
    r->dup = c.dup;
    r->exact = c.exact;
    r->proc_unique = c.proc_unique;
    r->sample_ok = c.sample_ok;
    snprintf(r->sample, sizeof(r->sample), "%s", c.sample);
    if (r->err[0] == '\0') {
        if (c.alerts != want)
            snprintf(r->err, sizeof(r->err), "alerts %ld != %ld", c.alerts, want);
        else if (st.alerts != (uint64_t)want)
            snprintf(r->err, sizeof(r->err), "engine stats alerts %" PRIu64 " != %ld", st.alerts, want);
        else if (checked && (c.bad || c.dup))
            snprintf(r->err, sizeof(r->err), "%ld bad and %ld duplicate ids", c.bad, c.dup);
        else if (checked && !c.sample_ok)
            snprintf(r->err, sizeof(r->err), "sample alert has unexpected fields");
        else if (st.open_runs != 0)
            snprintf(r->err, sizeof(r->err), "%" PRIu64 " runs still open at the end", st.open_runs);
    }
    r->ok = r->err[0] == '\0';
    vpl_engine_destroy(eng);
    vpl_program_destroy(prog);
    free(c.seen);
    free(c.seenp);
}

/* run_once in a forked child: a fresh heap for every measurement. */
static void run_forked(const char *src, size_t srclen, const struct gen *g, const struct events *ev,
                       enum workload w, long want, long nids, long lag, size_t peak_at, int checked,
                       struct result *r)
{
    int fd[2];
    fflush(stdout);
    fflush(stderr);
    if (pipe(fd) != 0)
        die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fd[0]);
        run_once(src, srclen, g, ev, w, want, nids, lag, peak_at, checked, r);
        ssize_t n = write(fd[1], r, sizeof(*r));
        _exit(n == (ssize_t)sizeof(*r) ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    while (got < sizeof(*r)) {
        ssize_t n = read(fd[0], (char *)r + got, sizeof(*r) - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != sizeof(*r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        memset(r, 0, sizeof(*r));
        snprintf(r->err, sizeof(r->err), "child failed (status %d)", status);
    }
}

/* ---- configurations ------------------------------------------------------------------------ */

#define MAX_REPS 64

struct config {
    const char *section; /* the JSON key of its group */
    const char *src;
    size_t srclen;
    struct gen gen;   /* its events */
    struct events ev; /* all of them, for the cold method */
    enum workload w;
    long want, nids, lag;
    size_t peak_at;
    struct result chk;            /* the checked pass (warm) */
    struct result res[MAX_REPS];  /* cold */
    struct result wres[MAX_REPS]; /* warm */
    int nres, nwres, ok;
};

static struct config *cfgs;
static int ncfg, capcfg;

/* Every event of g, written before anything is timed (the cold method). */
static void gen_all(struct events *e, const struct gen *g0)
{
    struct gen g = *g0;
    ev_init(e, g.total);
    gen_fill(&g, e, g.total);
}

static struct config *add_config(const char *section, const char *src, size_t len, enum workload w)
{
    if (ncfg == capcfg) {
        capcfg = capcfg ? capcfg * 2 : 16;
        if ((cfgs = realloc(cfgs, (size_t)capcfg * sizeof(*cfgs))) == NULL)
            die("out of memory");
    }
    struct config *c = &cfgs[ncfg++];
    memset(c, 0, sizeof(*c));
    c->section = section;
    c->src = src;
    c->srclen = len;
    c->w = w;
    c->peak_at = (size_t)-1;
    return c;
}

static void add_sequence(const char *section, const char *src, size_t len, const long *lags, int nlags,
                         long pairs_arg, long hosts, int distinct)
{
    for (int k = 0; k < nlags; k++) {
        struct config *c = add_config(section, src, len, W_SEQUENCE);
        c->lag = lags[k];
        c->want = c->nids = pairs_arg > 3 * c->lag ? pairs_arg : 3 * c->lag;
        long h = distinct && c->lag + 1 > hosts ? c->lag + 1 : hosts;
        gen_start(&c->gen, W_SEQUENCE, c->want, c->lag, h);
        gen_all(&c->ev, &c->gen);
        /* The peak: every NetworkConnect of steps 0..lag published, no ProcessCreate yet. */
        c->peak_at = (size_t)c->lag;
    }
}

/* ---- JSON output ------------------------------------------------------------------------- */

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void print_list(const char *name, const double *v, int n, const char *fmt)
{
    printf(",\"%s\":[", name);
    for (int i = 0; i < n; i++) {
        if (i)
            putchar(',');
        printf(fmt, v[i]);
    }
    putchar(']');
}

static void print_config(const struct config *c, int with_sample)
{
    const struct result *chk = &c->chk;
    putchar('{');
    if (c->w == W_SEQUENCE)
        printf("\"lag\":%ld,\"pairs\":%ld,", c->lag, c->want);
    printf("\"events\":%zu,\"ok\":%s", c->ev.n, c->ok ? "true" : "false");
    if (!c->ok) {
        printf(",\"error\":");
        json_str(chk->err);
        printf(",\"sample_alert\":");
        json_str(chk->sample);
        putchar('}');
        return;
    }
    double rates[MAX_REPS], cpu[MAX_REPS], secs[MAX_REPS], rss[MAX_REPS], bpr[MAX_REPS], om[MAX_REPS];
    int n = c->nres;
    for (int i = 0; i < n; i++) {
        rates[i] = c->res[i].rate;
        cpu[i] = c->res[i].cpu_rate;
        secs[i] = c->res[i].secs;
        rss[i] = (double)(c->res[i].rss_peak - c->res[i].rss_before);
        bpr[i] = c->res[i].open_peak ? (double)c->res[i].state_at_peak / (double)c->res[i].open_peak : 0;
        om[i] = c->res[i].open_mean;
    }
    print_list("rates", rates, n, "%.0f");
    print_list("cpu_rates", cpu, n, "%.0f");
    printf(",\"rate_median\":%.0f,\"cpu_rate_median\":%.0f", median(rates, n), median(cpu, n));
    printf(",\"seconds_median\":%.4f,\"alerts\":%ld", median(secs, n), chk->alerts);
    if (c->nwres > 0) {
        double wr[MAX_REPS], wc[MAX_REPS], ws[MAX_REPS];
        int nw = c->nwres;
        for (int i = 0; i < nw; i++) {
            wr[i] = c->wres[i].rate;
            wc[i] = c->wres[i].cpu_rate;
            ws[i] = c->wres[i].secs;
        }
        print_list("warm_rates", wr, nw, "%.0f");
        print_list("warm_cpu_rates", wc, nw, "%.0f");
        printf(",\"warm_rate_median\":%.0f,\"warm_cpu_rate_median\":%.0f,\"warm_seconds_median\":%.4f",
               median(wr, nw), median(wc, nw), median(ws, nw));
    }
    if (c->w == W_SEQUENCE) {
        double rd = median(rss, n);
        printf(",\"open_runs_peak\":%" PRIu64 ",\"open_runs_mean\":%.1f", chk->open_peak, median(om, n));
        printf(",\"state_bytes_at_peak\":%" PRIu64 ",\"bytes_per_open_run\":%.1f", chk->state_at_peak,
               median(bpr, n));
        printf(",\"partitions_peak\":%" PRIu64 ",\"rss_delta_kb\":%.0f", chk->partitions_peak, rd);
        /* Below a thousand runs the RSS delta is the allocator's first pages, not the runs. */
        if (chk->open_peak >= 1000)
            printf(",\"rss_bytes_per_open_run\":%.1f", rd * 1024.0 / (double)chk->open_peak);
        else
            printf(",\"rss_bytes_per_open_run\":null");
        printf(",\"runs_matched_once\":%ld,\"alerts_with_own_pair\":%ld,\"process_events_matching\":%ld",
               chk->alerts - chk->bad - chk->dup, chk->exact, chk->proc_unique);
        printf(",\"runs_dropped\":%" PRIu64 ",\"partitions_dropped\":%" PRIu64, chk->runs_dropped,
               chk->partitions_dropped);
    }
    if (snapshot_mode) {
        double sb[MAX_REPS], sm[MAX_REPS], rm[MAX_REPS];
        for (int i = 0; i < n; i++) {
            sb[i] = (double)c->res[i].snap_bytes;
            sm[i] = c->res[i].snap_ms;
            rm[i] = c->res[i].restore_ms;
        }
        double bytes = median(sb, n);
        printf(",\"snapshot\":{\"open_runs\":%" PRIu64 ",\"bytes\":%.0f,\"bytes_per_open_run\":%.1f"
               ",\"state_bytes_per_open_run\":%.1f,\"snapshot_ms\":%.1f,\"restore_ms\":%.1f}",
               chk->snap_open_runs, bytes, chk->snap_open_runs ? bytes / (double)chk->snap_open_runs : 0,
               chk->snap_open_runs ? (double)chk->snap_state_bytes / (double)chk->snap_open_runs : 0,
               median(sm, n), median(rm, n));
    }
    if (with_sample) {
        printf(",\"sample_alert\":");
        json_str(chk->sample);
    }
    putchar('}');
}

/* ---- main ---------------------------------------------------------------------------------- */

static int parse_list(const char *s, long *out)
{
    if (strcmp(s, "none") == 0)
        return 0;
    int n = 0;
    char *end;
    while (*s && n < MAX_LAGS) {
        out[n++] = strtol(s, &end, 10);
        if (end == s || out[n - 1] < 1)
            die("bad list: %s", s);
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* The program text without its .partition_by(...) line. */
static char *without_partition(const char *src, size_t len, size_t *outlen)
{
    const char *p = strstr(src, ".partition_by(");
    if (p == NULL)
        die("the sequence program has no .partition_by line");
    const char *b = p, *e = strchr(p, '\n');
    while (b > src && b[-1] != '\n')
        b--;
    e = e ? e + 1 : src + len;
    char *out = malloc(len + 1);
    if (out == NULL)
        die("out of memory");
    memcpy(out, src, (size_t)(b - src));
    memcpy(out + (b - src), e, (size_t)(src + len - e));
    *outlen = len - (size_t)(e - b);
    out[*outlen] = '\0';
    if (strstr(out, "partition_by") != NULL)
        die("more than one .partition_by in the sequence program");
    return out;
}

static const char *const section_hosts_note[] = {
    "sequence",
    "the bench/WORKLOAD.md generator",
    "sequence_distinct_hosts",
    "max(HOSTS, LAG+1) hosts: no host holds two open runs",
    "sequence_unpartitioned",
    "the bench/WORKLOAD.md generator, .partition_by deleted",
    "sequence_unpartitioned_distinct_hosts",
    "max(HOSTS, LAG+1) hosts, .partition_by deleted",
    NULL,
    NULL,
};

int main(int argc, char **argv)
{
    const char *rules = BENCH_SOURCE_DIR "/rules", *programs = BENCH_SOURCE_DIR "/bench";
    const char *dump = NULL;
    int reps = 3, distinct = 0, only = 0; /* bits: 1 orders, 2 sequence, 4 nopart, 8 join, 16 fn */
    long norders = 200000, pairs = 200000, nopart_pairs = 50000, hosts = 500, njoin = 200000, nfn = 200000;
    long lags[MAX_LAGS] = {1, 100, 1000, 10000, 30000, 100000}, nplags[MAX_LAGS] = {1, 100, 1000};
    int nlags = 6, nnp = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && (v != NULL || (die("%s needs a value", name), 0)) && ++i)
        if (ARG("--rules"))
            rules = v;
        else if (ARG("--programs"))
            programs = v;
        else if (ARG("--join"))
            njoin = atol(v);
        else if (ARG("--fn"))
            nfn = atol(v);
        else if (ARG("--reps"))
            reps = atoi(v);
        else if (ARG("--orders"))
            norders = atol(v);
        else if (ARG("--pairs"))
            pairs = atol(v);
        else if (ARG("--lags"))
            nlags = parse_list(v, lags);
        else if (ARG("--hosts"))
            hosts = atol(v);
        else if (ARG("--nopart-lags"))
            nnp = parse_list(v, nplags);
        else if (ARG("--nopart-pairs"))
            nopart_pairs = atol(v);
        else if (ARG("--method"))
            methods = strcmp(v, "cold") == 0 ? 1 : strcmp(v, "warm") == 0 ? 2 : (die("--method cold|warm"), 0);
        else if (ARG("--chunk"))
            chunk = (size_t)atol(v);
        else if (ARG("--dump-events"))
            dump = v;
        else if (ARG("--only"))
            only |= strcmp(v, "orders") == 0     ? 1
                    : strcmp(v, "sequence") == 0 ? 2
                    : strcmp(v, "nopart") == 0   ? 4
                    : strcmp(v, "join") == 0     ? 8
                    : strcmp(v, "fn") == 0       ? 16
                                                 : (die("--only orders|sequence|nopart|join|fn"), 0);
        else if (strcmp(a, "--distinct") == 0)
            distinct = 1;
        else if (strcmp(a, "--snapshot") == 0)
            snapshot_mode = 1;
        else
            die("unknown option %s (see the header of bench/vpl-engine.c)", a);
#undef ARG
    }
    if (reps < 1 || reps > MAX_REPS || pairs < 1 || hosts < 1 || nopart_pairs < 1 || chunk < 1 ||
        chunk > 65536)
        die("bad --reps, --pairs, --nopart-pairs, --hosts or --chunk");
    if (only == 0)
        only = snapshot_mode ? 2 : 31;
    /* Fixed mmap threshold: the large event buffers stay out of the heap the engine uses,
     * so a child's RSS delta is the engine's. */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);

    if (dump != NULL) {
        if (nlags < 1)
            die("--dump-events needs a lag");
        struct events ev;
        struct gen g;
        pairs = pairs > 3 * lags[0] ? pairs : 3 * lags[0]; /* as the measurements do */
        gen_start(&g, W_SEQUENCE, pairs, lags[0], hosts);
        gen_all(&ev, &g);
        FILE *f = fopen(dump, "wb");
        if (f == NULL || fwrite(ev.mem, 1, ev.size, f) != ev.size || fclose(f) != 0)
            die("cannot write %s", dump);
        fprintf(stderr, "gust-bench-vpl: %zu events (%ld pairs, lag %ld, %ld hosts) in %s\n", ev.n, pairs,
                lags[0], hosts, dump);
        ev_free(&ev);
        return 0;
    }

    char path[4096];
    size_t olen = 0, slen = 0, nlen = 0;
    snprintf(path, sizeof(path), "%s/bench_orders.vpl", rules);
    char *orders_src = (only & 1) && norders > 0 ? read_file(path, &olen) : NULL;
    snprintf(path, sizeof(path), "%s/bench_sequence.vpl", rules);
    char *seq_src = only & 6 ? read_file(path, &slen) : NULL;
    char *nopart_src = (only & 4) && nnp > 0 ? without_partition(seq_src, slen, &nlen) : NULL;
    size_t jlen = 0, flen = 0;
    snprintf(path, sizeof(path), "%s/vpl_join.vpl", programs);
    char *join_src = (only & 8) && njoin > 0 ? read_file(path, &jlen) : NULL;
    snprintf(path, sizeof(path), "%s/vpl_fn.vpl", programs);
    char *fn_src = (only & 16) && nfn > 0 ? read_file(path, &flen) : NULL;

    /* Every event set is generated before anything is timed. */
    if (orders_src != NULL) {
        struct config *c = add_config("orders", orders_src, olen, W_ORDERS);
        c->want = c->nids = norders;
        gen_start(&c->gen, W_ORDERS, norders, 0, 0);
        gen_all(&c->ev, &c->gen);
    }
    if (join_src != NULL) {
        struct config *c = add_config("join", join_src, jlen, W_JOIN);
        c->want = njoin - njoin / 10; /* every tenth payment is short */
        c->nids = njoin;
        gen_start(&c->gen, W_JOIN, njoin, 0, 0);
        gen_all(&c->ev, &c->gen);
    }
    if (fn_src != NULL) {
        struct config *c = add_config("fn", fn_src, flen, W_FN);
        c->want = c->nids = nfn;
        gen_start(&c->gen, W_FN, nfn, 0, 0);
        gen_all(&c->ev, &c->gen);
    }
    if (only & 2) {
        add_sequence("sequence", seq_src, slen, lags, nlags, pairs, hosts, 0);
        if (distinct)
            add_sequence("sequence_distinct_hosts", seq_src, slen, lags, nlags, pairs, hosts, 1);
    }
    if (nopart_src != NULL) {
        add_sequence("sequence_unpartitioned", nopart_src, nlen, nplags, nnp, nopart_pairs, hosts, 0);
        if (distinct)
            add_sequence("sequence_unpartitioned_distinct_hosts", nopart_src, nlen, nplags, nnp, nopart_pairs,
                         hosts, 1);
    }

    /* The checked pass of each configuration, then the timed runs round robin: a slow
     * spell of the machine lands on every configuration alike, not on one. */
    int fails = 0;
    for (int k = 0; k < ncfg; k++) {
        struct config *c = &cfgs[k];
        run_forked(c->src, c->srclen, &c->gen, snapshot_mode ? &c->ev : NULL, c->w, c->want, c->nids, c->lag,
                   c->peak_at, 1, &c->chk);
        c->ok = c->chk.ok;
        if (!c->ok) {
            fails++;
            fprintf(stderr, "gust-bench-vpl: %s lag %ld: %s\n", c->section, c->lag, c->chk.err);
        }
    }
    for (int rep = 0; rep < reps; rep++) {
        for (int k = 0; k < ncfg; k++) {
            struct config *c = &cfgs[k];
            if (!c->ok)
                continue;
            /* Cold and warm alternate, each first in every other round. */
            for (int m = 0; m < (snapshot_mode ? 1 : 2) && c->ok; m++) {
                int warm = !snapshot_mode && (m + rep) % 2 == 1;
                if (!(methods & (warm ? 2 : 1))) {
                    continue;
                }
                struct result *r = warm ? &c->wres[c->nwres] : &c->res[c->nres];
                run_forked(c->src, c->srclen, &c->gen, warm ? NULL : &c->ev, c->w, c->want, c->nids, c->lag,
                           c->peak_at, 0, r);
                if (!r->ok) {
                    c->ok = 0;
                    c->chk = *r;
                    fails++;
                    fprintf(stderr, "gust-bench-vpl: %s lag %ld (%s): %s\n", c->section, c->lag,
                            warm ? "warm" : "cold", r->err);
                    break;
                }
                *(warm ? &c->nwres : &c->nres) += 1;
            }
        }
        fprintf(stderr, "gust-bench-vpl: round %d of %d done\n", rep + 1, reps);
    }

    printf("{\"bench\":\"%s\",\"reps\":%d,\"statistic\":\"median\",\"order\":\"round robin\",\"rules\":",
           snapshot_mode ? "vpl-snapshot" : "vpl-engine", reps);
    json_str(rules);
    if (!snapshot_mode) {
        printf(",\"warm_chunk\":%zu,\"methods\":", chunk);
        json_str("rates, cpu_rates, rate_median, cpu_rate_median, seconds_median: cold, every event written "
                 "before the clock starts, so each is read from DRAM; warm_*: the next warm_chunk events "
                 "written into one reused buffer just before they are fed, as a unit's fetch of a batch "
                 "leaves them in cache, only the feeds timed. State and RSS figures: the cold runs");
    }
    const char *open_section = NULL;
    for (int k = 0; k < ncfg; k++) {
        const struct config *c = &cfgs[k];
        if (c->w != W_SEQUENCE) {
            printf(",\n \"%s\":", c->section);
            print_config(c, 1);
            continue;
        }
        int first = open_section == NULL || strcmp(open_section, c->section) != 0;
        if (first) {
            if (open_section != NULL)
                printf("]}");
            open_section = c->section;
            const char *note = "";
            for (int i = 0; section_hosts_note[i] != NULL; i += 2)
                if (strcmp(section_hosts_note[i], c->section) == 0)
                    note = section_hosts_note[i + 1];
            printf(",\n \"%s\":{\"hosts\":%ld,\"generator\":", c->section, hosts);
            json_str(note);
            printf(",\"results\":[\n   ");
        } else {
            printf(",\n   ");
        }
        print_config(c, first);
    }
    if (open_section != NULL)
        printf("]}");
    printf(",\n \"ok\":%s}\n", fails ? "false" : "true");
    for (int k = 0; k < ncfg; k++)
        ev_free(&cfgs[k].ev);
    free(cfgs);
    free(orders_src);
    free(seq_src);
    free(nopart_src);
    free(join_src);
    free(fn_src);
    return fails ? 1 : 0;
}
