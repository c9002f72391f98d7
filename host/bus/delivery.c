#include "delivery.h"

#include <stdlib.h>
#include <string.h>

#include "ack_subject.h"
#include "gust/err.h"
#include "nats_msg.h"
#include "reply.h"

uint64_t gust_delivery_fill(struct gust_in *in, struct gust_batch_room *room, size_t slot, int with)
{
    int with_headers = (with & GUST_FEED_HEADERS) != 0;
    natsMsg *m = room->msgs[slot];
    struct gust_ack_meta meta = {.delivered = 1};
    gust_ack_subject_parse(natsMsg_GetReply(m), &meta); /* none: a first delivery, no sequence */
    uint64_t attempt = meta.delivered, seq = meta.stream_seq, cseq = meta.consumer_seq, pending = meta.pending;
    int64_t ts = meta.stored_ns;
    in->msg = (struct gust_msg){.subject = natsMsg_GetSubject(m), .data = natsMsg_GetData(m),
                                .len = (size_t)natsMsg_GetDataLength(m), .stream_seq = seq,
                                .attempt = (uint32_t)attempt, .stored_ns = ts};
    in->ref = m;
    in->tick = NULL;
    in->reply_to = NULL;
    in->traceparent = NULL;
    in->tracestate = NULL;
    in->pending = pending;
    /* A detect unit's stored ticks: {"@tick": ms} and {"@timer": ms} (detect_tick.c). */
    static const char tick_prefix[] = "{\"@ti";
    if (in->msg.len > sizeof(tick_prefix) - 1 && memcmp(in->msg.data, tick_prefix, sizeof(tick_prefix) - 1) == 0) {
        /* Only what looks like a tick costs a header lookup. */
        const char *unit = NULL;
        if (natsMsgHeader_Get(m, GUST_TICK_HEADER, &unit) == NATS_OK) {
            in->tick = unit;
        }
    }
    const char **keys = NULL;
    int nkeys = 0;
    if (with_headers && slot < room->headers_cap && natsMsgHeader_Keys(m, &keys, &nkeys) == NATS_OK) {
        struct gust_header *h = room->headers + slot * GUST_DELIVERY_HEADERS_MAX;
        size_t n = 0;
        for (int k = 0; k < nkeys && n < GUST_DELIVERY_HEADERS_MAX; k++) {
            const char *value = NULL;
            if (natsMsgHeader_Get(m, keys[k], &value) == NATS_OK && value != NULL) {
                h[n++] = (struct gust_header){keys[k], value};
            }
        }
        free((void *)keys); /* the array is ours, the strings the message's */
        in->msg.headers = h;
        in->msg.nheaders = n;
    }
    if (with & GUST_FEED_REPLY_TO) {
        /* Only a message that has headers costs a parse: ingest's have none unless
         * the client gave an Idempotency-Key. */
        const char *to = NULL;
        if (natsMsgHeader_Get(m, GUST_REPLY_TO_HEADER, &to) == NATS_OK) {
            in->reply_to = to;
        }
    }
    if (with & GUST_FEED_TRACE) {
        /* nats.c answers at once for a message without headers: no parse. */
        const char *tp = NULL, *ts = NULL;
        if (natsMsgHeader_Get(m, "traceparent", &tp) == NATS_OK) {
            in->traceparent = tp;
            if (natsMsgHeader_Get(m, "tracestate", &ts) == NATS_OK) {
                in->tracestate = ts;
            }
        }
    }
    return cseq;
}

void gust_delivery_release(struct gust_feed *f, struct gust_in *in, size_t n)
{
    (void)f;
    for (size_t i = 0; i < n; i++) {
        gust_nats_msg_free(in[i].ref); /* natsMsg_Destroy would wake nats.c's collector thread */
        in[i].ref = NULL;
    }
}

int gust_batch_room_reserve(struct gust_batch_room *room, size_t max, int with)
{
    int with_headers = (with & GUST_FEED_HEADERS) != 0;
    if (max > room->cap) {
        natsMsg **msgs = realloc(room->msgs, max * sizeof(*msgs));
        if (msgs == NULL) {
            return GUST_ENOMEM;
        }
        room->msgs = msgs;
        room->cap = max;
    }
    if (with_headers && max > room->headers_cap) {
        struct gust_header *h = realloc(room->headers, max * GUST_DELIVERY_HEADERS_MAX * sizeof(*h));
        if (h == NULL) {
            return GUST_ENOMEM;
        }
        room->headers = h;
        room->headers_cap = max;
    }
    return 0;
}

void gust_batch_room_free(struct gust_batch_room *room)
{
    free(room->msgs);
    free(room->headers);
    *room = (struct gust_batch_room){0};
}
