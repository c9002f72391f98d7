/* gust-stream-read [OPTIONS] URL STREAM [--count | --last FILTER]: reads a JetStream
 * stream back with nats.c.
 *
 * Without --count, prints every message as a header line "SEQ SUBJECT LEN", then LEN
 * bytes of payload, then a newline: binary-safe and easy to parse from a test.
 * With --count, prints the stream's message count. With --last FILTER, prints the last
 * message of each subject matching FILTER, the same way (a KV bucket's values: one
 * request per key instead of one per sequence of the bucket's history).
 *
 * It connects as gust does (host/bus/nats_opts.c), so a test reads a secured server
 * back with the options it gave gust: --tls-ca FILE, --tls-cert FILE --tls-key FILE,
 * --creds FILE, --nkey-seed FILE, --token-file FILE, --user NAME --password-file FILE. */
#include <inttypes.h>
#include <nats/nats.h>
#include <stdio.h>
#include <string.h>

#include "../../host/bus/nats_opts.h"
#include "../../host/bus/nats_url.h"

static int usage(void)
{
    fprintf(stderr, "usage: gust-stream-read [--tls-ca F] [--tls-cert F --tls-key F] [--creds F] [--nkey-seed F]\n"
                    "                        [--token-file F] [--user U --password-file F] URL STREAM\n"
                    "                        [--count | --last FILTER]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct gust_nats_link_conf link;
    gust_nats_link_conf_defaults(&link);
    const char *url = NULL, *stream = NULL, *last = NULL;
    int count = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = strcmp(a, "--tls-ca") == 0          ? &link.tls_ca
                            : strcmp(a, "--tls-cert") == 0      ? &link.tls_cert
                            : strcmp(a, "--tls-key") == 0       ? &link.tls_key
                            : strcmp(a, "--creds") == 0         ? &link.creds
                            : strcmp(a, "--nkey-seed") == 0     ? &link.nkey_seed
                            : strcmp(a, "--token-file") == 0    ? &link.token_file
                            : strcmp(a, "--user") == 0          ? &link.user
                            : strcmp(a, "--password-file") == 0 ? &link.password_file
                            : strcmp(a, "--last") == 0          ? &last
                                                                : NULL;
        if (slot != NULL) {
            if (v == NULL) {
                return usage();
            }
            *slot = v;
            i++;
        } else if (strcmp(a, "--count") == 0) {
            count = 1;
        } else if (url == NULL) {
            url = a;
        } else if (stream == NULL) {
            stream = a;
        } else {
            return usage();
        }
    }
    if (url == NULL || stream == NULL) {
        return usage();
    }
    struct gust_nats_url u;
    if (gust_nats_url_parse(url, &u) == NULL) {
        link.tls = u.tls || link.tls_ca != NULL || link.tls_cert != NULL;
        if (strspn(u.host, "0123456789.:") != strlen(u.host)) {
            snprintf(link.tls_server_name, sizeof(link.tls_server_name), "%s", u.host);
        }
        gust_nats_url_free(&u);
    }
    natsConnection *nc = NULL;
    natsOptions *opts = NULL;
    jsCtx *js = NULL;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    struct gust_err err = {{0}};
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetURL(opts, url);
    if (s == NATS_OK && gust_nats_opts_fill(opts, &link, "gust-stream-read", &err) != 0) {
        fprintf(stderr, "gust-stream-read: %s\n", err.msg);
        return 1;
    }
    if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
    if (s == NATS_OK) s = natsConnection_JetStream(&js, nc, NULL);
    jsOptions so;
    jsOptions_Init(&so);
    so.Stream.Info.SubjectsFilter = last;
    /* A timeout (a loaded machine, a cluster electing a leader) is asked again. */
    for (int tries = 0; s == NATS_OK; tries++) {
        s = js_GetStreamInfo(&si, js, stream, last != NULL ? &so : NULL, &jerr);
        if (s != NATS_TIMEOUT || tries == 20) break;
        nats_Sleep(100);
        s = NATS_OK;
    }
    if (s != NATS_OK) {
        const char *why = nats_GetLastError(NULL);
        fprintf(stderr, "gust-stream-read: %s (jetstream error %d)\n", why != NULL ? why : natsStatus_GetText(s),
                (int)jerr);
        return 1;
    }
    natsOptions_Destroy(opts);
    if (count) {
        printf("%" PRIu64 "\n", si->State.Msgs);
    } else if (last != NULL) {
        for (int i = 0; si->State.Subjects != NULL && i < si->State.Subjects->Count; i++) {
            const char *subject = si->State.Subjects->List[i].Subject;
            natsMsg *m = NULL;
            for (int tries = 0;; tries++) {
                s = js_GetLastMsg(&m, js, stream, subject, NULL, &jerr);
                if (s != NATS_TIMEOUT || tries == 100) break;
                nats_Sleep(100);
            }
            if (s != NATS_OK) {
                fprintf(stderr, "gust-stream-read: %s: %s (jetstream error %d)\n", subject, natsStatus_GetText(s),
                        (int)jerr);
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
                s = js_GetMsg(&m, js, stream, seq, NULL, &jerr);
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
