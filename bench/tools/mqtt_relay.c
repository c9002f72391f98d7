/* gust-mqtt-relay: the bare MQTT relay, broker-mqtt.sh's second baseline. It takes every
 * message of a topic filter at QoS 1 and publishes it again, as it is, to another topic at
 * QoS 1: the broker's share of gust's round trip (each message crosses the broker twice)
 * with the least client work there is, and no JetStream.
 *
 *   gust-mqtt-relay HOST PORT IN_FILTER OUT_TOPIC [--id CLIENT]
 *
 * Writes "ready" on stderr once subscribed; on SIGTERM or SIGINT prints
 * {"relayed":N,"published":N} and exits. */
#define _GNU_SOURCE
#include <mosquitto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stopping;
static long relayed, published;
static const char *out_topic;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void on_subscribe(struct mosquitto *m, void *ud, int mid, int n, const int *granted)
{
    (void)m;
    (void)ud;
    (void)mid;
    if (n < 1 || granted[0] != 1) {
        fprintf(stderr, "subscription refused (granted %d)\n", n > 0 ? granted[0] : -1);
        exit(1);
    }
    fprintf(stderr, "ready\n");
}

static void on_message(struct mosquitto *m, void *ud, const struct mosquitto_message *msg)
{
    (void)ud;
    int rc = mosquitto_publish(m, NULL, out_topic, msg->payloadlen, msg->payload, 1, false);
    if (rc != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "publish: %s\n", mosquitto_strerror(rc));
        exit(1);
    }
    relayed++;
}

static void on_publish(struct mosquitto *m, void *ud, int mid)
{
    (void)m;
    (void)ud;
    (void)mid;
    published++;
}

int main(int argc, char **argv)
{
    if (argc < 5 || (argc > 5 && (argc != 7 || strcmp(argv[5], "--id") != 0))) {
        fprintf(stderr, "usage: %s HOST PORT IN_FILTER OUT_TOPIC [--id CLIENT]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1], *filter = argv[3], *cid = argc == 7 ? argv[6] : NULL;
    out_topic = argv[4];
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new(cid, true, NULL);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    /* No client-side inflight limit: with one, libmosquitto 2.0.11 left the last messages
     * it had queued past the limit unsent once the input stopped (seen here: 20 of
     * 30 000). What is in flight is bounded by the publisher's window anyway. */
    mosquitto_max_inflight_messages_set(m, 0);
    mosquitto_subscribe_callback_set(m, on_subscribe);
    mosquitto_message_callback_set(m, on_message);
    mosquitto_publish_callback_set(m, on_publish);
    int rc = mosquitto_connect(m, host, atoi(argv[2]), 30);
    if (rc == MOSQ_ERR_SUCCESS) rc = mosquitto_subscribe(m, NULL, filter, 1);
    if (rc != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "%s:%s: %s\n", host, argv[2], mosquitto_strerror(rc));
        return 1;
    }
    while (!stopping) {
        rc = mosquitto_loop(m, 100, 1);
        if (rc != MOSQ_ERR_SUCCESS && !stopping) {
            fprintf(stderr, "loop: %s\n", mosquitto_strerror(rc));
            return 1;
        }
    }
    printf("{\"relayed\":%ld,\"published\":%ld}\n", relayed, published);
    mosquitto_destroy(m);
    mosquitto_lib_cleanup();
    return 0;
}
