/* gust-mqtt-rate-pub: publishes N telemetry readings at a fixed rate over several MQTT
 * connections (libmosquitto, one thread each), for bench/mqtt-ladder.sh and the edge
 * e2e test.
 *
 *   gust-mqtt-rate-pub HOST PORT TOPIC N RATE [--conns C] [--qos Q] [--t0 MS] [--flush]
 *
 * Reading i (0 <= i < N) goes to TOPIC/d<i%1000> on connection i%C, due at start + i/RATE s:
 *   {"id":i,"device":"d<i%1000>","v":<i*7%100>,"ts":<T0 + i*1000/RATE>}
 * (ts is event time in epoch ms, integer division: gust-mqtt-check computes the same).
 * --flush sends only {"id":-1,"device":"flush","v":0,"ts":<last ts + 30000>} (to TOPIC/flush),
 * which closes the event-time windows holding the readings: send it once they have all
 * been handled (a reading that arrives after it is late, and its window never closes).
 * Prints one JSON line: sent,
 * seconds, rate achieved, max_behind_ms (how far a connection fell behind its schedule),
 * end_ms (CLOCK_REALTIME when the last reading was handed to the socket). */
#define _GNU_SOURCE
#include <mosquitto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *host, *topic;
static int port, qos, conns = 4;
static long n;
static double rate;
static long long t0_ms = 2000000000000LL;
static double start_s;

struct conn {
    int index;
    long sent;
    double max_behind_ms;
    int failed;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int publish_one(struct mosquitto *m, long id)
{
    char t[256], body[256];
    long dev = id < 0 ? -1 : id % 1000;
    long long ts = id < 0 ? t0_ms + (long long)((n * 1000LL) / rate) + 30000 : t0_ms + (long long)(id * 1000LL / rate);
    int len;
    if (id < 0) {
        snprintf(t, sizeof(t), "%s/flush", topic);
        len = snprintf(body, sizeof(body), "{\"id\":-1,\"device\":\"flush\",\"v\":0,\"ts\":%lld}", ts);
    } else {
        snprintf(t, sizeof(t), "%s/d%ld", topic, dev);
        len = snprintf(body, sizeof(body), "{\"id\":%ld,\"device\":\"d%ld\",\"v\":%ld,\"ts\":%lld}", id, dev,
                       id * 7 % 100, ts);
    }
    return mosquitto_publish(m, NULL, t, len, body, qos, false);
}

static struct mosquitto *connect_one(const char *id)
{
    struct mosquitto *m = mosquitto_new(id, true, NULL);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    if (mosquitto_connect(m, host, port, 30) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "connect %s:%d failed\n", host, port);
        mosquitto_destroy(m);
        return NULL;
    }
    return m;
}

static void finish(struct mosquitto *m)
{
    /* Write out what libmosquitto still holds, then leave cleanly. */
    for (int i = 0; i < 2000 && mosquitto_want_write(m); i++) {
        mosquitto_loop(m, 1, 1);
    }
    mosquitto_disconnect(m);
    mosquitto_loop(m, 1, 1);
    mosquitto_destroy(m);
}

static void *run(void *arg)
{
    struct conn *c = arg;
    char id[64];
    snprintf(id, sizeof(id), "rate-pub-%d-%d", (int)getpid(), c->index);
    struct mosquitto *m = connect_one(id);
    if (!m) {
        c->failed = 1;
        return NULL;
    }
    long next = c->index; /* this connection's next id */
    while (next < n) {
        double el = now_s() - start_s;
        long due = (long)(el * rate); /* ids < due are due */
        if (due > n) {
            due = n;
        }
        if (next < due) {
            double behind = (el - next / rate) * 1e3;
            if (behind > c->max_behind_ms) {
                c->max_behind_ms = behind;
            }
        }
        while (next < due) {
            if (publish_one(m, next) != MOSQ_ERR_SUCCESS) {
                mosquitto_loop(m, 1, 1);
                continue;
            }
            c->sent++;
            next += conns;
        }
        mosquitto_loop(m, 1, 1); /* writes what is queued; waits up to 1 ms */
    }
    finish(m);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s HOST PORT TOPIC N RATE [--conns C] [--qos Q] [--t0 MS] [--flush]\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    topic = argv[3];
    n = atol(argv[4]);
    rate = atof(argv[5]);
    int flush = 0;
    for (int i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "--flush")) flush = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--conns")) conns = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--qos")) qos = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--t0")) t0_ms = atoll(argv[++i]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (conns < 1 || rate <= 0) {
        fprintf(stderr, "conns and rate must be positive\n");
        return 2;
    }
    mosquitto_lib_init();
    if (flush) {
        struct mosquitto *m = connect_one("rate-pub-flush");
        int ok = m && publish_one(m, -1) == MOSQ_ERR_SUCCESS;
        if (m) {
            finish(m);
        }
        printf("{\"flush\":%s}\n", ok ? "true" : "false");
        mosquitto_lib_cleanup();
        return ok ? 0 : 1;
    }
    pthread_t *th = calloc((size_t)conns, sizeof(*th));
    struct conn *cs = calloc((size_t)conns, sizeof(*cs));
    start_s = now_s();
    for (int i = 0; i < conns; i++) {
        cs[i].index = i;
        pthread_create(&th[i], NULL, run, &cs[i]);
    }
    long sent = 0;
    double behind = 0;
    int failed = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(th[i], NULL);
        sent += cs[i].sent;
        behind = cs[i].max_behind_ms > behind ? cs[i].max_behind_ms : behind;
        failed |= cs[i].failed;
    }
    double secs = now_s() - start_s;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    printf("{\"sent\":%ld,\"seconds\":%.3f,\"rate\":%.0f,\"target_rate\":%.0f,\"conns\":%d,\"max_behind_ms\":%.1f,"
           "\"end_ms\":%.3f}\n",
           sent, secs, sent / secs, rate, conns, behind, wall.tv_sec * 1e3 + wall.tv_nsec / 1e6);
    free(th);
    free(cs);
    mosquitto_lib_cleanup();
    return failed || sent != n ? 1 : 0;
}
