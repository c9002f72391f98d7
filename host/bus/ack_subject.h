/* What JetStream says of a delivery in its reply subject, read without allocating
 * (natsMsg_GetMetaData allocates a struct and copies the stream's and consumer's names,
 * for every message a unit takes):
 *   $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ns>.<pending>
 *   $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<stream seq>.
 *           <consumer seq>.<ns>.<pending>[.<more>...]                    (servers 2.9+) */
#ifndef GUST_BUS_ACK_SUBJECT_H
#define GUST_BUS_ACK_SUBJECT_H

#include <stdint.h>

struct gust_ack_meta {
    uint64_t delivered;    /* deliveries of the message so far, this one included */
    uint64_t stream_seq;
    uint64_t consumer_seq;
    int64_t stored_ns;     /* when the stream stored it (Unix ns) */
    uint64_t pending;      /* messages of the consumer still to deliver after it */
};

/* 0 with m filled, or -1 when reply is not such a subject (m untouched). */
int gust_ack_subject_parse(const char *reply, struct gust_ack_meta *m);

#endif
