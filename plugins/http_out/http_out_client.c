/* Delivering a batch over pipelined, kept-alive HTTP/1.1 connections.
 *
 * A batch is spread over up to `connections` connections (no more than it has messages),
 * each taking the next message while it has fewer than `pipeline` outstanding and the
 * batch fewer than `max_inflight`. What a connection takes in one round goes out in ONE
 * write; responses come back in order and are parsed from as few reads as the kernel
 * allows. On this 2-core VM the sink unit was syscall-bound with one request per
 * connection (libcurl): a write, a read and a poll wake-up per message.
 *
 * Losing a connection: requests that got no byte of their answer are resent once on a
 * fresh connection within the same call (a kept-alive connection the server closed
 * while idle is the common case); one that got part of its answer is a RETRY. A server
 * that says it closes (Connection: close, HTTP/1.0) has not seen the requests behind the
 * answer it closed on: they are sent again without counting as a resend. When it closed
 * after the first answer, it will after each: the rest of the call sends one request per
 * connection. (One closing after many, such as nginx at keepalive_requests, keeps the
 * pipeline.)
 *
 * Answers are matched to requests by their order alone, so an answer the server sends
 * unasked shifts every later one onto the wrong request: a 200 meant for one request is
 * taken for the next one's, whose own answer (a 503, say) comes last. Such an answer
 * shows itself only when one arrives with no request outstanding: then every outcome
 * read on that connection in this call is in doubt, and each becomes a RETRY (the
 * outstanding ones too), and the connection is closed. A connection is looked at for
 * such bytes whenever it waits with nothing outstanding in a call (before its next use),
 * and before the call returns (its outcomes are acked then). A far end one answer behind
 * sends the real answer of the last request after the one taken for it, about one
 * answer's time later: a connection that gave a final outcome (a 2xx or a rejection) is
 * watched TRAIL_NS after its last answer until it was once found quiet then (the first
 * answers of a connection are where a server errs most), and every connection for a
 * minute once the far end sent an unasked-for answer; a trusted one is looked at
 * without waiting (waiting an answer's time on every call halved the rate of
 * bench_http_out). An extra answer later than that is not seen before the ack (README,
 * http_out). A connection with unread bytes at the start of a call is closed, never
 * reused.
 *
 * Requests, not messages, are what the connections carry: without batching a request is
 * one message; with it (batch_max > 1 or batch_bytes) a request is a group of up to
 * batch_max messages sharing one request head (url, method and headers rendered alike)
 * and one rate key, its body their array (or ndjson). Groups are made within one deliver
 * call only: messages are the host's until the call returns and each needs its outcome
 * by then, so a group cannot wait for a later call's messages. Filling the groups is the
 * host's part: this type's fetch_limits asks for fetches of a multiple of batch_max, and
 * for a linger of batch_linger once a first message is there (http_out.c). A 2xx settles
 * every message of a group; a refusal (4xx) of a group of several sends each of its
 * messages again alone, in the same call, so that only the bad one is rejected; any other
 * outcome (a RETRY) is every member's.
 *
 * The outage pause (a circuit breaker): a call that met the far end down only (every
 * outcome a RETRY: 5xx, 408, 429, timeouts, connections failing) writes nothing more once
 * the first such answer is in and no 2xx or 4xx came, and opens the breaker: the next
 * request waits PROBE_FIRST_MS, doubling after each failed probe up to retry_max_delay,
 * and is sent alone (the probe); its 2xx (or 4xx) closes the breaker and the call goes on
 * at full speed. A Retry-After moves the next request as late as it asks (capped). A
 * call waits for the next request at most a third of ack_wait (hold_max_ms): the host
 * keeps the next fetch ready meanwhile, and both must be sent before the bus delivers
 * them again; past that, its messages are RETRYs, unsent, back on the bus after the
 * host's retry delay, and the probe goes with the first call after the wait.
 *
 * A rate (`rate`) is one token bucket for the whole sink (every connection), or one per
 * rendered rate_key (the 10 000 keys used last): a request is written only with a token
 * of its bucket. A request whose bucket is empty lets one behind it with a token of
 * another key go first (the sink is unordered); when none has one, the call waits for
 * the nearest token.
 *
 * In order (`ordered on`, or `ordered_by` per key): a request is written only when no
 * request of its key is in flight and none of its key is before it in the queue, so a
 * key has one request (or batch) in flight at a time; a message joins only the newest
 * group of its key; a request going again (a lost connection, a refused batch's
 * messages alone) goes to the head of the queue. Once a request of a key failed (a
 * RETRY), the rest of that key in the call is a RETRY too, unsent, and the host holds
 * the batch and calls again (ordered on), or the key's later messages keep going back to
 * the bus until its failed ones went (ordered_by, http_out_order.c). */
#define _GNU_SOURCE /* strerror_r returning char * */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gust/sock.h"
#include "http_out.h"

/* Read buffer of a connection: room for a head of HTTP_OUT_HEAD_MAX plus the answers a
 * pipeline brings at once (an empty 200 is about 40-100 bytes). */
#define RBUF_SIZE (64 * 1024)
/* Keys of rate_key kept, each with its bucket. */
#define RATE_KEYS_MAX 10000
/* A group being filled is looked for among this many of the newest (templated heads). */
#define OPEN_GROUPS_MAX 64
#define NONE HTTP_OUT_NONE
/* How long a call waits, after the last answer of a connection not yet trusted, for an
 * unasked-for one; a far end that sent one is not trusted for DISTRUST_MS. */
#define TRAIL_NS (100 * 1000000ULL)
#define DISTRUST_MS (60 * 1000)
/* The first wait after the far end was found down, doubled after each failed probe. */
#define PROBE_FIRST_MS 100

struct req {
    size_t grp;       /* index in the call's groups */
    int64_t deadline; /* when it times out: written + timeout */
};

/* A request of a deliver call: one message, or a batch of them. */
struct grp {
    size_t first, n;   /* its messages: first, then nxt[] of each, n of them */
    size_t last_m;     /* its last message (where the next joins) */
    size_t bytes;      /* the body's length */
    size_t head_off, head_len; /* its head in the call's arena; head_len 0: conf->head */
    size_t key_off, key_len;   /* its rate key in the arena; key_len 0: the one bucket */
    size_t ord_off, ord_len;   /* its order key in the arena (ordered_by); ordered on: "" */
    uint8_t resent;    /* already sent again after a lost connection */
    uint32_t answered_on; /* 1 + the connection its answer came on, or 0 */
};

struct conn {
    struct gust_sock *sock;  /* NULL: closed */
    struct req *q;           /* ring of `pipeline` requests written, oldest first */
    size_t qhead, qlen;
    struct gust_buf wbuf;    /* requests not yet written (from woff on) */
    size_t woff;
    char *rbuf;              /* RBUF_SIZE; bytes read and not yet parsed */
    size_t rlen;
    struct http_out_resp resp; /* of q's oldest */
    int started;             /* a byte of the oldest's answer has come */
    size_t answered;         /* answers read since it was opened */
    size_t answered_call;    /* answers read in this deliver call */
    int final_call;          /* one of them was a final outcome (2xx, a rejection) */
    uint64_t last_answer_ns; /* when the last answer came (gust_clock_mono_ns) */
    int proven;              /* watched TRAIL_NS after a final outcome, quiet */
    struct gust_buf body;    /* reply_to: the answer's whole body (resp.whole) */
};

