/* gust-mqtt-sub: subscribes to an MQTT topic filter and checks that messages with ids
 * start..start+N-1 all arrive (the "id" field of a JSON payload), counting duplicates
 * and ids outside the range. Survives broker restarts: persistent session (fixed client
 * id, clean session off) and reconnects. Used by bench/broker-mqtt.sh and the e2e tests.
 *
 *   gust-mqtt-sub HOST PORT FILTER N TIMEOUT_S [--qos Q] [--start ID] [--id CLIENT] [--print]
 *                 [--cafile CA (TLS)]
 *
 * Prints "ready" on stderr once subscribed; with --print, "<topic> <payload>" per message
 * on stdout; at the end one JSON line: received, unique, duplicates, missing, foreign,
 * out_of_order, first_ms/last_ms (CLOCK_REALTIME: first message, last new id), rate.
 * Exits 0 when all N arrived, 1 at TIMEOUT_S without them. */
#define _GNU_SOURCE
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
    const char *filter;
    int qos, print;
    long n, start, received, unique, duplicates, foreign, out_of_order, last_id;
    unsigned char *seen;
    double first_ms, last_ms;
} s = {.last_id = -1};

static double now_ms(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
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
    double t = now_ms(CLOCK_REALTIME);
    if (!s.received++) {
        s.first_ms = t;
    }
    if (s.print) {
        printf("%s %.*s\n", msg->topic, msg->payloadlen, (const char *)msg->payload);
    }
    const char *p = msg->payload ? memmem(msg->payload, (size_t)msg->payloadlen, "\"id\":", 5) : NULL;
    long id = p ? strtol(p + 5, NULL, 10) - s.start : -1;
    if (id < 0 || id >= s.n) {
        s.foreign++;
        return;
    }
    if (s.seen[id]) {
        s.duplicates++;
        return;
    }
    s.seen[id] = 1;
    s.unique++;
    s.last_ms = t;
    if (id < s.last_id) {
        s.out_of_order++;
    }
    s.last_id = id;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s HOST PORT FILTER N TIMEOUT_S [--qos Q] [--start ID] [--id CLIENT] [--print] [--cafile CA]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1], *cid = "gust-mqtt-sub", *cafile = NULL;
    int port = atoi(argv[2]);
    double timeout_s = atof(argv[5]);
    s.filter = argv[3];
    s.n = atol(argv[4]);
    s.qos = 1;
    for (int i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "--print")) s.print = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--qos")) s.qos = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--start")) s.start = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--id")) cid = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--cafile")) cafile = argv[++i];
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    s.seen = calloc((size_t)s.n + 1, 1);
    setvbuf(stdout, NULL, _IOLBF, 0);

    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new(cid, false, NULL);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_callback_set(m, on_connect);
    mosquitto_subscribe_callback_set(m, on_subscribe);
    mosquitto_message_callback_set(m, on_message);
    if (cafile) mosquitto_tls_set(m, cafile, NULL, NULL, NULL, NULL);
    double t0 = now_ms(CLOCK_MONOTONIC);
    int rc = mosquitto_connect(m, host, port, 10);
    while (s.unique < s.n && now_ms(CLOCK_MONOTONIC) - t0 < timeout_s * 1e3) {
        if (rc == MOSQ_ERR_SUCCESS) {
            rc = mosquitto_loop(m, 50, 1);
        }
        if (rc != MOSQ_ERR_SUCCESS) {
            /* Broker gone (restart): try again shortly; the session keeps our messages. */
            usleep(100000);
            rc = mosquitto_reconnect(m);
        }
    }
    double secs = (s.last_ms - s.first_ms) / 1e3;
    printf("{\"received\":%ld,\"unique\":%ld,\"duplicates\":%ld,\"missing\":%ld,\"foreign\":%ld,"
           "\"out_of_order\":%ld,\"first_ms\":%.3f,\"last_ms\":%.3f,\"rate\":%.0f}\n",
           s.received, s.unique, s.duplicates, s.n - s.unique, s.foreign, s.out_of_order, s.first_ms, s.last_ms,
           secs > 0 ? s.unique / secs : 0.0);
    mosquitto_disconnect(m);
    mosquitto_destroy(m);
    mosquitto_lib_cleanup();
    return s.unique == s.n ? 0 : 1;
}
