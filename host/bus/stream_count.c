#include "stream_count.h"

#include <stdio.h>

#include "bus_int.h"

#define API_WAIT_MS 5000

int gust_stream_count(struct gust_bus *bus, const char *stream, const char *filter, uint64_t start_seq,
                      int64_t since_ms, uint64_t *first, uint64_t *count, char *why, size_t why_size)
{
    *first = 0;
    *count = 0;
    if (!gust_bus_connected(bus)) {
        snprintf(why, why_size, "bus not connected");
        return GUST_EAGAIN;
    }
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.FilterSubject = filter;
    cc.AckPolicy = js_AckNone;
    if (since_ms > 0) {
        cc.DeliverPolicy = js_DeliverByStartTime;
        cc.OptStartTime = since_ms * 1000000;
    } else if (start_seq > 1) {
        cc.DeliverPolicy = js_DeliverByStartSequence;
        cc.OptStartSeq = start_seq;
    } else {
        cc.DeliverPolicy = js_DeliverAll;
    }
    cc.InactiveThreshold = (int64_t)30000 * 1000000; /* gone by itself should the delete be lost */
    cc.MemoryStorage = true;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = API_WAIT_MS;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddConsumer(&ci, gust_bus__js(bus), stream, &cc, &o, &jerr);
    if (s != NATS_OK) {
        snprintf(why, why_size, "cannot count %s in %s: %s (jetstream error %d)", filter, stream, gust_bus__reason(s),
                 (int)jerr);
        return s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS ? GUST_EAGAIN : GUST_EIO;
    }
    /* A new consumer has delivered nothing: its Delivered.Stream is the sequence
     * before its first message. */
    *count = ci->NumPending;
    *first = ci->NumPending > 0 ? ci->Delivered.Stream + 1 : 0;
    js_DeleteConsumer(gust_bus__js(bus), stream, ci->Name, &o, &jerr);
    jsConsumerInfo_Destroy(ci);
    return 0;
}
