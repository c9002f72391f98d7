/* JetStream's answer to a publish (the PubAck), read by the bus and by ingest.
 *
 * A PubAck is {"stream":"GUST","seq":12[,"duplicate":true]} or
 * {"error":{"code":503,"err_code":10077,"description":"..."}}, from a server that may be
 * broken or hostile. It is parsed here by hand rather than with yajl because it is on
 * the path of every publish (no allocation, one pass), and strictly: a PubAck that is not
 * exactly one JSON object with a stream name and a sequence in 1..2^64-1 is never taken
 * for a stored message. tests/unit/bus/fuzz_puback.c checks it against yajl. */
#ifndef GUST_BUS_PUBACK_H
#define GUST_BUS_PUBACK_H

#include <stddef.h>
#include <stdint.h>

struct gust_puback {
    uint64_t seq;  /* the message's sequence in the stream */
    int duplicate; /* JetStream had it already (the same Nats-Msg-Id in its window) */
    /* Why JetStream refused it (GUST_EIO): */
    int full;     /* the store is full (why: "store full"): it may take it later */
    int for_good; /* it will never take this message (too large for the stream) */
    /* The stream that answered, "" when the answer named none (or a longer name): a
     * refusal names it too, so a full KV bucket is not taken for the event stream. */
    char stream[128];
};

/* 0 and ack filled when data (len bytes) is a PubAck of a stored message;
 * GUST_EIO when JetStream refused the message (why: its description);
 * GUST_EINVAL when data is no PubAck at all (why: what is wrong; the message may or may
 * not be stored). why is always NUL-terminated, printable ASCII. */
int gust_puback_parse(const char *data, size_t len, struct gust_puback *ack, char *why, size_t why_size);

/* The subject of a server's "Permissions Violation for Publish to \"SUBJ\"" into out
 * (NUL-terminated): 0, or -1 when text is no such refusal. */
int gust_refused_subject(const char *text, char *out, size_t size);

#endif
