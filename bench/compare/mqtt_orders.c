/* mqtt_orders: the MQTT publisher and subscriber of bench/compare/run.sh.
 *
 * gust-mqtt-pub and gust-mqtt-sub (bench/tools) send and check {"id":N,...} messages, which
 * the orders function rejects and whose output has no "id". This is the same pair of tools
 * (libmosquitto, one loop per process, a window of QoS 1 messages in flight) speaking the
 * orders workload instead:
 *
 *   mqtt_orders pub HOST PORT TOPIC N [--start ID] [--window W] [--id CLIENT]
 *   mqtt_orders sub HOST PORT FILTER N TIMEOUT_S [--start ID] [--id CLIENT]
 *
 * pub: message i is the orders event of bench/WORKLOAD.md with id "SO#<start+i>",
 * the country cycling France, Germany, Italy, Spain, and t the wall clock in epoch ms with
 * 3 decimals taken right before the publish. QoS 1; at most W (default 1000) await their
 * PUBACK. Prints {"sent","acked","seconds","rate","start_ms","end_ms"}; exit 1 unless all
 * were acked within 120 s.
 *
 * sub: QoS 1, clean session (a finished round leaves no session queueing messages behind
 * it). Takes "order_ref" (the id's digits) and "t" of each message, counts unique ids in
 * start..start+N-1 and the latency from t (the counting sink's own statistics,
 * sink_stats.c). Prints "ready" on stderr once subscribed, then one
 * line: the sink's stats plus "missing", "foreign" and "last_new_ms" (wall clock of the last
 * new id). Exit 0 when all N arrived, 1 at TIMEOUT_S without them.
 *
 * Built by run.sh with cc against libmosquitto and bench/tools/sink_stats.c. */
#define _GNU_SOURCE
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sink_stats.h"

static double now_ms(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long now_us_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* ---- pub ---- */

static long acked;

static void on_publish(struct mosquitto *m, void *ud, int mid)
{
    (void)m;
    (void)ud;
    (void)mid;
    acked++;
}

static int order_body(char *buf, size_t size, long id)
{
    static const char *const COUNTRIES[4] = {"France", "Germany", "Italy", "Spain"};
    long us = now_us_real();
    return snprintf(buf, size,
                    "{\"id\": \"SO#%ld\", \"email\": \"Jane.Doe@ACME.com\", \"total_price\": \"347.00\", "
                    "\"t\": %ld.%03ld,\n \"shipping_address\": {\"country\": \"%s\"},\n \"line_items\": [\n"
                    "   {\"sku\": \"A-12\", \"quantity\": \"2\", \"unit_price_cents\": 9900},\n"
                    "   {\"sku\": \"B-07\", \"quantity\": \"1\", \"unit_price_cents\": 14900},\n"
                    "   {\"sku\": \"C-33\", \"quantity\": \"4\", \"unit_price_cents\": 450}]}",
                    id, us / 1000, us % 1000, COUNTRIES[(id + 3) % 4]);
}

static int run_pub(const char *host, int port, const char *topic, long n, long start, long window, const char *cid)
{
    struct mosquitto *m = mosquitto_new(cid, true, NULL);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, (int)window);
    mosquitto_publish_callback_set(m, on_publish);
    int rc = mosquitto_connect(m, host, port, 30);
    if (rc != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "mqtt_orders pub: connect %s:%d: %s\n", host, port, mosquitto_strerror(rc));
        return 1;
    }
    double t0 = now_ms(CLOCK_MONOTONIC), wall0 = now_ms(CLOCK_REALTIME);
    char buf[1024];
    long sent = 0;
    while (acked < n && now_ms(CLOCK_MONOTONIC) - t0 < 120000) {
        while (sent < n && sent - acked < window) {
            int len = order_body(buf, sizeof(buf), start + sent);
            rc = mosquitto_publish(m, NULL, topic, len, buf, 1, false);
            if (rc != MOSQ_ERR_SUCCESS) {
                fprintf(stderr, "mqtt_orders pub: publish: %s\n", mosquitto_strerror(rc));
                return 1;
            }
            sent++;
        }
        rc = mosquitto_loop(m, 10, 1);
        if (rc != MOSQ_ERR_SUCCESS) {
            fprintf(stderr, "mqtt_orders pub: loop: %s\n", mosquitto_strerror(rc));
            return 1;
        }
    }
    double secs = (now_ms(CLOCK_MONOTONIC) - t0) / 1e3;
    printf("{\"sent\":%ld,\"acked\":%ld,\"seconds\":%.3f,\"rate\":%.0f,\"start_ms\":%.3f,\"end_ms\":%.3f}\n", sent,
           acked, secs, acked / secs, wall0, wall0 + secs * 1e3);
    mosquitto_disconnect(m);
    mosquitto_loop(m, 10, 1);
    mosquitto_destroy(m);
    return acked == n ? 0 : 1;
}

/* ---- sub ---- */

static struct {
    const char *filter;
    long n, start, foreign;
    unsigned char *seen;
    double last_new_ms;
    struct sink_stats *st;
} s;

