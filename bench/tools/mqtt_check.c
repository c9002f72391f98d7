/* gust-mqtt-check: subscribes to an MQTT filter and validates, message by message, what
 * gust-mqtt-rate-pub's readings become (bench/mqtt-ladder.sh, the edge e2e test).
 *
 *   gust-mqtt-check HOST PORT FILTER MODE N RATE TIMEOUT_S [--t0 MS] [--id CLIENT] [--qos Q]
 *
 * MODE all:       every reading 0..N-1 itself (device and v must match the id)
 *      telemetry: scripts/telemetry.lua's output: the readings with v >= 50, each with
 *                 device, v and level ("alarm" from 90, else "high") right
 *      windows:   rules/device_window.vpl's alerts: one per device and 10 s bin of event
 *                 time, with readings, sum_v, min_v, max_v equal to what the readings
 *                 of that bin add up to (ts as gust-mqtt-rate-pub computes it)
 * Per device it also sums count and v of what arrived and compares them with what was
 * expected. Prints "ready" on stderr once subscribed; ends when everything expected has
 * arrived, or at TIMEOUT_S; prints one JSON line: expected, unique, duplicates, missing,
 * foreign, bad (wrong content), devices_wrong, first_ms/last_ms (CLOCK_REALTIME of the
 * first and last new message). Exit 0 when complete and right. */
#define _GNU_SOURCE
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEVICES 1000
#define BIN_MS 10000

enum { M_ALL, M_TELEMETRY, M_WINDOWS };

static struct {
    const char *filter;
    int mode, qos;
    long n;
    double rate;
    long long t0;
    long expected, unique, duplicates, foreign, bad, received;
    unsigned char *seen;        /* all/telemetry: per id; windows: per (device, bin) */
    long nbins;
    long long bin0;             /* first bin index */
    long exp_count[DEVICES], got_count[DEVICES];
    double exp_sum[DEVICES], got_sum[DEVICES];
    /* windows: expected per (device, bin) */
    long *w_count;
    double *w_sum;
    int *w_min, *w_max;
    double first_ms, last_ms;
} s;

