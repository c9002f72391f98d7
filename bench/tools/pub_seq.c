/* gust-bench-pub-seq URL FILE NET_SUBJECT PROC_SUBJECT [STREAM SUBJECTS]: publishes the
 * JSON lines of FILE (gust-bench-vpl --dump-events: the bench/WORKLOAD.md sequence events) in
 * order with JetStream async publish: SysmonNetworkConnect lines to NET_SUBJECT, the
 * others to PROC_SUBJECT. With STREAM and SUBJECTS it first adds that file-storage stream
 * (the configuration gust itself creates, so gust accepts it as it is). Waits for every
 * PubAck and prints JSON with the rate. */
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long async_errors;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_pub_err(jsCtx *js, jsPubAckErr *pae, void *ud)
{
    (void)js, (void)pae, (void)ud;
    async_errors++;
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 7) {
        fprintf(stderr, "usage: gust-bench-pub-seq URL FILE NET_SUBJECT PROC_SUBJECT [STREAM SUBJECTS]\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (f == NULL) {
        perror(argv[2]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *mem = malloc((size_t)size + 1);
    if (mem == NULL || fread(mem, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "gust-bench-pub-seq: cannot read %s\n", argv[2]);
        return 1;
    }
    fclose(f);
    mem[size] = '\0';

    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 4096;
    jo.PublishAsync.ErrHandler = on_pub_err;
    natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
    if (s == NATS_OK)
        s = natsConnection_JetStream(&js, nc, &jo);
    if (s == NATS_OK && argc == 7) {
        jsStreamConfig sc;
        jsStreamConfig_Init(&sc);
        const char *subjects[] = {argv[6]};
        sc.Name = argv[5];
        sc.Subjects = subjects;
        sc.SubjectsLen = 1;
        sc.Storage = js_FileStorage;
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        s = js_AddStream(&si, js, &sc, NULL, &jerr);
        if (s != NATS_OK)
            fprintf(stderr, "gust-bench-pub-seq: add stream %s: jetstream error %d\n", argv[5], (int)jerr);
        jsStreamInfo_Destroy(si);
    }
    long n = 0, net = 0;
    double start = mono_s();
    for (char *p = mem, *e; s == NATS_OK && p < mem + size; p = e + 1) {
        e = strchr(p, '\n');
        if (e == NULL)
            e = mem + size;
        if (e == p)
            continue;
        int is_net = memmem(p, (size_t)(e - p), "\"SysmonNetworkConnect\"", 22) != NULL;
        s = js_PublishAsync(js, is_net ? argv[3] : argv[4], p, (int)(e - p), NULL);
        n++;
        net += is_net;
    }
    if (s == NATS_OK) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = 120000;
        s = js_PublishAsyncComplete(js, &po);
    }
    double secs = mono_s() - start;
    if (s != NATS_OK || async_errors) {
        fprintf(stderr, "gust-bench-pub-seq: %s, %ld publish errors\n", natsStatus_GetText(s), async_errors);
        return 1;
    }
    printf("{\"published\":%ld,\"network_connect\":%ld,\"process_create\":%ld,\"seconds\":%.3f,\"rate\":%.0f}\n", n,
           net, n - net, secs, (double)n / secs);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    nats_Close();
    free(mem);
    return 0;
}
