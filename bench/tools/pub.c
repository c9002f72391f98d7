/* gust-bench-pub URL SUBJECT N [FIRST_ID]: publishes N orders events (bench/WORKLOAD.md) to
 * SUBJECT with JetStream async publish, waits for every PubAck, and prints JSON with
 * the rate. Ids count up from FIRST_ID (default 1); `t` is the send time in epoch
 * milliseconds with a microsecond fraction. */
#include <inttypes.h>
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const countries[] = {"France", "Germany", "Italy", "Spain"};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long failed;

/* A PubAck that says no (no stream for the subject, say): counted, and fatal below. */
static void on_error(jsCtx *js, jsPubAckErr *pae, void *closure)
{
    (void)js;
    (void)closure;
    if (failed++ == 0) {
        fprintf(stderr, "gust-bench-pub: %s\n", pae->ErrText != NULL ? pae->ErrText : natsStatus_GetText(pae->Err));
    }
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gust-bench-pub URL SUBJECT N [FIRST_ID]\n");
        return 2;
    }
    long n = atol(argv[3]);
    long first = argc > 4 ? atol(argv[4]) : 1;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 4096;
    jo.PublishAsync.ErrHandler = on_error;
    natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
    if (s == NATS_OK) s = natsConnection_JetStream(&js, nc, &jo);
    double start = mono_s();
    char buf[1024];
    for (long i = 0; i < n && s == NATS_OK; i++) {
        int len = snprintf(buf, sizeof(buf),
                           "{\"id\":\"SO#%ld\",\"email\":\"Jane.Doe@ACME.com\",\"total_price\":\"347.00\","
                           "\"t\":%.3f,\"shipping_address\":{\"country\":\"%s\"},\"line_items\":["
                           "{\"sku\":\"A-12\",\"quantity\":\"2\",\"unit_price_cents\":9900},"
                           "{\"sku\":\"B-07\",\"quantity\":\"1\",\"unit_price_cents\":14900},"
                           "{\"sku\":\"C-33\",\"quantity\":\"4\",\"unit_price_cents\":450}]}",
                           first + i, now_ms(), countries[(first + i) % 4]);
        s = js_PublishAsync(js, argv[2], buf, len, NULL);
    }
    if (s == NATS_OK) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = 60000;
        s = js_PublishAsyncComplete(js, &po);
    }
    double secs = mono_s() - start;
    if (s != NATS_OK || failed > 0) {
        fprintf(stderr, "gust-bench-pub: %s, %ld of %ld not stored\n", natsStatus_GetText(s), failed, n);
        return 1;
    }
    printf("{\"published\":%ld,\"seconds\":%.3f,\"rate\":%.0f}\n", n, secs, (double)n / secs);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    nats_Close();
    return 0;
}
