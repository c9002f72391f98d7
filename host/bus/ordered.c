/* An ordered read of a stream from a sequence (feeds.h).
 *
 * The reader keeps its position (the next stream sequence it wants) itself. Its
 * consumer is ephemeral and acknowledges nothing, so the server never redelivers: each
 * message comes once. What could still go wrong is a delivery lost on the way (a
 * reconnect drops what was in flight) or a consumer the server forgot (a restart):
 * the consumer sequence of every delivery must be the previous one plus one, and on
 * a gap, an error or a seek the consumer is replaced by a new one starting at the
 * position. (nats.c's own ordered consumer does this for push subscriptions, whose
 * messages a library thread delivers; the units read with pull requests: pull.h.) */
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

/* How long the server keeps a consumer nobody pulls from (a process that died). */
#define INACTIVE_MS 30000
/* Consumer calls give up after this: a stop must not wait long on a server away. */
#define API_WAIT_MS 2000

static jsOptions *api_opts(jsOptions *o)
{
    jsOptions_Init(o);
    o->Wait = API_WAIT_MS;
    return o;
}

struct ordered {
    struct gust_feed feed;
    struct gust_bus *bus;
    char stream[64];
    char filter[256];
    int64_t expires_ms;
    uint64_t next_seq;   /* the position: the next stream sequence wanted */
    char consumer[128];  /* the server's name for it; "" when there is none */
    uint64_t last_cseq;  /* consumer sequence of its last delivery */
    struct gust_pull *pull;
    struct gust_batch_room room;
    int warned;
};

static void drop_consumer(struct ordered *o)
{
    gust_pull_destroy(o->pull);
    o->pull = NULL;
    if (o->consumer[0] != '\0' && gust_bus_connected(o->bus)) {
        /* Otherwise the server forgets it after INACTIVE_MS by itself. */
        jsErrCode jerr = 0;
        jsOptions opts;
        js_DeleteConsumer(gust_bus__js(o->bus), o->stream, o->consumer, api_opts(&opts), &jerr);
    }
    o->consumer[0] = '\0';
}

static int make_consumer(struct ordered *o, char *why, size_t why_size)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.FilterSubject = o->filter;
    cc.AckPolicy = js_AckNone;
    cc.DeliverPolicy = o->next_seq > 1 ? js_DeliverByStartSequence : js_DeliverAll;
    cc.OptStartSeq = o->next_seq > 1 ? o->next_seq : 0;
    cc.InactiveThreshold = (int64_t)INACTIVE_MS * 1000000;
    cc.MemoryStorage = true; /* nothing of it needs to survive: the reader has the position */
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    jsOptions opts;
    natsStatus s = js_AddConsumer(&ci, gust_bus__js(o->bus), o->stream, &cc, api_opts(&opts), &jerr);
    if (s != NATS_OK) {
        snprintf(why, why_size, "cannot read %s from %" PRIu64 ": %s (jetstream error %d)", o->filter, o->next_seq,
                 gust_bus__reason(s), (int)jerr);
        return -1;
    }
    snprintf(o->consumer, sizeof(o->consumer), "%s", ci->Name);
    jsConsumerInfo_Destroy(ci);
    struct gust_err err;
    if (gust_pull_create(gust_bus__conn_now(o->bus), o->stream, o->consumer, o->expires_ms, &o->pull, &err) != 0) {
        snprintf(why, why_size, "%s", err.msg);
        drop_consumer(o);
        return -1;
    }
    o->last_cseq = 0;
    return 0;
}

static int ordered_next(struct gust_feed *f, struct gust_in *in, size_t max, int with_headers, char *why,
                        size_t why_size)
{
    struct ordered *o = (struct ordered *)f;
    if (gust_batch_room_reserve(&o->room, max, with_headers) != 0) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    if (o->pull == NULL && make_consumer(o, why, why_size) != 0) {
        return -1;
    }
    int status = 0;
    int n = gust_pull_next(o->pull, o->room.msgs, max, f->linger_ms, &status, why, why_size);
    if (n < 0) {
        drop_consumer(o); /* made again at the position next time */
        return -1;
    }
    size_t kept = 0;
    int gap = 0;
    for (int i = 0; i < n; i++) {
        natsMsg *m = o->room.msgs[i];
        if (gap) {
            gust_nats_msg_free(m);
            continue;
        }
        uint64_t cseq = gust_delivery_fill(&in[kept], &o->room, (size_t)i, with_headers);
        uint64_t seq = in[kept].msg.stream_seq;
        if (cseq != o->last_cseq + 1 || seq < o->next_seq) {
            /* A delivery went missing (or this one is not the next): start over at the
             * position; what came after the gap comes again. */
            if (!o->warned++) {
                gust_warn("reader %s: delivery %" PRIu64 " after %" PRIu64 " (stream seq %" PRIu64
                          ", wanted %" PRIu64 "): reading again from %" PRIu64,
                          o->filter, cseq, o->last_cseq, seq, o->next_seq, o->next_seq);
            }
            gust_nats_msg_free(m);
            gap = 1;
            continue;
        }
        o->last_cseq = cseq;
        o->next_seq = seq + 1;
        kept++;
    }
    if (gap) {
        drop_consumer(o);
    } else {
        o->warned = 0;
    }
    return (int)kept;
}

static void ordered_settle(struct gust_feed *f, struct gust_in *m, int64_t delay_ms)
{
    (void)f, (void)m, (void)delay_ms; /* nothing to acknowledge */
}

static void ordered_seek(struct gust_feed *f, uint64_t seq)
{
    struct ordered *o = (struct ordered *)f;
    drop_consumer(o);
    o->next_seq = seq;
}

static void ordered_close(struct gust_feed *f)
{
    struct ordered *o = (struct ordered *)f;
    drop_consumer(o);
    gust_batch_room_free(&o->room);
    free(o);
}

static const struct gust_feed_ops ordered_ops = {.next = ordered_next,
                                                 .settle = ordered_settle,
                                                 .release = gust_delivery_release,
                                                 .seek = ordered_seek,
                                                 .close = ordered_close};

int gust_ordered_feed_open(struct gust_bus *bus, const char *stream, const char *filter, uint64_t start_seq,
                           int64_t expires_ms, struct gust_feed **out, struct gust_err *err)
{
    struct ordered *o = calloc(1, sizeof(*o));
    if (o == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    o->feed.ops = &ordered_ops;
    o->bus = bus;
    o->expires_ms = expires_ms;
    o->next_seq = start_seq;
    snprintf(o->stream, sizeof(o->stream), "%s", stream);
    snprintf(o->filter, sizeof(o->filter), "%s", filter);
    *out = &o->feed;
    return 0;
}
