/* The bus as the consumer core sees it: where a unit's messages come from (a feed) and
 * where what it produces goes (an outlet). host/bus implements them on NATS (pull.c:
 * a durable consumer; ordered.c: an ordered read from a stream sequence; bus.c: the
 * outlet), host/unit/edge.c feeds from memory, and tests/runtime fakes both, so the
 * publish-before-ack barrier can be tested without a server. Nothing here names NATS.
 *
 * Threads: a feed belongs to its unit's thread. An outlet is shared and thread-safe;
 * its completions run on a thread of the bus. */
#ifndef GUST_BUS_PORT_H
#define GUST_BUS_PORT_H

#include <stddef.h>
#include <stdint.h>

#include "gust/plugin.h" /* struct gust_msg, struct gust_header, gust_publish_done_fn */

/* One message a feed handed out: msg is what handlers read (borrowed from the feed
 * until it is released), ref the feed's own handle. */
struct gust_in {
    struct gust_msg msg;
    void *ref;
    /* A detect unit's stored idle tick (GUST_TICK_HEADER): the unit it is for, else NULL.
     * Only that unit reads it; the core acks it for every other one. */
    const char *tick;
    /* Where the request that waits for this message's reply listens (its
     * GUST_REPLY_TO_HEADER, reply.h), when the feed was asked for it; else NULL. */
    const char *reply_to;
    /* Its W3C trace context (the traceparent and tracestate headers), when the feed
     * was asked for it and the message has one; else NULL. */
    const char *traceparent;
    const char *tracestate;
    /* How many messages of the feed came after this one when it was delivered, as the
     * server counts them (0: none, or a feed that cannot say). */
    uint64_t pending;
};

/* The header that marks a detect unit's idle tick ({"@tick": ms}) on its input subject. */
#define GUST_TICK_HEADER "Gust-Tick"

/* What a feed's next() fills in besides the message (flags). */
#define GUST_FEED_HEADERS 1
#define GUST_FEED_REPLY_TO 2
#define GUST_FEED_TRACE 4

struct gust_feed;

struct gust_feed_ops {
    /* Waits up to a bound of the feed's for messages, then takes those already there
     * (or that come within f->linger_ms of the first): up to max into in[]. Returns
     * how many (0: none in time) or -1 with why filled in.
     * with: GUST_FEED_HEADERS fills msg.headers (they cost a parse each),
     * GUST_FEED_REPLY_TO fills reply_to (a header lookup), GUST_FEED_TRACE traceparent
     * and tracestate (a lookup, free for a message without headers). A feed sets
     * every field of each gust_in it hands out. */
    int (*next)(struct gust_feed *f, struct gust_in *in, size_t max, int with, char *why,
                size_t why_size);
    /* Done with one message: acked (delay_ms < 0) or to be redelivered after delay_ms.
     * A feed without acknowledgements (ordered, edge) ignores it. */
    void (*settle)(struct gust_feed *f, struct gust_in *m, int64_t delay_ms);
    /* Gives the messages back; they may not be read afterwards. */
    void (*release)(struct gust_feed *f, struct gust_in *in, size_t n);
    /* Ordered feeds: the next message handed out is the first with a stream sequence
     * at or after seq. NULL for the others. */
    void (*seek)(struct gust_feed *f, uint64_t seq);
    /* Wakes a thread waiting in next (a stop). May be NULL. */
    void (*wake)(struct gust_feed *f);
    void (*close)(struct gust_feed *f);
    /* Still working on m (an ordered sink retrying it in place): its ack_wait starts
     * again, so the bus does not deliver it again meanwhile. May be NULL. */
    void (*progress)(struct gust_feed *f, struct gust_in *m);
};

struct gust_feed {
    const struct gust_feed_ops *ops;
    /* After a stop is asked for, how many more messages the unit takes before it stops
     * (the edge path handles what its queue holds: at most a queue's worth). */
    size_t drain_on_stop;
    /* Once next() has a first message, how long it waits for `max` (0: it takes what is
     * there). Set by the consumer core (a batching sink's linger); feeds that cannot
     * wait ignore it. */
    int64_t linger_ms;
};

/* One message to publish. */
struct gust_pub {
    const char *subject;
    const void *data;
    size_t len;
    const char *msg_id; /* Nats-Msg-Id: JetStream stores a repeat within its duplicate
                           window once (NULL: none) */
    const struct gust_header *headers;
    size_t nheaders;
};

/* A publish's outcome (gust_publish_done_fn's status) when the server refuses the
 * message for good (larger than its max_payload, not permitted): sending it again
 * cannot store it. Other failures (the store full, a timeout, a disconnection) may pass
 * later. */
#define GUST_PUBLISH_REFUSED (-20)

struct gust_outlet;

struct gust_outlet_ops {
    /* Starts a confirmed publish (p and what it points to are copied before return);
     * done runs once with the outcome. GUST_EAGAIN when not connected or too many are
     * pending: done is then not called. */
    int (*publish)(struct gust_outlet *o, const struct gust_pub *p, gust_publish_done_fn done, void *ud);
    /* Sends what is buffered now. */
    void (*flush)(struct gust_outlet *o);
    int (*connected)(struct gust_outlet *o);
    /* Optional (NULL: replies are not sent). Sends the reply to a call (reply.h): a
     * plain message to inbox with the status, fire and forget: nobody may listen any
     * more. 0, or an error with why filled in. */
    int (*reply)(struct gust_outlet *o, const char *inbox, int status, const void *data, size_t len, char *why,
                 size_t why_size);
};

struct gust_outlet {
    const struct gust_outlet_ops *ops;
};

#endif
