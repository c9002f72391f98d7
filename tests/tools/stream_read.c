/* gust-stream-read URL STREAM [--count | --last FILTER]: reads a JetStream stream back
 * with nats.c.
 *
 * Without options, prints every message as a header line "SEQ SUBJECT LEN", then LEN
 * bytes of payload, then a newline: binary-safe and easy to parse from a test.
 * With --count, prints the stream's message count. With --last FILTER, prints the last
 * message of each subject matching FILTER, the same way (a KV bucket's values: one
 * request per key instead of one per sequence of the bucket's history). */
#include <inttypes.h>
#include <nats/nats.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gust-stream-read URL STREAM [--count]\n");
        return 2;
    }
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    const char *last = argc > 4 && strcmp(argv[3], "--last") == 0 ? argv[4] : NULL;
    jsOptions so;
    jsOptions_Init(&so);
    so.Stream.Info.SubjectsFilter = last;
    natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
    if (s == NATS_OK) s = natsConnection_JetStream(&js, nc, NULL);
    /* A timeout (a loaded machine, a cluster electing a leader) is asked again. */
    for (int tries = 0; s == NATS_OK; tries++) {
        s = js_GetStreamInfo(&si, js, argv[2], last != NULL ? &so : NULL, &jerr);
        if (s != NATS_TIMEOUT || tries == 20) break;
        nats_Sleep(100);
        s = NATS_OK;
    }
    if (s != NATS_OK) {
        fprintf(stderr, "gust-stream-read: %s (jetstream error %d)\n", natsStatus_GetText(s), (int)jerr);
        return 1;
    }
    if (argc > 3 && strcmp(argv[3], "--count") == 0) {
        printf("%" PRIu64 "\n", si->State.Msgs);
    } else if (last != NULL) {
        for (int i = 0; si->State.Subjects != NULL && i < si->State.Subjects->Count; i++) {
            natsMsg *m = NULL;
            for (int tries = 0;; tries++) {
                s = js_GetLastMsg(&m, js, argv[2], si->State.Subjects->List[i].Subject, NULL, &jerr);
                if (s != NATS_TIMEOUT || tries == 100) break;
                nats_Sleep(100);
            }
            if (s != NATS_OK) {
                fprintf(stderr, "gust-stream-read: %s: %s (jetstream error %d)\n", si->State.Subjects->List[i].Subject,
                        natsStatus_GetText(s), (int)jerr);
                return 1;
            }
            printf("%" PRIu64 " %s %d\n", natsMsg_GetSequence(m), natsMsg_GetSubject(m), natsMsg_GetDataLength(m));
            fwrite(natsMsg_GetData(m), 1, (size_t)natsMsg_GetDataLength(m), stdout);
            putchar('\n');
            natsMsg_Destroy(m);
        }
    } else {
        for (uint64_t seq = si->State.FirstSeq; seq <= si->State.LastSeq && si->State.Msgs > 0; seq++) {
            natsMsg *m = NULL;
            /* A deleted message is skipped; any other error (a timeout while a cluster
             * elects a new stream leader) is retried, never taken for a gap. */
            for (int tries = 0;; tries++) {
                jerr = 0;
                s = js_GetMsg(&m, js, argv[2], seq, NULL, &jerr);
                if (s == NATS_OK || jerr == JSNoMessageFoundErr || tries == 100) break;
                nats_Sleep(100);
            }
            if (s != NATS_OK && jerr == JSNoMessageFoundErr) {
                continue;
            }
            if (s != NATS_OK) {
                fprintf(stderr, "gust-stream-read: seq %" PRIu64 ": %s (jetstream error %d)\n", seq,
                        natsStatus_GetText(s), (int)jerr);
                return 1;
            }
            printf("%" PRIu64 " %s %d\n", seq, natsMsg_GetSubject(m), natsMsg_GetDataLength(m));
            fwrite(natsMsg_GetData(m), 1, (size_t)natsMsg_GetDataLength(m), stdout);
            putchar('\n');
            natsMsg_Destroy(m);
        }
    }
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    nats_Close();
    return 0;
}
