#include "pull.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/bus.h"
#include "../common/log.h"

/* How long past its expiry a request may still answer (its 408, or a last message)
 * before the next call sends a new one anyway. */
#define EXPIRY_GRACE_MS 50

struct gust_pull {
    natsConnection *nc;
    natsSubscription *inbox;
    char inbox_subject[96];
    char next_subject[256]; /* $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable> */
    int64_t expires_ms;
    /* The open request: how many messages the server may still send for it, and when
     * it ends. owed 0: none open. */
    size_t owed;
    int64_t deadline_ms;
};

/* The durable consumer as conf wants it: created, updated in place, or recreated. */
static int ensure_consumer(const struct gust_pull_conf *conf, jsCtx *js, struct gust_err *err)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = conf->durable;
    cc.FilterSubject = conf->filter;
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = conf->ack_wait_ms * 1000000;
    /* Redelivery is unlimited on the server: the unit itself dead-letters a message
     * after max_deliver attempts, so a crash on the last attempt loses nothing. */
    cc.MaxDeliver = -1;
    cc.MaxAckPending = conf->max_ack_pending;
    jsErrCode jerr = 0;
    jsConsumerInfo *ci = NULL;
    natsStatus s = js_GetConsumerInfo(&ci, js, conf->stream, conf->durable, NULL, &jerr);
    if (s == NATS_OK) {
        const char *old = ci->Config->FilterSubject != NULL ? ci->Config->FilterSubject : "";
        if (strcmp(old, conf->filter) != 0) {
            /* nats-server 2.9 cannot change a durable's filter: a unit whose source
             * changed starts a new consumer, as if the unit were new. */
            gust_warn("[%s] source changed from %s to %s: recreating its consumer", conf->durable, old, conf->filter);
            js_DeleteConsumer(js, conf->stream, conf->durable, NULL, &jerr);
            jsConsumerInfo_Destroy(ci);
            ci = NULL;
            s = js_AddConsumer(&ci, js, conf->stream, &cc, NULL, &jerr);
        } else if (ci->Config->AckWait != cc.AckWait || ci->Config->MaxAckPending != cc.MaxAckPending) {
            /* ack_wait or batch changed: the rest of the consumer stays as it is. */
            ci->Config->AckWait = cc.AckWait;
            ci->Config->MaxAckPending = cc.MaxAckPending;
            jsConsumerInfo *updated = NULL;
            s = js_UpdateConsumer(&updated, js, conf->stream, ci->Config, NULL, &jerr);
            jsConsumerInfo_Destroy(updated);
            if (s == NATS_OK) {
                gust_info("[%s] consumer updated: ack_wait %" PRId64 " ms, max_ack_pending %" PRId64, conf->durable,
                          conf->ack_wait_ms, conf->max_ack_pending);
            }
        }
    } else {
        s = js_AddConsumer(&ci, js, conf->stream, &cc, NULL, &jerr);
    }
    jsConsumerInfo_Destroy(ci);
    if (s != NATS_OK) {
        const char *why = nats_GetLastError(NULL);
        return gust_err_set(err, GUST_EIO, "%s: cannot create consumer on %s: %s (jetstream error %d)", conf->durable,
                            conf->filter, why != NULL ? why : natsStatus_GetText(s), (int)jerr);
    }
    return 0;
}

int gust_pull_open(const struct gust_pull_conf *conf, jsCtx *js, natsConnection *nc, struct gust_pull **out,
                   struct gust_err *err)
{
    int rc = ensure_consumer(conf, js, err);
    if (rc != 0) {
        return rc;
    }
    struct gust_pull *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    p->nc = nc;
    p->expires_ms = conf->expires_ms;
    snprintf(p->next_subject, sizeof(p->next_subject), "$JS.API.CONSUMER.MSG.NEXT.%s.%s", conf->stream,
             conf->durable);
    char *inbox = NULL;
    natsStatus s = natsInbox_Create(&inbox);
    if (s == NATS_OK) {
        snprintf(p->inbox_subject, sizeof(p->inbox_subject), "%s", inbox);
        natsInbox_Destroy(inbox);
        s = natsConnection_SubscribeSync(&p->inbox, nc, p->inbox_subject);
    }
    /* The server's max_ack_pending bounds what can be waiting here. */
    if (s == NATS_OK) s = natsSubscription_SetPendingLimits(p->inbox, -1, -1);
    if (s != NATS_OK) {
        gust_pull_close(p);
        return gust_err_set(err, GUST_EIO, "%s: cannot subscribe: %s", conf->durable, natsStatus_GetText(s));
    }
    *out = p;
    return 0;
}

static void request(struct gust_pull *p, size_t batch)
{
    char body[96];
    int n = snprintf(body, sizeof(body), "{\"batch\":%zu,\"expires\":%" PRId64 "}", batch, p->expires_ms * 1000000);
    /* A request written while the connection is down waits in nats.c's reconnect
     * buffer; what it brings later is handled like any delivery. */
    natsConnection_PublishRequest(p->nc, p->next_subject, p->inbox_subject, body, n);
    p->owed = batch;
    p->deadline_ms = gust_now_ms() + p->expires_ms;
}

/* A status message ends the request it answers: 404/408 (nothing more for it), 409
 * (the server refused it: too many waiting, consumer deleted, leader changed), 100
 * (a heartbeat, which we never ask for). Returns the code, or 0 for a user message. */
static int status_of(natsMsg *m, char *why, size_t why_size)
{
    const char *code = NULL;
    if (natsMsg_GetDataLength(m) > 0 || natsMsgHeader_Get(m, "Status", &code) != NATS_OK || code == NULL) {
        return 0;
    }
    const char *desc = NULL;
    natsMsgHeader_Get(m, "Description", &desc);
    snprintf(why, why_size, "pull request: %s %s", code, desc != NULL ? desc : "");
    return atoi(code);
}

int gust_pull_next(struct gust_pull *p, natsMsg **msgs, size_t max, char *why, size_t why_size)
{
    int64_t now = gust_now_ms();
    if (p->owed == 0 || now >= p->deadline_ms + EXPIRY_GRACE_MS) {
        request(p, max);
    }
    size_t n = 0;
    while (n < max) {
        int64_t wait = 0;
        if (n == 0) {
            wait = p->deadline_ms + EXPIRY_GRACE_MS - gust_now_ms();
            wait = wait < 1 ? 1 : wait;
        }
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, p->inbox, wait);
        if (s == NATS_TIMEOUT) {
            break;
        }
        if (s != NATS_OK) {
            /* No responders: JetStream was not there to take the request. */
            p->owed = 0;
            if (n > 0) {
                break;
            }
            snprintf(why, why_size, "pull request: %s", natsStatus_GetText(s));
            return -1;
        }
        int status = status_of(m, why, why_size);
        if (status == 0) {
            msgs[n++] = m;
            p->owed -= p->owed > 0;
            continue;
        }
        natsMsg_Destroy(m);
        if (status == 100) {
            continue;
        }
        p->owed = 0;
        if (n > 0 || status == 404 || status == 408) {
            break;
        }
        return -1;
    }
    return (int)n;
}

void gust_pull_close(struct gust_pull *p)
{
    if (p == NULL) {
        return;
    }
    natsSubscription_Destroy(p->inbox);
    free(p);
}