/* reply_to: the 2xx answer a message got in this call; body and Content-Type (NUL-ended)
 * in the call's answers buffer. */
struct ans {
    int status; /* 0: none */
    size_t off, len, ct_off;
};

struct http_out_client {
    const struct http_out_conf *conf;
    struct gust_tls *tls;    /* https only */
    struct conn *conns;      /* conf->connections of them */
    struct pollfd *pfd;      /* one per connection */
    /* Per deliver call: */
    const struct gust_msg *msgs;
    struct gust_result *results;
    size_t undecided;        /* messages without an outcome yet */
    struct grp *grps;        /* the call's requests, ngrps of them (room for 2 per message) */
    size_t ngrps;
    size_t *nxt;             /* per message: the next of its group, NONE at the end */
    size_t *todo;            /* ring of groups to write, capacity tcap (2 per message) */
    size_t thead, tlen, tcap;
    size_t mcap;             /* messages the per-call arrays hold */
    struct gust_buf arena;   /* the call's rendered heads and rate keys */
    struct ans *ans;         /* reply_to: per message (mcap of them) */
    struct gust_buf answers; /* reply_to: their bodies and Content-Types */
    size_t inflight;         /* written and not answered, over every connection */
    /* The rate (kept from call to call): one bucket, or one per key. */
    struct gust_bucket bucket;
    struct gust_limiter *limiter;
    int64_t rate_until;      /* no token before this (gust_clock_mono_ms); 0: not waiting */
    size_t depth;            /* pipeline, or 1 once the server closes after answers */
    char conn_err[200];      /* set when connecting failed in this call */
    /* The outage pause (a circuit breaker, see the top): no request is written before
     * probe_at (gust_clock_mono_ms), in this call or a later one; once the far end is
     * down, one request at a time until one is answered. */
    int64_t probe_at;
    int down;                /* the far end is down: the next request is a probe */
    int probing;             /* this call's first request is a probe */
    int64_t probe_delay;     /* the wait after the last failed probe */
    int64_t hold_max_ms;     /* the longest a call waits for probe_at (ack_wait / 3) */
    size_t up_call, down_call; /* answers of this call that say the far end is up, down */
    size_t sent_call;        /* requests written in this call */
    _Atomic uint64_t n_outages, n_probes, n_paused; /* for the counters; n_paused: 0 or 1 */
    /* When the far end last sent an unasked-for answer (gust_clock_mono_ms; 0: never). */
    int64_t unasked_at;
    /* sign: the secret, and a request's body and signature lines as it is written. */
    struct http_out_signer *signer;
    struct gust_buf body, sig;
    /* In order (conf->order): the groups that failed in this call, whose keys send
     * nothing more in it (room for 4 per message: a group failed on a connection that
     * then answered unasked is noted again); ordered_by's memory across calls. */
    size_t *failed;
    size_t nfailed;
    struct http_out_order *order;
    size_t *by_seq; /* in order: the call's messages by stream sequence (mcap of them) */
    size_t *seen;   /* in order: one group of each key passed over in a pick (2 * mcap) */
};

