/* gust-bench-count-alerts URL SUBJECT N [TIMEOUT_S]: subscribes to SUBJECT (core NATS)
 * and counts the bench_sequence alerts until N unique runs have been reported or
 * TIMEOUT_S passed. A run is named by the alert's "target_ip":"10.a.b.c", the pair index
 * a<<16|b<<8|c that gust-bench-vpl's generator writes into DestinationIp. Prints JSON:
 * received, unique, duplicates, bad, the wall-clock (epoch ms) of the first and last
 * alert, and the rate between them. "ready" on stderr once subscribed. */
#include <nats/nats.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static unsigned char *seen;
static long want, received, unique, duplicates, bad;
static double first_ms, last_ms;

static double real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long parse_id(const char *d, int len)
{
    const char *p = memmem(d, (size_t)len, "\"target_ip\":\"10.", 16);
    long a, b, c;
    if (p == NULL || sscanf(p + 16, "%ld.%ld.%ld", &a, &b, &c) != 3)
        return -1;
    return a << 16 | b << 8 | c;
}

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *ud)
{
    (void)nc, (void)sub, (void)ud;
    long id = parse_id(natsMsg_GetData(m), natsMsg_GetDataLength(m));
    double now = real_ms();
    pthread_mutex_lock(&lock);
    if (received++ == 0)
        first_ms = now;
    last_ms = now;
    if (id < 0 || id >= want) {
        bad++;
    } else if (seen[id]) {
        duplicates++;
    } else {
        seen[id] = 1;
        if (++unique == want)
            pthread_cond_signal(&done);
    }
    pthread_mutex_unlock(&lock);
    natsMsg_Destroy(m);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gust-bench-count-alerts URL SUBJECT N [TIMEOUT_S]\n");
        return 2;
    }
    want = atol(argv[3]);
    double timeout = argc > 4 ? atof(argv[4]) : 120;
    seen = calloc((size_t)want + 1, 1);
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&sub, nc, argv[2], on_msg, NULL);
    if (s == NATS_OK)
        s = natsSubscription_SetPendingLimits(sub, -1, -1);
    if (s == NATS_OK)
        s = natsConnection_Flush(nc);
    if (s != NATS_OK) {
        fprintf(stderr, "gust-bench-count-alerts: %s\n", natsStatus_GetText(s));
        return 1;
    }
    fprintf(stderr, "ready\n");
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)timeout;
    pthread_mutex_lock(&lock);
    while (unique < want && pthread_cond_timedwait(&done, &lock, &until) == 0) {
    }
    double span = (last_ms - first_ms) / 1e3;
    printf("{\"received\":%ld,\"unique\":%ld,\"duplicates\":%ld,\"bad\":%ld,\"first_ms\":%.3f,\"last_ms\":%.3f,"
           "\"seconds\":%.3f,\"rate\":%.0f}\n",
           received, unique, duplicates, bad, first_ms, last_ms, span, span > 0 ? (double)unique / span : 0.0);
    int complete = unique == want && duplicates == 0 && bad == 0;
    pthread_mutex_unlock(&lock);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return complete ? 0 : 1;
}
