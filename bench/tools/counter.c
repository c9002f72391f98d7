/* gust-bench-counter URL SUBJECT N [TIMEOUT_S]: subscribes to SUBJECT (core NATS: what
 * JetStream stores is delivered to subscribers too) and counts messages until N unique
 * ids have arrived or TIMEOUT_S passed. The id is the number in "order_ref" (the orders
 * flow's output) or after "SO#" in "id" (a relay's output). Prints JSON: received,
 * unique, duplicates, the time from the first to the last message, and the rate. */
#include <inttypes.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static uint8_t *seen;
static long want, received, unique, duplicates, bad;
static double first_s, last_s;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long parse_id(const char *d, int len)
{
    const char *p = memmem(d, (size_t)len, "\"order_ref\":\"", 13);
    if (p != NULL) {
        p += 13;
    } else if ((p = memmem(d, (size_t)len, "SO#", 3)) != NULL) {
        p += 3;
    } else {
        return -1;
    }
    return strtol(p, NULL, 10);
}

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *ud)
{
    (void)nc;
    (void)sub;
    (void)ud;
    long id = parse_id(natsMsg_GetData(m), natsMsg_GetDataLength(m));
    double now = mono_s();
    pthread_mutex_lock(&lock);
    if (received++ == 0) {
        first_s = now;
    }
    last_s = now;
    if (id < 1 || id > want) {
        bad++;
    } else if (seen[id]) {
        duplicates++;
    } else {
        seen[id] = 1;
        if (++unique == want) {
            pthread_cond_signal(&done);
        }
    }
    pthread_mutex_unlock(&lock);
    natsMsg_Destroy(m);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gust-bench-counter URL SUBJECT N [TIMEOUT_S]\n");
        return 2;
    }
    want = atol(argv[3]);
    double timeout = argc > 4 ? atof(argv[4]) : 120;
    seen = calloc((size_t)want + 1, 1);
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
    if (s == NATS_OK) s = natsConnection_Subscribe(&sub, nc, argv[2], on_msg, NULL);
    if (s == NATS_OK) s = natsSubscription_SetPendingLimits(sub, -1, -1);
    if (s == NATS_OK) s = natsConnection_Flush(nc);
    if (s != NATS_OK) {
        fprintf(stderr, "gust-bench-counter: %s\n", natsStatus_GetText(s));
        return 1;
    }
    /* Ready: the caller may start producing. */
    fprintf(stderr, "ready\n");
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)timeout;
    pthread_mutex_lock(&lock);
    while (unique < want && pthread_cond_timedwait(&done, &lock, &until) == 0) {
    }
    double span = last_s - first_s;
    printf("{\"received\":%ld,\"unique\":%ld,\"duplicates\":%ld,\"bad\":%ld,\"seconds\":%.3f,\"rate\":%.0f}\n",
           received, unique, duplicates, bad, span, span > 0 ? (double)unique / span : 0.0);
    int complete = unique == want;
    pthread_mutex_unlock(&lock);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return complete ? 0 : 1;
}
