/* gust-mqtt-pub: publishes N numbered JSON messages to an MQTT topic and waits for every
 * PUBACK (QoS 1) or write (QoS 0). Used by bench/broker-mqtt.sh and the e2e tests.
 *
 *   gust-mqtt-pub HOST PORT TOPIC N [--qos Q] [--start ID] [--window W] [--id CLIENT]
 *                 [--body TEXT] [--user U --pass P] [--cafile CA (TLS)]
 *
 * Message i is {"id":ID,"device":"d<ID%1000>","v":<ID*7%100>} with ID = start + i, or TEXT
 * verbatim with --body. At most W messages await their PUBACK at once (default 1000).
 * Prints one JSON line: sent, acked, seconds, rate, start_ms/end_ms (CLOCK_REALTIME) so a
 * subscriber's timestamps can be set against them. Exit 1 if not all were acked in 60 s. */
#define _GNU_SOURCE
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long acked;

static double now_ms(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_publish(struct mosquitto *m, void *ud, int mid)
{
    (void)m;
    (void)ud;
    (void)mid;
    acked++;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s HOST PORT TOPIC N [--qos Q] [--start ID] [--window W] [--id CLIENT] "
                        "[--body TEXT] [--user U --pass P] [--cafile CA]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1], *topic = argv[3], *body = NULL, *cid = NULL, *user = NULL, *pass = NULL, *cafile = NULL;
    int port = atoi(argv[2]), qos = 1;
    long n = atol(argv[4]), start = 0, window = 1000;
    for (int i = 5; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--qos")) qos = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--start")) start = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--window")) window = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--id")) cid = argv[i + 1];
        else if (!strcmp(argv[i], "--body")) body = argv[i + 1];
        else if (!strcmp(argv[i], "--user")) user = argv[i + 1];
        else if (!strcmp(argv[i], "--pass")) pass = argv[i + 1];
        else if (!strcmp(argv[i], "--cafile")) cafile = argv[i + 1];
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }

    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new(cid, true, NULL);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, (int)window);
    mosquitto_publish_callback_set(m, on_publish);
    if (user) mosquitto_username_pw_set(m, user, pass);
    if (cafile) mosquitto_tls_set(m, cafile, NULL, NULL, NULL, NULL);
    int rc = mosquitto_connect(m, host, port, 30);
    if (rc != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "connect %s:%d: %s\n", host, port, mosquitto_strerror(rc));
        return 1;
    }
    double t0 = now_ms(CLOCK_MONOTONIC), wall0 = now_ms(CLOCK_REALTIME);
    char buf[256];
    long sent = 0;
    while (acked < n && now_ms(CLOCK_MONOTONIC) - t0 < 60000) {
        /* Keep the window full; libmosquitto queues what is past its own inflight limit. */
        while (sent < n && sent - acked < window) {
            long id = start + sent;
            int len = body ? (int)strlen(body)
                           : snprintf(buf, sizeof(buf), "{\"id\":%ld,\"device\":\"d%ld\",\"v\":%ld}", id, id % 1000, id * 7 % 100);
            rc = mosquitto_publish(m, NULL, topic, len, body ? body : buf, qos, false);
            if (rc != MOSQ_ERR_SUCCESS) {
                fprintf(stderr, "publish: %s\n", mosquitto_strerror(rc));
                return 1;
            }
            sent++;
        }
        rc = mosquitto_loop(m, 10, 1);
        if (rc != MOSQ_ERR_SUCCESS) {
            fprintf(stderr, "loop: %s\n", mosquitto_strerror(rc));
            return 1;
        }
    }
    double secs = (now_ms(CLOCK_MONOTONIC) - t0) / 1e3;
    printf("{\"sent\":%ld,\"acked\":%ld,\"seconds\":%.3f,\"rate\":%.0f,\"start_ms\":%.3f,\"end_ms\":%.3f}\n", sent,
           acked, secs, acked / secs, wall0, wall0 + secs * 1e3);
    mosquitto_disconnect(m);
    mosquitto_loop(m, 10, 1);
    mosquitto_destroy(m);
    mosquitto_lib_cleanup();
    return acked == n ? 0 : 1;
}
