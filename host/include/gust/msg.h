/* Messages handed to a sink, and what the sink says about each.
 *
 * Both cross the plugin ABI in arrays. The host honours the element size the plugin was
 * built with (gust_plugin_desc.msg_size and .result_size), so fields are only ever added
 * at the end and an older plugin keeps reading its own layout. */
#ifndef GUST_MSG_H
#define GUST_MSG_H

#include <stddef.h>
#include <stdint.h>

/* A message header: name and value, NUL-terminated. */
struct gust_header {
    const char *name;
    const char *value;
};

/* One message. Borrowed: valid only during the deliver() call. */
struct gust_msg {
    const char *subject;
    const void *data;
    size_t len;
    uint64_t stream_seq;
    uint32_t attempt;  /* 1 on first delivery */
    int64_t stored_ns; /* when the stream stored it, ns since the epoch (0: unknown) */
    /* ABI 1.2: its NATS headers (Nats-Msg-Id among them when it has one), the first value
     * of each name, at most 32; for a sink only when its type sets wants_headers, except
     * that a message with trace context always has its traceparent (the sink's span)
     * and tracestate here. */
    const struct gust_header *headers;
    size_t nheaders;
    /* New fields go here, at the end. */
};

/* What a sink says about one message. */
enum gust_delivery {
    GUST_DELIVERED = 0, /* done: the host acks it */
    GUST_RETRY = 1,     /* the far end is down or busy: redelivered with backoff until it
                           takes it; the bus holds it meanwhile, never dead-lettered */
    GUST_REJECTED = 2,  /* the far end refused it: max_deliver attempts (it may be fixed
                           meanwhile), then the dead-letter stream */
};

struct gust_result {
    int status;      /* enum gust_delivery; the host sets GUST_RETRY before the call */
    char error[200]; /* why, for RETRY and REJECTED; goes into the dead-letter envelope */
};

#endif