static void result_set(struct gust_result *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void result_set(struct gust_result *r, int status, const char *fmt, ...)
{
    va_list ap;
    r->status = status;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
}

/* Whether groups a and b have one order key (with ordered on, every group has ""). */
static int same_key(const struct http_out_client *cl, size_t a, size_t b)
{
    const struct grp *x = &cl->grps[a], *y = &cl->grps[b];
    return x->ord_len == y->ord_len &&
           (x->ord_len == 0 || memcmp(cl->arena.data + x->ord_off, cl->arena.data + y->ord_off, x->ord_len) == 0);
}

/* In order: group g got its outcome. A failure stops its key for the rest of the call,
 * and for ordered_by until its messages went (http_out_order.c). */
static void order_note(struct http_out_client *cl, size_t g, int status)
{
    const struct grp *gr = &cl->grps[g];
    if (status == GUST_RETRY) {
        cl->failed[cl->nfailed++] = g;
    }
    if (cl->order == NULL) {
        return;
    }
    int64_t now = gust_clock_mono_ms();
    for (size_t m = gr->first; m != NONE; m = cl->nxt[m]) {
        const char *key = cl->arena.data + gr->ord_off;
        if (status != GUST_RETRY) {
            http_out_order_done(cl->order, key, gr->ord_len, cl->msgs[m].stream_seq);
        } else if (http_out_order_hold(cl->order, key, gr->ord_len, cl->msgs[m].stream_seq, now) != 0) {
            /* Not remembered: a later message of its key could go first. Say so. */
            snprintf(cl->results[m].error, sizeof(cl->results[m].error), "http_out: out of memory (order)");
        }
    }
}

/* Every message of group g gets the outcome. */
static void decide(struct http_out_client *cl, size_t g, int status, const char *why)
{
    /* A RETRY is the far end down (5xx, 408, 429, a timeout, a connection that failed);
     * anything else is it up. */
    if (status == GUST_RETRY) {
        cl->down_call++;
    } else {
        cl->up_call++;
    }
    for (size_t m = cl->grps[g].first; m != NONE; m = cl->nxt[m]) {
        result_set(&cl->results[m], status, "%s", why);
    }
    cl->undecided -= cl->grps[g].n;
    if (cl->conf->order != GUST_ORDER_NONE) {
        order_note(cl, g, status);
    }
}

static void todo_push(struct http_out_client *cl, size_t g)
{
    cl->todo[(cl->thead + cl->tlen++) % cl->tcap] = g;
}

/* A request going again: in order, before the later ones of its key. */
static void requeue(struct http_out_client *cl, size_t g)
{
    if (cl->conf->order == GUST_ORDER_NONE) {
        todo_push(cl, g);
        return;
    }
    cl->thead = (cl->thead + cl->tcap - 1) % cl->tcap;
    cl->todo[cl->thead] = g;
    cl->tlen++;
}

/* Takes the i-th queued group out, the others keeping their order. */
static void todo_remove(struct http_out_client *cl, size_t i)
{
    for (size_t j = i; j > 0; j--) {
        cl->todo[(cl->thead + j) % cl->tcap] = cl->todo[(cl->thead + j - 1) % cl->tcap];
    }
    cl->thead = (cl->thead + 1) % cl->tcap;
    cl->tlen--;
}

/* A group of several refused: each of its messages goes again alone (the refusal may be
 * one message's), as a batch of one. */
static void split(struct http_out_client *cl, size_t g)
{
    struct grp whole = cl->grps[g];
    size_t made = cl->ngrps;
    for (size_t m = whole.first, next; m != NONE; m = next) {
        next = cl->nxt[m];
        cl->nxt[m] = NONE;
        size_t one = cl->ngrps++;
        cl->grps[one] = whole;
        cl->grps[one].first = cl->grps[one].last_m = m;
        cl->grps[one].n = 1;
        cl->grps[one].bytes = cl->msgs[m].len + cl->conf->batch_overhead;
        cl->grps[one].resent = 0;
        cl->grps[one].answered_on = 0;
        if (cl->conf->order == GUST_ORDER_NONE) {
            todo_push(cl, one);
        }
    }
    /* In order: first in the queue, the first of them at its head. */
    for (size_t one = cl->ngrps; cl->conf->order != GUST_ORDER_NONE && one-- > made;) {
        requeue(cl, one);
    }
}

static struct req *oldest(struct http_out_client *cl, struct conn *c)
{
    return &c->q[c->qhead % cl->conf->pipeline];
}

/* reply_to: keeps message m's 2xx answer r for http_out_client_answer (without batching,
 * a request is one message). Out of memory, the message has no answer: a RETRY later. */
static void keep_answer(struct http_out_client *cl, size_t m, const struct http_out_resp *r)
{
    struct ans *a = &cl->ans[m];
    size_t off = cl->answers.len, ctl = strlen(r->ctype);

    a->status = 0;
    if (gust_buf_append(&cl->answers, r->whole->data, r->whole->len) != 0 ||
        gust_buf_append(&cl->answers, r->ctype, ctl + 1) != 0) {
        cl->answers.len = off;
        return;
    }
    *a = (struct ans){r->status, off, r->whole->len, off + r->whole->len};
}

/* The outcome of c's complete answer (to its oldest request): see the table at the top
 * of http_out.c. */
static void classify(struct http_out_client *cl, struct conn *c, struct http_out_resp *r)
{
    const char *url = cl->conf->url;
    int status = r->status;
    char why[sizeof(cl->results[0].error)];
    size_t g = oldest(cl, c)->grp;

    c->answered_call++;
    c->last_answer_ns = gust_clock_mono_ns();
    if (status >= 200 && status < 300 && cl->conf->reply_to != NULL && r->whole_over) {
        /* The far end took it, but its answer cannot be published: rejected, with why. */
        snprintf(why, sizeof(why), "http %d from %s: answer over %d bytes, more than reply_to publishes", status,
                 url, HTTP_OUT_REPLY_MAX);
        c->final_call = 1;
        decide(cl, g, GUST_REJECTED, why);
    } else if (status >= 200 && status < 300) {
        why[0] = '\0';
        c->final_call = 1;
        if (cl->conf->reply_to != NULL) {
            keep_answer(cl, cl->grps[g].first, r);
        }
        decide(cl, g, GUST_DELIVERED, why);
    } else if ((status == 429 || status == 503) && r->has_retry_after) {
        int64_t ms = r->retry_after_ms < cl->conf->retry_max_delay_ms ? r->retry_after_ms
                                                                       : cl->conf->retry_max_delay_ms;
        int64_t until = gust_clock_mono_ms() + ms;
        cl->probe_at = until > cl->probe_at ? until : cl->probe_at;
        snprintf(why, sizeof(why), "http %d from %s: Retry-After, sink paused for %lld ms", status, url,
                 (long long)ms);
        decide(cl, g, GUST_RETRY, why);
    } else if (status >= 500 || status == 408 || status == 429) {
        snprintf(why, sizeof(why), "http %d from %s", status, url);
        decide(cl, g, GUST_RETRY, why);
    } else if (cl->grps[g].n > 1) {
        cl->up_call++;
        split(cl, g);
        return; /* no outcome yet: answered_on stays 0 */
    } else {
        /* Any other answer (4xx, or a redirect, which is not followed) will not change by
         * itself; what the server said comes along, made printable, for the dead letter. */
        for (size_t i = 0; i < r->body_len; i++) {
            if ((unsigned char)r->body[i] < 0x20 || r->body[i] == 0x7f) {
                r->body[i] = ' ';
            }
        }
        snprintf(why, sizeof(why), "http %d from %s: %.*s", status, url, (int)r->body_len, r->body);
        c->final_call = 1;
        decide(cl, g, GUST_REJECTED, why);
    }
    cl->grps[g].answered_on = (uint32_t)(c - cl->conns) + 1;
}

static void pause_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void pop(struct http_out_client *cl, struct conn *c)
{
    c->qhead = (c->qhead + 1) % cl->conf->pipeline;
    c->qlen--;
    cl->inflight--;
    c->started = 0;
    http_out_resp_reset(&c->resp);
}

static void conn_close(struct conn *c)
{
    gust_sock_close(c->sock);
    c->sock = NULL;
    c->qhead = c->qlen = 0;
    c->wbuf.len = c->woff = 0;
    c->rlen = 0;
    c->started = 0;
    c->answered = 0;
    c->proven = 0;
    http_out_resp_reset(&c->resp);
}

/* The connection is gone (why) with requests on it. A request with part of its answer
 * in, or sent again already, is a RETRY; the others (the server cannot have answered
 * them) go back to the queue. With fail_all (a timeout, a malformed answer) every one is a
 * RETRY: the server is the trouble, not the connection. */
static void conn_lost(struct http_out_client *cl, struct conn *c, const char *why, int fail_all)
{
    while (c->qlen > 0) {
        size_t g = oldest(cl, c)->grp;
        int started = c->started;
        pop(cl, c);
        if (fail_all || started || cl->grps[g].resent) {
            decide(cl, g, GUST_RETRY, why);
        } else {
            cl->grps[g].resent = 1;
            requeue(cl, g);
        }
    }
    conn_close(c);
}

/* The server said it closes after the answer just read: the requests behind it were not
 * read by the server, and go back to the queue as they are. */
static void conn_closing(struct http_out_client *cl, struct conn *c)
{
    if (c->answered == 1) {
        cl->depth = 1;
    }
    while (c->qlen > 0) {
        size_t g = oldest(cl, c)->grp;
        pop(cl, c);
        requeue(cl, g);
    }
    conn_close(c);
}

/* An answer came that no request of c asked for: the answers read on c in this call may
 * each belong to another request than the one they were taken for. */
static void conn_desync(struct http_out_client *cl, struct conn *c)
{
    char why[200];
    uint32_t id = (uint32_t)(c - cl->conns) + 1;
    snprintf(why, sizeof(why), "an unasked-for answer from %.120s: answers cannot be matched to requests",
             cl->conf->url);
    cl->unasked_at = gust_clock_mono_ms();
    for (size_t g = 0; g < cl->ngrps && c->answered_call > 0; g++) {
        if (cl->grps[g].answered_on == id) {
            for (size_t m = cl->grps[g].first; m != NONE; m = cl->nxt[m]) {
                /* decided already: undecided stays */
                result_set(&cl->results[m], GUST_RETRY, "%s", why);
            }
            cl->grps[g].answered_on = 0;
            if (cl->conf->order != GUST_ORDER_NONE) {
                order_note(cl, g, GUST_RETRY);
            }
        }
    }
    conn_lost(cl, c, why, 1);
}

/* Parses what c has read; closes c when its stream ends or is not HTTP. */
static void conn_parse(struct http_out_client *cl, struct conn *c)
{
    size_t off = 0;

    while (off < c->rlen) {
        const char *why = NULL;
        int done;
        if (c->qlen == 0) {
            conn_desync(cl, c);
            return;
        }
        ssize_t used = http_out_resp_feed(&c->resp, c->rbuf + off, c->rlen - off, &done, &why);
        if (used < 0) {
            char text[200];
            snprintf(text, sizeof(text), "malformed response from %s: %s", cl->conf->url, why);
            conn_lost(cl, c, text, 1);
            return;
        }
        off += (size_t)used;
        c->started |= used > 0;
        if (!done) {
            break;
        }
        classify(cl, c, &c->resp);
        c->answered++;
        int keep = c->resp.keep_alive;
        pop(cl, c);
        if (!keep) {
            conn_closing(cl, c);
            return;
        }
    }
    memmove(c->rbuf, c->rbuf + off, c->rlen - off);
    c->rlen -= off;
}

/* Reads what c has (without waiting) and parses it. */
static void conn_read(struct http_out_client *cl, struct conn *c)
{
    struct gust_err err;

    while (c->sock) {
        size_t room = RBUF_SIZE - c->rlen;
        if (room == 0) {
            /* the parser keeps no more than one head (< RBUF_SIZE) unparsed */
            conn_lost(cl, c, "response head too large", 1);
            return;
        }
        ssize_t n = gust_sock_read(c->sock, c->rbuf + c->rlen, room, &err);
        if (n == 0) {
            return;
        }
        if (n < 0) {
            if (n == GUST_SOCK_EOF && c->qlen > 0 && http_out_resp_ends_at_eof(&c->resp)) {
                /* an answer without a length: the close is its end */
                classify(cl, c, &c->resp);
                c->answered++;
                pop(cl, c);
                conn_closing(cl, c);
                return;
            }
            conn_lost(cl, c, err.msg, 0);
            return;
        }
        c->rlen += (size_t)n;
        conn_parse(cl, c);
        if ((size_t)n < room && c->sock && !gust_sock_buffered(c->sock)) {
            return; /* drained: another read would only say EAGAIN */
        }
    }
}

static void conn_write(struct http_out_client *cl, struct conn *c)
{
    struct gust_err err;

    while (c->woff < c->wbuf.len) {
        ssize_t n = gust_sock_write(c->sock, c->wbuf.data + c->woff, c->wbuf.len - c->woff, &err);
        if (n < 0) {
            conn_lost(cl, c, err.msg, 0);
            return;
        }
        if (n == 0) {
            return;
        }
        c->woff += (size_t)n;
    }
    c->woff = c->wbuf.len = 0;
}

/* Opens c; on failure fills cl->conn_err with the outcome text for the requests. */
static int conn_open(struct http_out_client *cl, struct conn *c)
{
    const struct http_out_conf *conf = cl->conf;
    struct gust_sock_peer peer = {conf->u.host, conf->u.port, "server"};
    struct gust_err err;
    int os_errno;
    char buf[128];

    if (gust_sock_open(&c->sock, &peer, conf->timeout_ms, cl->tls, &os_errno, &err) == 0) {
        return 0;
    }
    if (os_errno == ETIMEDOUT) {
        snprintf(cl->conn_err, sizeof(cl->conn_err), "timeout after %lld ms",
                 (long long)conf->timeout_ms);
    } else if (os_errno) {
        snprintf(cl->conn_err, sizeof(cl->conn_err), "connect: %s",
                 strerror_r(os_errno, buf, sizeof(buf)));
    } else {
        snprintf(cl->conn_err, sizeof(cl->conn_err), "%.199s", err.msg); /* resolve, TLS */
    }
    return -1;
}

/* Appends group g's body to out (reserved by the caller: nothing here can fail). */
static void append_body(struct http_out_client *cl, const struct grp *gr, struct gust_buf *out)
{
    const struct http_out_conf *conf = cl->conf;

    if (!conf->batching) {
        const struct gust_msg *msg = &cl->msgs[gr->first];
        gust_buf_append(out, msg->data, msg->len);
        return;
    }
    if (!conf->ndjson) {
        gust_buf_append(out, conf->wrap_pre, conf->wrap_pre_len);
    }
    for (size_t m = gr->first; m != NONE; m = cl->nxt[m]) {
        const struct gust_msg *msg = &cl->msgs[m];
        if (!conf->ndjson && m != gr->first) {
            gust_buf_append(out, ",", 1);
        }
        gust_buf_append(out, msg->data, msg->len);
        if (conf->ndjson) {
            gust_buf_append(out, "\n", 1);
        }
    }
    if (!conf->ndjson) {
        gust_buf_append(out, conf->wrap_post, conf->wrap_post_len);
    }
}

/* sign: group g's body into cl->body and its signature's header lines into cl->sig,
 * signed now (a resend is signed again, with its own time). */
static int sign_group(struct http_out_client *cl, const struct grp *gr)
{
    char buf[64];
    const char *id = http_out_sign_id(cl->msgs, cl->nxt, gr->first, gr->n, buf, sizeof(buf));

    cl->body.len = cl->sig.len = 0;
    if (gust_buf_reserve(&cl->body, gr->bytes) != 0) {
        return -1;
    }
    append_body(cl, gr, &cl->body);
    return http_out_sign(cl->signer, id, cl->body.data, cl->body.len, gust_clock_wall_ms() / 1000, &cl->sig);
}

/* Appends group g's request to c's write buffer. */
static int conn_add(struct http_out_client *cl, struct conn *c, size_t g, int64_t deadline)
{
    const struct http_out_conf *conf = cl->conf;
    const struct grp *gr = &cl->grps[g];
    const char *head = gr->head_len ? cl->arena.data + gr->head_off : conf->head.data;
    size_t head_len = gr->head_len ? gr->head_len : conf->head.len;
    char len[32];
    int ll = snprintf(len, sizeof(len), "%zu\r\n\r\n", gr->bytes);
    /* The forwarded headers (of the first message of a batch) and the signature go
     * before the head's closing "Content-Length: ". */
    const size_t cl_len = sizeof("Content-Length: ") - 1;
    size_t fwd_len = http_out_fwd(conf, &cl->msgs[gr->first], NULL);

    if ((cl->signer != NULL && sign_group(cl, gr) != 0) ||
        gust_buf_reserve(&c->wbuf, head_len + fwd_len + cl->sig.len + (size_t)ll + gr->bytes) != 0) {
        return -1;
    }
    /* Reserved: none of these can fail. */
    gust_buf_append(&c->wbuf, head, head_len - cl_len);
    http_out_fwd(conf, &cl->msgs[gr->first], &c->wbuf);
    if (cl->signer != NULL) {
        gust_buf_append(&c->wbuf, cl->sig.data, cl->sig.len);
    }
    gust_buf_append(&c->wbuf, head + head_len - cl_len, cl_len);
    gust_buf_append(&c->wbuf, len, (size_t)ll);
    if (cl->signer != NULL) {
        gust_buf_append(&c->wbuf, cl->body.data, cl->body.len);
    } else {
        append_body(cl, gr, &c->wbuf);
    }
    c->q[(c->qhead + c->qlen++) % conf->pipeline] = (struct req){g, deadline};
    cl->inflight++;
    return 0;
}

/* Takes a token for group g's request: 0, or how long (ms) until its bucket has one. */
static int64_t take_token(struct http_out_client *cl, size_t g, int64_t now)
{
    const struct grp *gr = &cl->grps[g];
    if (cl->conf->rate <= 0) {
        return 0;
    }
    if (cl->limiter != NULL) {
        return gust_limiter_take(cl->limiter, cl->arena.data + gr->key_off, gr->key_len, 1, now);
    }
    return gust_bucket_take(&cl->bucket, 1, now);
}

/* In order: 0 when group g may be written now; 1 when it waits (one of its key is in
 * flight, or before it in the queue: seen[0..nseen) holds a group of each key passed
 * over); -1 when it goes back unsent (one of its key failed in this call, or an earlier
 * message of its key is still on the bus), with why. */
static int order_check(struct http_out_client *cl, size_t g, size_t nseen, char *why, size_t whysz)
{
    for (size_t j = 0; j < nseen; j++) {
        if (same_key(cl, g, cl->seen[j])) {
            return 1;
        }
    }
    for (size_t c = 0; c < cl->conf->connections; c++) {
        const struct conn *cn = &cl->conns[c];
        for (size_t q = 0; q < cn->qlen; q++) {
            if (same_key(cl, g, cn->q[(cn->qhead + q) % cl->conf->pipeline].grp)) {
                return 1;
            }
        }
    }
    for (size_t f = 0; f < cl->nfailed; f++) {
        if (same_key(cl, g, cl->failed[f])) {
            snprintf(why, whysz, "held back (ordered): an earlier message%s failed", cl->order ? " of its key" : "");
            return -1;
        }
    }
    const struct grp *gr = &cl->grps[g];
    uint64_t first = cl->order != NULL ? http_out_order_before(cl->order, cl->arena.data + gr->ord_off, gr->ord_len,
                                                                 cl->msgs[gr->first].stream_seq)
                                       : 0;
    if (first != 0) {
        snprintf(why, whysz, "held back (ordered_by): stream sequence %llu of its key goes first",
                 (unsigned long long)first);
        return -1;
    }
    return 0;
}

/* The next group to write, taken off the queue: the oldest with a token of its bucket
 * (in order: the oldest of its key, none of which is in flight; with fresh, of a key
 * holding nothing, *skipped set when one was passed over for that). NONE when none may
 * go (cl->rate_until says when the first may have a token). */
static size_t pick(struct http_out_client *cl, int64_t now, int fresh, int *skipped)
{
    int64_t soonest = INT64_MAX;
    int ordered = cl->conf->order != GUST_ORDER_NONE;
    /* With one bucket and one order, the head waits for it as every other would. */
    size_t look = cl->limiter != NULL || cl->conf->order == GUST_ORDER_KEY ? SIZE_MAX : 1;
    char why[sizeof(cl->results[0].error)];
    size_t nseen = 0;

    for (size_t i = 0; i < cl->tlen && i < look;) {
        size_t at = (cl->thead + i) % cl->tcap, g = cl->todo[at];
        int o = ordered ? order_check(cl, g, nseen, why, sizeof(why)) : 0;
        if (o > 0) {
            i++;
            continue;
        }
        if (o == 0 && fresh &&
            http_out_order_holds(cl->order, cl->arena.data + cl->grps[g].ord_off, cl->grps[g].ord_len)) {
            *skipped = 1;
            cl->seen[nseen++] = g;
            i++;
            continue;
        }
        if (o < 0) {
            /* Unsent: it says nothing of the far end. */
            size_t down = cl->down_call;
            todo_remove(cl, i);
            decide(cl, g, GUST_RETRY, why);
            cl->down_call = down;
            continue;
        }
        int64_t wait = take_token(cl, g, now);
        if (wait == 0) {
            if (ordered) {
                todo_remove(cl, i);
            } else {
                /* Out of the ring: the head moves into its place. */
                cl->todo[at] = cl->todo[cl->thead];
                cl->thead = (cl->thead + 1) % cl->tcap;
                cl->tlen--;
            }
            return g;
        }
        soonest = wait < soonest ? wait : soonest;
        if (ordered) {
            cl->seen[nseen++] = g; /* the later ones of its key wait behind it */
        }
        i++;
    }
    if (soonest != INT64_MAX) {
        cl->rate_until = now + soonest;
    }
    return NONE;
}

static size_t next_group(struct http_out_client *cl, int64_t now)
{
    /* ordered_by's probe is of a key that is not failing, when there is one: one key's
     * failures (a call that held nothing else answered down only) must not keep the
     * sink paused for the others. */
    int fresh = cl->order != NULL && cl->probing && cl->sent_call == 0, skipped = 0;
    size_t g = pick(cl, now, fresh, &skipped);
    return g == NONE && skipped ? pick(cl, now, 0, &skipped) : g;
}

/* Whether the call sends no more: the far end answered it down only. */
static int held(const struct http_out_client *cl)
{
    return cl->down_call > 0 && cl->up_call == 0;
}

/* The rest of a held call: every request not written is a RETRY, unsent. */
static void fail_queued(struct http_out_client *cl, const char *why)
{
    size_t down = cl->down_call; /* unsent: they say nothing of the far end */
    while (cl->tlen > 0) {
        size_t g = cl->todo[cl->thead];
        cl->thead = (cl->thead + 1) % cl->tcap;
        cl->tlen--;
        decide(cl, g, GUST_RETRY, why);
    }
    cl->down_call = down;
}

/* After a call: the far end up closes the breaker; down only opens it (or waits longer
 * for the next probe, doubling up to retry_max_delay). */
static void breaker_update(struct http_out_client *cl)
{
    int64_t now = gust_clock_mono_ms();
    if (cl->up_call > 0) {
        cl->down = 0;
        cl->probe_delay = 0;
        atomic_store(&cl->n_paused, 0);
        return;
    }
    if (cl->down_call == 0) {
        return;
    }
    if (!cl->down) {
        atomic_fetch_add(&cl->n_outages, 1);
    }
    cl->down = 1;
    atomic_store(&cl->n_paused, 1);
    int64_t d = cl->probe_delay > 0 ? cl->probe_delay * 2 : PROBE_FIRST_MS;
    cl->probe_delay = d < cl->conf->retry_max_delay_ms ? d : cl->conf->retry_max_delay_ms;
    cl->probe_at = now + cl->probe_delay > cl->probe_at ? now + cl->probe_delay : cl->probe_at;
}

/* Hands queued requests to the connections in [0, lanes) with the fewest outstanding. */
static void assign(struct http_out_client *cl, size_t lanes)
{
    int64_t now = gust_clock_mono_ms(), deadline = now + cl->conf->timeout_ms; /* before any connect */

    if (now < cl->probe_at || held(cl)) {
        return; /* the outage pause holds every send */
    }
    if (now < cl->rate_until) {
        return; /* no token yet */
    }
    cl->rate_until = 0;

    while (cl->tlen > 0 && cl->inflight < cl->conf->max_inflight) {
        struct conn *best = NULL;
        if (cl->probing && cl->sent_call > 0 && cl->up_call == 0) {
            return; /* one probe, then full speed once it is answered 2xx (or 4xx) */
        }
        for (size_t i = 0; i < lanes; i++) {
            struct conn *c = &cl->conns[i];
            /* Once connecting failed, every other new connection would fail the same way,
             * each taking up to the timeout: only the open ones take requests. */
            if (c->qlen < cl->depth && (c->sock || !cl->conn_err[0]) &&
                (!best || c->qlen < best->qlen)) {
                best = c;
            }
        }
        if (!best && cl->conn_err[0] && cl->inflight == 0) {
            best = &cl->conns[0]; /* nothing open will free room: fail the rest below */
        }
        if (!best) {
            return;
        }
        size_t g;
        if (best->sock || !cl->conn_err[0]) {
            if ((g = next_group(cl, now)) == NONE) {
                return;
            }
        } else {
            g = cl->todo[cl->thead]; /* failed without a request: no token spent */
            cl->thead = (cl->thead + 1) % cl->tcap;
            cl->tlen--;
        }
        if (!best->sock && (cl->conn_err[0] || conn_open(cl, best) != 0)) {
            decide(cl, g, GUST_RETRY, cl->conn_err);
            continue;
        }
        if (conn_add(cl, best, g, deadline) != 0) {
            decide(cl, g, GUST_RETRY, "http_out: out of memory");
        }
        cl->sent_call++;
    }
}

/* c has nothing outstanding and is readable: bytes are an unasked-for answer (its
 * answers in this call are in doubt); an end is the server closing it, having said
 * nothing more. */
static void check_unasked(struct http_out_client *cl, struct conn *c)
{
    struct gust_err err;
    ssize_t n = gust_sock_read(c->sock, c->rbuf + c->rlen, RBUF_SIZE - c->rlen, &err);
    if (n > 0) {
        conn_desync(cl, c);
    } else if (n < 0) {
        conn_close(c);
    } /* 0: TLS bookkeeping (a session ticket) only */
}

/* A kept-alive connection the server closed while idle, or wrote to unasked, is dropped
 * before it is given requests: one poll for all of them. */
static void check_idle(struct http_out_client *cl)
{
    size_t np = 0;

    for (size_t i = 0; i < cl->conf->connections; i++) {
        if (cl->conns[i].sock) {
            cl->pfd[np++] = (struct pollfd){.fd = gust_sock_fd(cl->conns[i].sock), .events = POLLIN};
        }
    }
    if (np == 0 || poll(cl->pfd, np, 0) <= 0) {
        return;
    }
    np = 0;
    for (size_t i = 0; i < cl->conf->connections; i++) {
        struct conn *c = &cl->conns[i];
        if (c->sock && cl->pfd[np++].revents) {
            char b[256];
            struct gust_err err;
            ssize_t n = gust_sock_read(c->sock, b, sizeof(b), &err);
            if (n != 0) { /* 0: TLS bookkeeping (a session ticket) only */
                conn_close(c);
            }
        }
    }
}

/* Before the outcomes go back (and are acked): an answer that came after the last one
 * asked for, on a connection this call used, puts them in doubt (conn_desync). One that
 * gave a final outcome and is not trusted yet (see the top) is watched until TRAIL_NS
 * after its last answer; the others are looked at without waiting. */
static void check_trailing(struct http_out_client *cl, size_t lanes)
{
    /* A far end that sent one lately is not trusted: its delays are its own. */
    int distrust = cl->unasked_at != 0 && gust_clock_mono_ms() - cl->unasked_at < DISTRUST_MS;
    for (;;) {
        uint64_t now = gust_clock_mono_ns(), until = now;
        size_t np = 0;
        for (size_t i = 0; i < lanes; i++) {
            struct conn *c = &cl->conns[i];
            int watch = c->sock && c->answered_call;
            cl->pfd[i] = (struct pollfd){.fd = watch ? gust_sock_fd(c->sock) : -1, .events = POLLIN};
            np += watch;
            if (watch && c->final_call) {
                uint64_t grace = c->proven && !distrust ? 0 : TRAIL_NS;
                until = c->last_answer_ns + grace > until ? c->last_answer_ns + grace : until;
            }
        }
        if (np == 0) {
            return;
        }
        struct timespec ts = {.tv_sec = (time_t)((until - now) / 1000000000u),
                              .tv_nsec = (long)((until - now) % 1000000000u)};
        int rc = ppoll(cl->pfd, lanes, &ts, NULL);
        if (rc == 0 || (rc < 0 && errno != EINTR)) {
            for (size_t i = 0; rc == 0 && i < lanes; i++) {
                cl->conns[i].proven |= cl->conns[i].sock && cl->conns[i].final_call;
            }
            return; /* quiet to the end */
        }
        for (size_t i = 0; rc > 0 && i < lanes; i++) {
            struct conn *c = &cl->conns[i];
            if (c->sock && (cl->pfd[i].revents & (POLLIN | POLLERR | POLLHUP))) {
                check_unasked(cl, c);
            }
        }
    }
}

/* Times out the connections whose oldest request is past its deadline; returns the
 * nearest deadline left (INT64_MAX: none). */
static int64_t expire(struct http_out_client *cl, int64_t now)
{
    int64_t next = INT64_MAX;
    char text[64];

    snprintf(text, sizeof(text), "timeout after %lld ms", (long long)cl->conf->timeout_ms);
    for (size_t i = 0; i < cl->conf->connections; i++) {
        struct conn *c = &cl->conns[i];
        if (c->qlen == 0) {
            continue;
        }
        int64_t d = oldest(cl, c)->deadline;
        if (d <= now) {
            /* The ones behind it were written with it and wait behind it. */
            conn_lost(cl, c, text, 1);
        } else if (d < next) {
            next = d;
        }
    }
    return next;
}

/* Grows the per-call arrays to n messages; -1 when out of memory. */
static int room_for(struct http_out_client *cl, size_t n)
{
    if (n <= cl->mcap) {
        return 0;
    }
    struct grp *g = realloc(cl->grps, 2 * n * sizeof(*g));
    if (g) {
        cl->grps = g;
    }
    size_t *t = g ? realloc(cl->todo, 2 * n * sizeof(*t)) : NULL;
    if (t) {
        cl->todo = t;
    }
    size_t *x = t ? realloc(cl->nxt, n * sizeof(*x)) : NULL;
    if (x) {
        cl->nxt = x;
    }
    size_t *f = x ? realloc(cl->failed, 4 * n * sizeof(*f)) : NULL; /* a group may fail twice */
    if (f) {
        cl->failed = f;
    }
    size_t *q = f ? realloc(cl->by_seq, n * sizeof(*q)) : NULL;
    if (q) {
        cl->by_seq = q;
    }
    size_t *sn = q ? realloc(cl->seen, 2 * n * sizeof(*sn)) : NULL;
    if (sn) {
        cl->seen = sn;
    }
    x = sn ? x : NULL;
    struct ans *a = x && cl->conf->reply_to ? realloc(cl->ans, n * sizeof(*a)) : NULL;
    if (a) {
        cl->ans = a;
    }
    if (!x || (cl->conf->reply_to && !a)) {
        return -1;
    }
    cl->mcap = n;
    cl->tcap = 2 * n;
    return 0;
}

/* Whether message m (its head, rate key and order key at arena offset off, hl, kl and
 * ol long) may join group g. */
static int fits(struct http_out_client *cl, const struct grp *g, size_t m, size_t off, size_t hl, size_t kl,
                size_t ol)
{
    const struct http_out_conf *conf = cl->conf;
    size_t add = cl->msgs[m].len + 1;
    if (g->n >= conf->batch_max || (conf->batch_bytes && g->bytes + add > conf->batch_bytes)) {
        return 0;
    }
    return g->head_len == hl && g->key_len == kl && g->ord_len == ol &&
           (hl + kl + ol == 0 || memcmp(cl->arena.data + g->head_off, cl->arena.data + off, hl + kl + ol) == 0);
}

/* In order, a message joins only the newest group of its key (joining an older one
 * would send it before the messages between). */
static int key_is(const struct http_out_client *cl, const struct grp *g, size_t off, size_t ol)
{
    return g->ord_len == ol && (ol == 0 || memcmp(cl->arena.data + g->ord_off, cl->arena.data + off, ol) == 0);
}

static int by_seq(const void *a, const void *b, void *ud)
{
    const struct gust_msg *msgs = ud;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    uint64_t sx = msgs[x].stream_seq, sy = msgs[y].stream_seq;
    return sx != sy ? (sx < sy ? -1 : 1) : (x < y ? -1 : x > y);
}

/* Makes the call's requests: each message's head and rate key rendered (a template that
 * cannot be rendered rejects the message), then groups of alike messages when batching
 * (order kept within a group), else one request each. In order, the messages are taken
 * by stream sequence (the bus may give back ones that went back to it among new ones). */
static void make_groups(struct http_out_client *cl, size_t n)
{
    const struct http_out_conf *conf = cl->conf;
    size_t open[OPEN_GROUPS_MAX], nopen = 0;
    char why[sizeof(cl->results[0].error)];

    cl->ngrps = 0;
    cl->arena.len = 0;
    if (conf->order != GUST_ORDER_NONE) {
        for (size_t m = 0; m < n; m++) {
            cl->by_seq[m] = m;
        }
        qsort_r(cl->by_seq, n, sizeof(*cl->by_seq), by_seq, (void *)cl->msgs);
    }
    for (size_t k = 0; k < n; k++) {
        size_t m = conf->order != GUST_ORDER_NONE ? cl->by_seq[k] : k;
        size_t off = cl->arena.len, hl = 0, kl = 0, ol = 0;
        cl->nxt[m] = NONE;
        if (conf->tpl != NULL &&
            http_out_tpl_render(conf, &cl->msgs[m], &cl->arena, &hl, &kl, &ol, why, sizeof(why)) != 0) {
            cl->arena.len = off;
            result_set(&cl->results[m], GUST_REJECTED, "%s", why);
            cl->undecided--;
            continue;
        }
        size_t found = NONE;
        for (size_t i = nopen; conf->batching && i-- > 0;) {
            const struct grp *g = &cl->grps[open[i]];
            if (conf->order != GUST_ORDER_NONE && !key_is(cl, g, off + hl + kl, ol)) {
                continue;
            }
            /* ordered_by: not across a message of its key still on the bus, which the
             * group would go before. */
            if (fits(cl, g, m, off, hl, kl, ol) &&
                (cl->order == NULL || !http_out_order_between(cl->order, cl->arena.data + off + hl + kl, ol,
                                                              cl->msgs[g->last_m].stream_seq, cl->msgs[m].stream_seq))) {
                found = open[i];
            }
            if (found != NONE || conf->order != GUST_ORDER_NONE) {
                break;
            }
        }
        if (found != NONE) {
            struct grp *g = &cl->grps[found];
            cl->nxt[g->last_m] = m;
            g->last_m = m;
            g->n++;
            g->bytes += cl->msgs[m].len + 1;
            cl->arena.len = off; /* the group has the same */
            continue;
        }
        size_t gi = cl->ngrps++;
        cl->grps[gi] = (struct grp){.first = m, .last_m = m, .n = 1,
                                    .bytes = cl->msgs[m].len + (conf->batching ? conf->batch_overhead : 0),
                                    .head_off = off, .head_len = hl, .key_off = off + hl, .key_len = kl,
                                    .ord_off = off + hl + kl, .ord_len = ol};
        todo_push(cl, gi);
        if (conf->batching) {
            if (nopen == OPEN_GROUPS_MAX) {
                memmove(open, open + 1, (OPEN_GROUPS_MAX - 1) * sizeof(*open));
                nopen--;
            }
            open[nopen++] = gi;
        }
    }
}

int http_out_client_deliver(struct http_out_client *cl, const struct gust_msg *msgs, size_t n,
                            struct gust_result *results)
{
    const struct http_out_conf *conf = cl->conf;

    if (n == 0) {
        return 0;
    }
    if (room_for(cl, n) != 0) {
        for (size_t i = 0; i < n; i++) {
            result_set(&results[i], GUST_RETRY, "http_out: out of memory");
        }
        return 0;
    }
    cl->msgs = msgs;
    cl->results = results;
    cl->undecided = n;
    cl->thead = cl->tlen = 0;
    cl->inflight = 0;
    cl->depth = conf->pipeline;
    cl->conn_err[0] = '\0';
    for (size_t i = 0; i < cl->conf->connections; i++) {
        cl->conns[i].answered_call = 0;
        cl->conns[i].final_call = 0;
    }
    cl->up_call = cl->down_call = cl->sent_call = 0;
    cl->nfailed = 0;
    if (cl->order != NULL) {
        http_out_order_sweep(cl->order, gust_clock_mono_ms());
    }
    if (conf->reply_to != NULL) {
        memset(cl->ans, 0, n * sizeof(*cl->ans));
        cl->answers.len = 0;
    }
    make_groups(cl, n);
    size_t lanes = cl->ngrps < conf->connections ? cl->ngrps : conf->connections;
    check_idle(cl);
    /* Paused: wait for the next probe if it comes soon enough for what was fetched (and
     * the fetch the host keeps ready meanwhile) to be sent within ack_wait; else every
     * message goes back to the bus unsent, redelivered after the host's retry delay. */
    char paused[200];
    int64_t now = gust_clock_mono_ms();
    if (cl->probe_at > now && cl->probe_at - now > cl->hold_max_ms) {
        snprintf(paused, sizeof(paused), "%.120s is down: sink paused, next request in %lld ms", conf->url,
                 (long long)(cl->probe_at - now));
        fail_queued(cl, paused);
    } else if (cl->probe_at > now && cl->tlen > 0) {
        pause_ms(cl->probe_at - now);
    }
    cl->probing = cl->down && cl->tlen > 0;
    if (cl->probing) {
        atomic_fetch_add(&cl->n_probes, 1);
    }

    while (cl->undecided > 0) {
        /* A refused batch's messages, sent again alone, may use more connections. */
        lanes = cl->ngrps < conf->connections ? cl->ngrps : conf->connections;
        assign(cl, lanes);
        for (size_t i = 0; i < lanes; i++) {
            if (cl->conns[i].sock && cl->conns[i].wbuf.len > cl->conns[i].woff) {
                conn_write(cl, &cl->conns[i]);
            }
        }
        int64_t now = gust_clock_mono_ms(), next = expire(cl, now);
        if (cl->undecided == 0) {
            break;
        }
        if (cl->inflight == 0 && (held(cl) || (now < cl->probe_at && cl->probe_at - now > cl->hold_max_ms))) {
            /* down (or a Retry-After too long to wait in the call): the rest goes back */
            snprintf(paused, sizeof(paused), "%.120s is down: sink paused", conf->url);
            fail_queued(cl, paused);
            continue;
        }
        if (cl->inflight == 0 && now < cl->probe_at) {
            pause_ms(cl->probe_at - now); /* nothing in flight: wait out the Retry-After */
            continue;
        }
        if (cl->inflight == 0 && now < cl->rate_until) {
            pause_ms(cl->rate_until - now); /* nothing in flight: wait for a token */
            continue;
        }
        if (cl->inflight == 0) {
            continue; /* lost connections put requests back: assign them */
        }
        int wait = next == INT64_MAX ? 1000 : (int)(next - now);
        if (now < cl->probe_at && cl->tlen > 0 && cl->probe_at - now < wait) {
            wait = (int)(cl->probe_at - now); /* then send what waits */
        }
        if (now < cl->rate_until && cl->tlen > 0 && cl->rate_until - now < wait) {
            wait = (int)(cl->rate_until - now); /* a token for what waits */
        }
        size_t np = 0;
        for (size_t i = 0; i < lanes; i++) {
            struct conn *c = &cl->conns[i];
            /* One waiting with nothing outstanding is watched too: what it says before
             * its next use was not asked for. */
            short ev = c->qlen || c->answered_call ? POLLIN : 0;
            if (c->sock && (c->wbuf.len > c->woff || gust_sock_wants_write(c->sock))) {
                ev |= POLLOUT;
            }
            if (c->sock && c->qlen && gust_sock_buffered(c->sock)) {
                wait = 0;
            }
            cl->pfd[i] = (struct pollfd){.fd = c->sock && ev ? gust_sock_fd(c->sock) : -1,
                                         .events = ev};
            np += c->sock && ev;
        }
        if (np == 0) {
            continue;
        }
        if (poll(cl->pfd, lanes, wait) < 0 && errno != EINTR) {
            wait = 0; /* cannot happen with valid fds; the deadlines still end the call */
        }
        for (size_t i = 0; i < lanes; i++) {
            struct conn *c = &cl->conns[i];
            if (!c->sock) {
                continue;
            }
            if (cl->pfd[i].revents & POLLOUT) {
                conn_write(cl, c);
            }
            if (c->sock && c->qlen &&
                ((cl->pfd[i].revents & (POLLIN | POLLERR | POLLHUP)) || gust_sock_buffered(c->sock))) {
                conn_read(cl, c);
            } else if (c->sock && c->qlen == 0 && (cl->pfd[i].revents & (POLLIN | POLLERR | POLLHUP))) {
                check_unasked(cl, c);
            }
        }
    }
    check_trailing(cl, lanes);
    breaker_update(cl);
    return 0;
}

int http_out_client_create(struct http_out_client **out, const struct http_out_conf *conf,
                           struct gust_err *err)
{
    struct http_out_client *cl = calloc(1, sizeof(*cl));
    int rc = GUST_ENOMEM;

    *out = NULL;
    if (!cl) {
        return gust_err_set(err, rc, "http_out: out of memory");
    }
    cl->conf = conf;
    cl->hold_max_ms = 5000 / 3; /* nats ack_wait's default, until fetch_limits says */
    if (!(cl->conns = calloc(conf->connections, sizeof(*cl->conns))) ||
        !(cl->pfd = calloc(conf->connections, sizeof(*cl->pfd)))) {
        goto fail;
    }
    for (size_t i = 0; i < conf->connections; i++) {
        struct conn *c = &cl->conns[i];
        if (!(c->q = calloc(conf->pipeline, sizeof(*c->q))) || !(c->rbuf = malloc(RBUF_SIZE))) {
            goto fail;
        }
        if (conf->reply_to != NULL) {
            c->resp.whole = &c->body;
            c->resp.whole_max = HTTP_OUT_REPLY_MAX;
        }
        http_out_resp_reset(&c->resp);
    }
    if (conf->rate > 0) {
        gust_bucket_init(&cl->bucket, conf->rate, conf->rate_burst, gust_clock_mono_ms());
        if (conf->k.rate_key != NULL && gust_limiter_create(&cl->limiter, conf->rate, conf->rate_burst,
                                                            RATE_KEYS_MAX) != 0) {
            goto fail;
        }
    }
    if (conf->order == GUST_ORDER_KEY && http_out_order_create(&cl->order) != 0) {
        goto fail;
    }
    if ((conf->u.tls && (rc = gust_tls_create(&cl->tls, conf->tls_ca, NULL, NULL, err)) != 0) ||
        (rc = http_out_signer_create(&cl->signer, conf, err)) != 0) {
        http_out_client_destroy(cl);
        return rc;
    }
    *out = cl;
    return 0;

fail:
    http_out_client_destroy(cl);
    return gust_err_set(err, rc, "http_out: out of memory");
}

void http_out_client_destroy(struct http_out_client *cl)
{
    if (!cl) {
        return;
    }
    for (size_t i = 0; cl->conns && i < cl->conf->connections; i++) {
        struct conn *c = &cl->conns[i];
        gust_sock_close(c->sock);
        free(c->q);
        gust_buf_free(&c->wbuf);
        free(c->rbuf);
        gust_buf_free(&c->body);
    }
    gust_tls_destroy(cl->tls);
    free(cl->conns);
    free(cl->pfd);
    free(cl->todo);
    free(cl->grps);
    free(cl->nxt);
    free(cl->failed);
    free(cl->by_seq);
    free(cl->seen);
    http_out_order_destroy(cl->order);
    gust_buf_free(&cl->arena);
    gust_buf_free(&cl->answers);
    free(cl->ans);
    gust_limiter_destroy(cl->limiter);
    http_out_signer_destroy(cl->signer);
    gust_buf_free(&cl->body);
    gust_buf_free(&cl->sig);
    free(cl);
}

int http_out_client_answer(const struct http_out_client *cl, size_t m, struct http_out_answer *a)
{
    const struct ans *x = cl->conf->reply_to != NULL ? &cl->ans[m] : NULL;
    if (x == NULL || x->status == 0) {
        return -1;
    }
    *a = (struct http_out_answer){x->status, cl->answers.data + x->off, x->len, cl->answers.data + x->ct_off};
    return 0;
}

void http_out_client_set_ack_wait(struct http_out_client *cl, int64_t ack_wait_ms)
{
    cl->hold_max_ms = ack_wait_ms / 3;
}

size_t http_out_client_counters(struct http_out_client *cl, struct gust_plugin_counter *out, size_t max)
{
    uint64_t keys = 0, held = 0;
    if (cl->order != NULL) {
        http_out_order_counts(cl->order, &keys, &held);
    }
    struct gust_plugin_counter c[] = {{"outage", atomic_load(&cl->n_paused)},
                                      {"outages", atomic_load(&cl->n_outages)},
                                      {"probes", atomic_load(&cl->n_probes)},
                                      /* ordered_by: keys waiting for a message that failed */
                                      {"keys_held", keys},
                                      {"held", held}};
    size_t all = sizeof(c) / sizeof(c[0]) - (cl->order == NULL ? 2 : 0);
    size_t n = all < max ? all : max;
    memcpy(out, c, n * sizeof(*c));
    return n;
}
