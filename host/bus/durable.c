/* A unit's durable pull consumer as a feed (feeds.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "bus_int.h"
#include "delivery.h"
#include "feeds.h"
#include "nats_msg.h"
#include "pull.h"
#include "retention.h"

struct durable {
    struct gust_feed feed;
    struct gust_bus *bus;
    struct gust_pull *pull;
    struct gust_batch_room room;
    char filter[256];
};

/* The durable consumer as conf wants it: created, updated in place, or recreated. */
static int ensure_consumer(const struct gust_durable_conf *conf, jsCtx *js, struct gust_err *err)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = conf->durable;
    cc.FilterSubject = conf->filter;
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = conf->ack_wait_ms * 1000000;
    /* Redelivery is unlimited on the server: the unit itself dead-letters a message
     * after max_deliver rejections, so a crash on the last attempt loses nothing. */
    cc.MaxDeliver = -1;
    cc.MaxAckPending = conf->max_ack_pending;
    jsErrCode jerr = 0;
    jsConsumerInfo *ci = NULL;
    natsStatus s = js_GetConsumerInfo(&ci, js, conf->stream, conf->durable, NULL, &jerr);
    if (s == NATS_OK && conf->from_ack_floor && ci->NumAckPending > 0) {
        /* Everything after the floor again, in stream order (an ordered sink acks its
         * batches whole and in order: what lies past the floor was not all delivered). */
        uint64_t floor = ci->AckFloor.Stream;
        gust_info("[%s] %" PRId64 " message(s) delivered and not acked: reading again from stream sequence %" PRIu64
                  " in order", conf->durable, (int64_t)ci->NumAckPending, floor + 1);
        js_DeleteConsumer(js, conf->stream, conf->durable, NULL, &jerr);
        jsConsumerInfo_Destroy(ci);
        ci = NULL;
        if (floor > 0) {
            cc.DeliverPolicy = js_DeliverByStartSequence;
            cc.OptStartSeq = floor + 1;
        }
        s = js_AddConsumer(&ci, js, conf->stream, &cc, NULL, &jerr);
    } else if (s == NATS_OK) {
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
    gust_retention_note_consumer_change(); /* what the retention pass knew of it may be stale */
    if (s != NATS_OK) {
        return gust_err_set(err, GUST_EIO, "%s: cannot create consumer on %s: %s (jetstream error %d)", conf->durable,
                            conf->filter, gust_bus__reason(s), (int)jerr);
    }
    return 0;
}

static int durable_next(struct gust_feed *f, struct gust_in *in, size_t max, int with_headers, char *why,
                        size_t why_size)
{
    struct durable *d = (struct durable *)f;
    if (gust_batch_room_reserve(&d->room, max, with_headers) != 0) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    int status = 0;
    int n = gust_pull_next(d->pull, d->room.msgs, max, f->linger_ms, &status, why, why_size);
    for (int i = 0; i < n; i++) {
        gust_delivery_fill(&in[i], &d->room, (size_t)i, with_headers);
    }
    return n;
}

/* An ack is a plain publish to the message's reply subject, as natsMsg_Ack sends it,
 * on the buffered connection: a batch's acks leave in one write. */
static void durable_settle(struct gust_feed *f, struct gust_in *m, int64_t delay_ms)
{
    struct durable *d = (struct durable *)f;
    const char *reply = natsMsg_GetReply(m->ref);
    if (reply == NULL || reply[0] == '\0') {
        return;
    }
    if (delay_ms < 0) {
        natsConnection_PublishString(gust_bus__conn(d->bus), reply, "+ACK");
        return;
    }
    char body[64];
    snprintf(body, sizeof(body), "-NAK {\"delay\":%" PRId64 "}", delay_ms * 1000000);
    natsConnection_PublishString(gust_bus__conn(d->bus), reply, body);
}

static void durable_progress(struct gust_feed *f, struct gust_in *m)
{
    struct durable *d = (struct durable *)f;
    const char *reply = natsMsg_GetReply(m->ref);
    if (reply != NULL && reply[0] != '\0') {
        natsConnection_PublishString(gust_bus__conn(d->bus), reply, "+WPI");
    }
}

static void durable_close(struct gust_feed *f)
{
    struct durable *d = (struct durable *)f;
    gust_pull_hand_back(d->pull);
    gust_pull_destroy(d->pull);
    gust_batch_room_free(&d->room);
    free(d);
}

static const struct gust_feed_ops durable_ops = {
    .next = durable_next, .settle = durable_settle, .release = gust_delivery_release, .close = durable_close,
    .progress = durable_progress};

int gust_durable_feed_open(struct gust_bus *bus, const struct gust_durable_conf *conf, struct gust_feed **out,
                           struct gust_err *err)
{
    int rc = ensure_consumer(conf, gust_bus__js(bus), err);
    if (rc != 0) {
        return rc;
    }
    struct durable *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    d->feed.ops = &durable_ops;
    d->bus = bus;
    snprintf(d->filter, sizeof(d->filter), "%s", conf->filter);
    rc = gust_pull_create(gust_bus__conn_now(bus), conf->stream, conf->durable, conf->expires_ms, &d->pull, err);
    if (rc != 0) {
        free(d);
        return rc;
    }
    *out = &d->feed;
    return 0;
}

uint64_t gust_durable_ack_floor(struct gust_bus *bus, const char *stream, const char *durable)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    if (js_GetConsumerInfo(&ci, gust_bus__js(bus), stream, durable, NULL, &jerr) != NATS_OK) {
        return 0;
    }
    uint64_t floor = ci->AckFloor.Stream;
    jsConsumerInfo_Destroy(ci);
    return floor;
}

int gust_durable_delete(struct gust_bus *bus, const char *stream, const char *durable)
{
    jsErrCode jerr = 0;
    natsStatus s = js_DeleteConsumer(gust_bus__js(bus), stream, durable, NULL, &jerr);
    gust_retention_note_consumer_change();
    return s == NATS_OK || s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr ? 0 : GUST_EIO;
}