static void on_connect(struct mosquitto *m, void *ud, int rc)
{
    (void)ud;
    if (rc == 0) {
        mosquitto_subscribe(m, NULL, s.filter, 1);
    } else {
        fprintf(stderr, "mqtt_orders sub: connect refused: %s\n", mosquitto_connack_string(rc));
    }
}

static void on_subscribe(struct mosquitto *m, void *ud, int mid, int n, const int *granted)
{
    (void)m;
    (void)ud;
    (void)mid;
    (void)n;
    (void)granted;
    fprintf(stderr, "ready\n");
}

/* The number after `key` in a JSON text whose value is a number or a string of digits;
 * -1 when absent. Enough for the flat output of the orders function. */
static double field_number(const char *p, size_t len, const char *key)
{
    const char *k = memmem(p, len, key, strlen(key));
    if (!k) {
        return -1;
    }
    k += strlen(key);
    while (k < p + len && (*k == ' ' || *k == ':' || *k == '"')) {
        k++;
    }
    char tmp[64];
    size_t i = 0;
    while (k < p + len && i + 1 < sizeof(tmp) && ((*k >= '0' && *k <= '9') || *k == '.')) {
        tmp[i++] = *k++;
    }
    tmp[i] = 0;
    return i ? strtod(tmp, NULL) : -1;
}

static void on_message(struct mosquitto *m, void *ud, const struct mosquitto_message *msg)
{
    (void)m;
    (void)ud;
    long now = now_us_real();
    const char *p = msg->payload;
    size_t len = p ? (size_t)msg->payloadlen : 0;
    double ref = p ? field_number(p, len, "\"order_ref\"") : -1;
    double t = p ? field_number(p, len, "\"t\"") : -1;
    long id = ref < 0 ? -1 : (long)ref - s.start;
    if (id < 0 || id >= s.n) {
        s.foreign++;
        return;
    }
    char idbuf[32];
    int idlen = snprintf(idbuf, sizeof(idbuf), "%ld", id + s.start);
    sink_stats_add(s.st, now, idbuf, (size_t)idlen, t < 0 ? -1 : (int64_t)(t * 1000.0 + 0.5));
    if (!s.seen[id]) {
        s.seen[id] = 1;
        s.last_new_ms = (double)now / 1e3;
    }
}

static int run_sub(const char *host, int port, long n, double timeout_s, const char *cid)
{
    s.n = n;
    s.seen = calloc((size_t)n + 1, 1);
    s.st = sink_stats_create();
    struct mosquitto *m = mosquitto_new(cid, true, NULL);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_callback_set(m, on_connect);
    mosquitto_subscribe_callback_set(m, on_subscribe);
    mosquitto_message_callback_set(m, on_message);
    double t0 = now_ms(CLOCK_MONOTONIC);
    int rc = mosquitto_connect(m, host, port, 10);
    while ((long)sink_stats_unique(s.st) < n && now_ms(CLOCK_MONOTONIC) - t0 < timeout_s * 1e3) {
        if (rc == MOSQ_ERR_SUCCESS) {
            rc = mosquitto_loop(m, 50, 1);
        }
        if (rc != MOSQ_ERR_SUCCESS) {
            usleep(100000);
            rc = mosquitto_reconnect(m);
        }
    }
    char json[1024];
    int len = sink_stats_json(s.st, json, sizeof(json));
    long unique = (long)sink_stats_unique(s.st);
    if (len > 1 && len < (int)sizeof(json)) {
        json[len - 1] = 0; /* drop the closing brace, add ours */
        printf("%s,\"missing\":%ld,\"foreign\":%ld,\"last_new_ms\":%.3f}\n", json, n - unique, s.foreign,
               s.last_new_ms);
    }
    mosquitto_disconnect(m);
    mosquitto_destroy(m);
    sink_stats_destroy(s.st);
    free(s.seen);
    return unique == n ? 0 : 1;
}

int main(int argc, char **argv)
{
    int pub = argc > 1 && !strcmp(argv[1], "pub");
    int sub = argc > 1 && !strcmp(argv[1], "sub");
    if ((!pub && !sub) || argc < (pub ? 6 : 7)) {
        fprintf(stderr, "usage: %s pub HOST PORT TOPIC N [--start ID] [--window W] [--id CLIENT]\n"
                        "       %s sub HOST PORT FILTER N TIMEOUT_S [--start ID] [--id CLIENT]\n",
                argv[0], argv[0]);
        return 2;
    }
    const char *host = argv[2], *topic = argv[4], *cid = pub ? NULL : "mqtt-orders-sub";
    int port = atoi(argv[3]);
    long n = atol(argv[5]), start = 0, window = 1000;
    double timeout_s = sub ? atof(argv[6]) : 0;
    for (int i = pub ? 6 : 7; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--start")) start = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--window")) window = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--id")) cid = argv[i + 1];
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (n <= 0 || window <= 0) {
        fprintf(stderr, "N and the window must be positive\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    mosquitto_lib_init();
    int rc;
    if (pub) {
        rc = run_pub(host, port, topic, n, start, window, cid);
    } else {
        s.filter = topic;
        s.start = start;
        rc = run_sub(host, port, n, timeout_s, cid);
    }
    mosquitto_lib_cleanup();
    return rc;
}
