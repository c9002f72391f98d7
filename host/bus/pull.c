#include "pull.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "bus.h"
#include "nats_msg.h"
#include "retire.h"
#include "gust/sdk.h"

/* How long past its expiry a request may still answer (its 408, or a last message)
 * before the next call sends a new one anyway. */
#define EXPIRY_GRACE_MS 50
/* A consumer the server no longer has (a restart forgot an ephemeral one, its inactive
 * threshold passed while the unit could not pull) answers nothing at all: JetStream's
 * API subscription takes every $JS.API subject, so not even a no-responders status
 * comes. A live one ends every request with messages or its 408. This many expired
 * requests in a row without a word mean the consumer is gone. */
#define UNANSWERED_MAX 2

struct gust_pull {
    natsConnection *nc;
    natsSubscription *inbox;
    char inbox_subject[96];
    char next_subject[256]; /* $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable> */
    int64_t expires_ms;
    /* The open requests: how many messages the server may still send for them, and
     * when the newest ends. owed 0: none open. */
    size_t owed;
    int64_t deadline_ms;
    int answered;        /* anything came since the newest request was sent */
    unsigned unanswered; /* requests in a row that expired without a word */
};

int gust_pull_create(natsConnection *nc, const char *stream, const char *consumer, int64_t expires_ms,
                     struct gust_pull **out, struct gust_err *err)
{
    struct gust_pull *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    p->nc = nc;
    p->expires_ms = expires_ms;
    snprintf(p->next_subject, sizeof(p->next_subject), "$JS.API.CONSUMER.MSG.NEXT.%s.%s", stream, consumer);
    char *inbox = NULL;
    natsStatus s = natsInbox_Create(&inbox);
    if (s == NATS_OK) {
        snprintf(p->inbox_subject, sizeof(p->inbox_subject), "%s", inbox);
        natsInbox_Destroy(inbox);
        s = natsConnection_SubscribeSync(&p->inbox, nc, p->inbox_subject);
    }
    /* The server's max_ack_pending (or the request's batch) bounds what can wait here. */
    if (s == NATS_OK) {
        s = natsSubscription_SetPendingLimits(p->inbox, -1, -1);
    }
    if (s != NATS_OK) {
        gust_pull_destroy(p);
        return gust_err_set(err, GUST_EIO, "%s: cannot subscribe: %s", consumer, natsStatus_GetText(s));
    }
    *out = p;
    return 0;
}

static void request(struct gust_pull *p, size_t batch)
{
    char body[96];
    int n = snprintf(body, sizeof(body), "{\"batch\":%zu,\"expires\":%" PRId64 "}", batch,
                     p->expires_ms * 1000000);
    /* A request written while the connection is down waits in nats.c's reconnect
     * buffer; what it brings later is handled like any delivery. */
    natsConnection_PublishRequest(p->nc, p->next_subject, p->inbox_subject, body, n);
    p->owed += batch;
    p->deadline_ms = gust_clock_mono_ms() + p->expires_ms;
    p->answered = 0;
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

/* How many messages the request a status message ended will not bring: the server says
 * so in Nats-Pending-Messages (408, 409); without it, take none of the owed as coming. */
static size_t unfulfilled(natsMsg *m, size_t owed)
{
    const char *left = NULL;
    if (natsMsgHeader_Get(m, "Nats-Pending-Messages", &left) != NATS_OK || left == NULL) {
        return owed;
    }
    unsigned long long v = strtoull(left, NULL, 10);
    return v < owed ? (size_t)v : owed;
}

int gust_pull_next(struct gust_pull *p, natsMsg **msgs, size_t max, int64_t linger_ms, int *status_out,
                   char *why, size_t why_size)
{
    int64_t first_at = 0;
    *status_out = 0;
    if (p->owed > 0 && gust_clock_mono_ms() >= p->deadline_ms + EXPIRY_GRACE_MS) {
        p->unanswered += !p->answered;
        p->owed = 0;
        if (p->unanswered >= UNANSWERED_MAX) {
            p->unanswered = 0;
            snprintf(why, why_size, "pull requests to %s unanswered: the consumer is gone", p->next_subject);
            return -1;
        }
    }
    /* Ask for the next batch while this one is taken: a unit busy with a batch then
     * finds the next one here whole when it comes back, instead of the part of a single
     * request that arrived meanwhile (at most two batches are owed). */
    if (p->owed <= max) {
        request(p, max);
    }
    size_t n = 0;
    while (n < max) {
        int64_t wait = 0;
        if (n == 0) {
            wait = p->deadline_ms + EXPIRY_GRACE_MS - gust_clock_mono_ms();
            wait = wait < 1 ? 1 : wait;
        } else if (linger_ms > 0) {
            /* A batching sink: what comes soon after the first goes in the same call. */
            wait = first_at + linger_ms - gust_clock_mono_ms();
            wait = wait < 0 ? 0 : wait;
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
        p->answered = 1;
        p->unanswered = 0;
        int status = status_of(m, why, why_size);
        if (status == 0) {
            first_at = n == 0 ? gust_clock_mono_ms() : first_at;
            msgs[n++] = m;
            p->owed -= p->owed > 0;
            continue;
        }
        if (status == 100) {
            gust_nats_msg_free(m);
            continue;
        }
        p->owed -= unfulfilled(m, p->owed);
        gust_nats_msg_free(m);
        if (n > 0 || status == 404 || status == 408) {
            break;
        }
        *status_out = status;
        return -1;
    }
    return (int)n;
}

void gust_pull_hand_back(struct gust_pull *p)
{
    /* Taken first, NAKed once the inbox is unsubscribed: the requests still open on the
     * server would otherwise bring the NAKed messages straight back to this inbox. */
    natsMsg **taken = NULL, *m = NULL;
    size_t n = 0, cap = 0;
    char why[128];
    while (natsSubscription_NextMsg(&m, p->inbox, 0) == NATS_OK) {
        const char *reply = natsMsg_GetReply(m);
        if (reply == NULL || reply[0] == '\0' || status_of(m, why, sizeof(why)) != 0) {
            natsMsg_Destroy(m);
            continue;
        }
        if (n == cap) {
            size_t c = cap ? 2 * cap : 64;
            natsMsg **t = realloc(taken, c * sizeof(*t));
            if (t == NULL) {
                natsMsg_Destroy(m); /* it waits for ack_wait, as without a hand-back */
                continue;
            }
            taken = t;
            cap = c;
        }
        taken[n++] = m;
    }
    natsSubscription_Unsubscribe(p->inbox);
    for (size_t i = 0; i < n; i++) {
        natsConnection_PublishString(p->nc, natsMsg_GetReply(taken[i]), "-NAK");
        natsMsg_Destroy(taken[i]);
    }
    free(taken);
}

void gust_pull_destroy(struct gust_pull *p)
{
    if (p == NULL) {
        return;
    }
    gust_retire_sub(p->nc, p->inbox);
    free(p);
}
