/* gust-kafka-mock [TOPIC:PARTITIONS ...]: a Kafka cluster for the tests, librdkafka's mock
 * cluster (rdkafka_mock.h: Kafka has no Debian server). It listens on loopback, speaks
 * the Kafka protocol over TCP to any client (gust's kafka plugin, kcat), with consumer
 * groups, offset commits and the idempotent producer.
 *
 * Prints "bootstrap HOST:PORT" on stdout once the topics exist, then reads commands on
 * stdin, one a line, answering "ok" or "error ..." to each:
 *   down                       every broker drops its connections and refuses new ones
 *   up                         they accept connections again
 *   produce_errors N CODE      the next N Produce requests fail with Kafka error CODE
 *                              (a number: 10 is MESSAGE_TOO_LARGE)
 *   topic NAME PARTITIONS      creates a topic
 * It runs until SIGTERM, SIGINT or the end of stdin (its parent gone). */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int create_topic(rd_kafka_mock_cluster_t *mc, const char *name, int parts)
{
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name, parts, 1);
    if (e) {
        fprintf(stderr, "gust-kafka-mock: topic %s: %s\n", name, rd_kafka_err2str(e));
        return -1;
    }
    return 0;
}

static void command(rd_kafka_mock_cluster_t *mc, char *line)
{
    char name[256];
    int n, code;
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "down") == 0) {
        rd_kafka_mock_broker_set_down(mc, -1);
    } else if (strcmp(line, "up") == 0) {
        rd_kafka_mock_broker_set_up(mc, -1);
    } else if (sscanf(line, "produce_errors %d %d", &n, &code) == 2 && n > 0 && n < 100000) {
        rd_kafka_resp_err_t *codes = calloc((size_t)n, sizeof(*codes));
        for (int i = 0; codes && i < n; i++) {
            codes[i] = (rd_kafka_resp_err_t)code;
        }
        rd_kafka_mock_push_request_errors_array(mc, 0 /* Produce */, (size_t)n, codes);
        free(codes);
    } else if (sscanf(line, "topic %255s %d", name, &n) == 2 && n > 0) {
        if (create_topic(mc, name, n) != 0) {
            printf("error topic %s\n", name);
            fflush(stdout);
            return;
        }
    } else {
        printf("error unknown command: %s\n", line);
        fflush(stdout);
        return;
    }
    printf("ok\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    char why[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();

    /* SIGTERM and SIGINT end the process at once (their default): the cluster lives in
     * its memory only, nothing to save. */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    rd_kafka_conf_set(conf, "log_level", "3", why, sizeof(why));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
    if (!rk) {
        fprintf(stderr, "gust-kafka-mock: %s\n", why);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
    if (!mc) {
        fprintf(stderr, "gust-kafka-mock: cannot make the mock cluster\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        char *colon = strrchr(argv[i], ':');
        int parts = colon ? atoi(colon + 1) : 1;
        if (colon) {
            *colon = '\0';
        }
        if (parts < 1 || create_topic(mc, argv[i], parts) != 0) {
            fprintf(stderr, "gust-kafka-mock: bad topic argument\n");
            return 2;
        }
    }
    printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    char line[512];
    while (fgets(line, sizeof(line), stdin)) {
        command(mc, line);
    }
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}