static double now_ms(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long long ts_of(long id)
{
    return s.t0 + (long long)(id * 1000LL / s.rate);
}

/* The number after "key": in a flat JSON object, or def. */
static double num(const char *p, size_t len, const char *key, double def)
{
    char k[64];
    int kl = snprintf(k, sizeof(k), "\"%s\":", key);
    const char *f = memmem(p, len, k, (size_t)kl);
    return f ? strtod(f + kl, NULL) : def;
}

/* The string after "key": into out (empty when absent). */
static void str(const char *p, size_t len, const char *key, char *out, size_t outsz)
{
    char k[64];
    int kl = snprintf(k, sizeof(k), "\"%s\":\"", key);
    const char *f = memmem(p, len, k, (size_t)kl);
    out[0] = '\0';
    if (f) {
        f += kl;
        const char *e = memchr(f, '"', (size_t)(p + len - f));
        size_t l = e ? (size_t)(e - f) : 0;
        l = l < outsz - 1 ? l : outsz - 1;
        memcpy(out, f, l);
        out[l] = '\0';
    }
}

static void setup(void)
{
    for (long id = 0; id < s.n; id++) {
        int v = (int)(id * 7 % 100), d = (int)(id % DEVICES);
        if (s.mode == M_TELEMETRY && v < 50) {
            continue;
        }
        s.exp_count[d]++;
        s.exp_sum[d] += v;
        if (s.mode != M_WINDOWS) {
            s.expected++;
        }
    }
    if (s.mode == M_WINDOWS) {
        s.bin0 = ts_of(0) / BIN_MS;
        s.nbins = (long)(ts_of(s.n - 1) / BIN_MS - s.bin0 + 1);
        size_t cells = (size_t)s.nbins * DEVICES;
        s.w_count = calloc(cells, sizeof(long));
        s.w_sum = calloc(cells, sizeof(double));
        s.w_min = malloc(cells * sizeof(int));
        s.w_max = calloc(cells, sizeof(int));
        s.seen = calloc(cells, 1);
        for (size_t i = 0; i < cells; i++) {
            s.w_min[i] = 1 << 30;
        }
        for (long id = 0; id < s.n; id++) {
            int v = (int)(id * 7 % 100);
            size_t c = (size_t)(ts_of(id) / BIN_MS - s.bin0) * DEVICES + (size_t)(id % DEVICES);
            if (!s.w_count[c]++) {
                s.expected++;
            }
            s.w_sum[c] += v;
            s.w_min[c] = v < s.w_min[c] ? v : s.w_min[c];
            s.w_max[c] = v > s.w_max[c] ? v : s.w_max[c];
        }
    } else {
        s.seen = calloc((size_t)s.n + 1, 1);
    }
}

static void on_connect(struct mosquitto *m, void *ud, int rc)
{
    (void)ud;
    if (rc == 0) {
        mosquitto_subscribe(m, NULL, s.filter, s.qos);
    } else {
        fprintf(stderr, "connect refused: %s\n", mosquitto_connack_string(rc));
    }
}

static void on_subscribe(struct mosquitto *m, void *ud, int mid, int n, const int *granted)
{
    (void)m; (void)ud; (void)mid; (void)n; (void)granted;
    fprintf(stderr, "ready\n");
}

static void on_message(struct mosquitto *m, void *ud, const struct mosquitto_message *msg)
{
    (void)m;
    (void)ud;
    const char *p = msg->payload;
    size_t len = (size_t)msg->payloadlen;
    char dev[64];
    double t = now_ms(CLOCK_REALTIME);
    if (!s.received++) {
        s.first_ms = t;
    }
    if (!p) {
        s.foreign++;
        return;
    }
    str(p, len, "device", dev, sizeof(dev));
    if (strcmp(dev, "flush") == 0) {
        return; /* the window the flush reading opened, closed by the next run's readings */
    }
    int d = dev[0] == 'd' ? atoi(dev + 1) : -1;
    if (d < 0 || d >= DEVICES) {
        s.foreign++;
        return;
    }
    if (s.mode == M_WINDOWS) {
        long long first = (long long)num(p, len, "first_ts", -1);
        long bin = first < 0 ? -1 : (long)(first / BIN_MS - s.bin0);
        if (bin < 0 || bin >= s.nbins) {
            s.foreign++;
            return;
        }
        size_t c = (size_t)bin * DEVICES + (size_t)d;
        if (s.seen[c]) {
            s.duplicates++;
            return;
        }
        s.seen[c] = 1;
        long readings = (long)num(p, len, "readings", -1);
        double sum = num(p, len, "sum_v", -1);
        if (readings != s.w_count[c] || sum != s.w_sum[c] || (int)num(p, len, "min_v", -1) != s.w_min[c] ||
            (int)num(p, len, "max_v", -1) != s.w_max[c]) {
            s.bad++;
        }
        s.got_count[d] += readings > 0 ? readings : 0;
        s.got_sum[d] += sum > 0 ? sum : 0;
    } else {
        long id = (long)num(p, len, "id", -1);
        int v = (int)num(p, len, "v", -1);
        if (id < 0 || id >= s.n) {
            s.foreign++;
            return;
        }
        if (s.seen[id]) {
            s.duplicates++;
            return;
        }
        s.seen[id] = 1;
        int want_v = (int)(id * 7 % 100);
        int ok = d == id % DEVICES && v == want_v && (s.mode != M_TELEMETRY || want_v >= 50);
        if (ok && s.mode == M_TELEMETRY) {
            char level[16];
            str(p, len, "level", level, sizeof(level));
            ok = strcmp(level, want_v >= 90 ? "alarm" : "high") == 0;
        }
        if (!ok) {
            s.bad++;
            return;
        }
        s.got_count[d]++;
        s.got_sum[d] += v;
    }
    s.unique++;
    s.last_ms = t;
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: %s HOST PORT FILTER all|telemetry|windows N RATE TIMEOUT_S [--t0 MS] [--id CLIENT] "
                        "[--qos Q]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1], *cid = "gust-mqtt-check";
    int port = atoi(argv[2]);
    s.filter = argv[3];
    s.mode = !strcmp(argv[4], "all") ? M_ALL : !strcmp(argv[4], "telemetry") ? M_TELEMETRY
           : !strcmp(argv[4], "windows") ? M_WINDOWS : -1;
    s.n = atol(argv[5]);
    s.rate = atof(argv[6]);
    double timeout_s = atof(argv[7]);
    s.t0 = 2000000000000LL;
    for (int i = 8; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--t0")) s.t0 = atoll(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--id")) cid = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--qos")) s.qos = atoi(argv[++i]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (s.mode < 0 || s.n < 1 || s.rate <= 0) {
        fprintf(stderr, "bad mode, N or RATE\n");
        return 2;
    }
    setup();
    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new(cid, true, NULL);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_callback_set(m, on_connect);
    mosquitto_subscribe_callback_set(m, on_subscribe);
    mosquitto_message_callback_set(m, on_message);
    double t0 = now_ms(CLOCK_MONOTONIC);
    if (mosquitto_connect(m, host, port, 30) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "connect %s:%d failed\n", host, port);
        return 1;
    }
    while (s.unique < s.expected && now_ms(CLOCK_MONOTONIC) - t0 < timeout_s * 1e3) {
        if (mosquitto_loop(m, 50, 1000) != MOSQ_ERR_SUCCESS) {
            fprintf(stderr, "connection lost\n");
            break;
        }
    }
    long devices_wrong = 0;
    for (int d = 0; d < DEVICES; d++) {
        devices_wrong += s.got_count[d] != s.exp_count[d] || s.got_sum[d] != s.exp_sum[d];
    }
    printf("{\"mode\":\"%s\",\"expected\":%ld,\"received\":%ld,\"unique\":%ld,\"duplicates\":%ld,\"missing\":%ld,"
           "\"foreign\":%ld,\"bad\":%ld,\"devices_wrong\":%ld,\"first_ms\":%.3f,\"last_ms\":%.3f}\n",
           argv[4], s.expected, s.received, s.unique, s.duplicates, s.expected - s.unique, s.foreign, s.bad,
           devices_wrong, s.first_ms, s.last_ms);
    mosquitto_disconnect(m);
    mosquitto_destroy(m);
    mosquitto_lib_cleanup();
    free(s.seen);
    free(s.w_count);
    free(s.w_sum);
    free(s.w_min);
    free(s.w_max);
    return s.unique == s.expected && !s.bad && !s.duplicates && !devices_wrong ? 0 : 1;
}
