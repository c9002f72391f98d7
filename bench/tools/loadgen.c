/* gust-bench-loadgen: the HTTP/1.1 load generator of the end-to-end benchmarks.
 *
 *   gust-bench-loadgen --url http://HOST:PORT/PATH [--connections C] [--duration SECS]
 *                      [--rate R] [--first-id N] [--count N] [--expect-status S]
 *
 * Opens C keep-alive connections (TCP_NODELAY) and POSTs the orders event of
 * bench/WORKLOAD.md on them, one request in flight per connection (no pipelining).
 * The "id" is "SO#<n>" with n counting up from --first-id (default 1) across all
 * connections, the country cycles France, Germany, Italy, Spain by id (id 1 is France), and
 * "t" is the wall clock in epoch milliseconds with 3 decimals, taken right before the
 * request is written.
 *
 * It stops sending after --duration seconds or --count requests, whichever comes first
 * (at least one of them is required), or on SIGINT/SIGTERM; then it waits up to 10 s for the
 * responses still out and prints one JSON object on stdout:
 *
 *   {"sent":N,"accepted":N,"non_202":N,"errors":N,"seconds":S,"rate":R,
 *    "latency_ms":{"p50":..,"p90":..,"p99":..,"max":..},"first_id":N,"last_id":N,
 *    "connections":C,"reconnects":N,"unanswered":N,"skipped":N}
 *
 *   accepted    responses with the expected status (--expect-status, default 202)
 *   non_202     complete responses with any other status (a breakdown goes to stderr)
 *   errors      requests lost to a connection closed or reset before their response was
 *               complete, resets of idle connections, failed reconnects, malformed
 *               responses, and responses still missing at the drain deadline (unanswered)
 *   seconds     from the first request written to the end of sending (--duration elapsed,
 *               --count reached, or a signal) or the last response, whichever is later
 *   rate        accepted / seconds
 *   latency_ms  request write -> response complete, over every complete response
 *               (log-linear histogram, 0.2% resolution, the max exact)
 *   reconnects  connections reopened (the server closed or reset them); a lost request is
 *               never resent, its id stays used
 *
 * --rate R paces the total request rate to R/s on a single schedule shared by the
 * connections (the connection idle longest sends the next slot). When the server is slower,
 * the schedule falls behind by at most 5 ms before it drops the debt, so there is no burst to
 * catch up; the rate reported is the rate achieved, and "skipped" counts the slots dropped
 * (the server was slower than the rate, or too few connections were free).
 *
 * A connection that cannot be opened at start is an error exit (status 1). Exit status 0
 * otherwise, whatever the counts say: the caller checks them.
 *
 * One thread, epoll, nonblocking sockets: the machine has two cores and the server under
 * test needs the other one. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NAME "gust-bench-loadgen"
#define CONNECT_TIMEOUT_NS 5000000000LL
#define DRAIN_TIMEOUT_NS 10000000000LL
#define MAX_LAG_NS 5000000LL /* pacing: how far the schedule may fall behind */
#define RETRY_NS 50000000LL  /* wait before reconnecting after a failed connect */
#define MAX_HEAD 65536       /* response status line and headers */
#define READ_BUF 65536

/* Latency histogram over nanoseconds: exact below 1024 ns, then 512 buckets per power of
 * two. */
#define SUB_BITS 10
#define SUB (1u << SUB_BITS)
#define HALF (SUB / 2)
#define NBUCKETS (SUB + (64 - SUB_BITS) * HALF)

enum state {
    S_CONNECTING,
    S_IDLE,    /* connected, nothing in flight */
    S_WRITING, /* request partly written */
    S_READING, /* request written, response not complete */
    S_RETRY,   /* waiting to reconnect */
    S_DEAD,    /* closed for good (the run is draining) */
};

struct conn {
    int fd;
    int index;
    enum state state;
    int want_out; /* EPOLLOUT registered */
    struct conn *prev_idle, *next_idle;
    int in_idle;
    int64_t sent_ns; /* monotonic: write of the request in flight */
    int64_t retry_at_ns;
    char *out;
    size_t out_len, out_off;
    /* response parsing */
    char *head;
    size_t head_len, head_cap;
    int in_body;
    int body_to_eof;
    uint64_t body_left;
    int status;
    int close_after;
};

struct lg {
    /* options */
    const char *url;
    char host[256];
    char port[16];
    const char *path;
    int nconns;
    double duration; /* seconds, < 0 when unset */
    double rate;     /* 0 when unpaced */
    uint64_t first_id;
    uint64_t count; /* 0 when unset */
    int expect_status;

    struct sockaddr_storage addr;
    socklen_t addr_len;
    int ep;
    int sig_fd;
    struct conn *conns;
    struct conn *idle_head, *idle_tail;
    int retrying; /* connections in S_RETRY */

    /* the request: prefix, Content-Length, body pieces */
    char *req_prefix;
    size_t req_prefix_len;
    size_t out_cap;

    /* run state */
    int64_t t0_ns;
    int64_t end_send_ns; /* INT64_MAX when unset */
    int64_t drain_deadline_ns;
    int64_t last_done_ns;
    double next_due_ns;
    double period_ns;
    int stopping;
    int inflight;

    /* counts */
    uint64_t sent, accepted, other, errors, reconnects, unanswered, responses, skipped;
    int64_t stop_ns; /* when sending stopped */
    uint64_t status_counts[600];
    uint64_t *hist;
    int64_t max_lat_ns;
};

static char sig_tag;

static const char B1[] = "{\"id\": \"SO#";
static const char B2[] =
    "\", \"email\": \"Jane.Doe@ACME.com\", \"total_price\": \"347.00\", \"t\": ";
static const char *const COUNTRIES[4] = {"France", "Germany", "Italy", "Spain"};
static const char B3a[] = ",\n \"shipping_address\": {\"country\": \"";
static const char B3b[] =
    "\"},\n \"line_items\": [\n"
    "   {\"sku\": \"A-12\", \"quantity\": \"2\", \"unit_price_cents\": 9900},\n"
    "   {\"sku\": \"B-07\", \"quantity\": \"1\", \"unit_price_cents\": 14900},\n"
    "   {\"sku\": \"C-33\", \"quantity\": \"4\", \"unit_price_cents\": 450}]}";
static char tails[4][512];
static size_t tail_len[4];

static void die(const char *what)
{
    fprintf(stderr, NAME ": %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size);
    if (!p) {
        fprintf(stderr, NAME ": out of memory\n");
        exit(1);
    }
    return p;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- latency histogram ---- */

static size_t bucket_of(uint64_t v)
{
    if (v < SUB) {
        return (size_t)v;
    }
    int e = 63 - __builtin_clzll(v); /* >= SUB_BITS */
    int shift = e - (SUB_BITS - 1);
    uint64_t m = v >> shift; /* in [HALF, SUB) */
    return SUB + (size_t)(e - SUB_BITS) * HALF + (size_t)(m - HALF);
}

/* The middle of bucket b, in ns. */
static double bucket_mid(size_t b)
{
    if (b < SUB) {
        return (double)b;
    }
    size_t e = (b - SUB) / HALF + SUB_BITS;
    uint64_t m = (b - SUB) % HALF + HALF;
    int shift = (int)e - (SUB_BITS - 1);
    return (double)(m << shift) + (double)(1ull << shift) / 2.0;
}

static void record_latency(struct lg *g, int64_t ns)
{
    if (ns < 0) {
        ns = 0;
    }
    g->hist[bucket_of((uint64_t)ns)]++;
    if (ns > g->max_lat_ns) {
        g->max_lat_ns = ns;
    }
}

/* Nearest rank percentile, in ms. */
static double percentile_ms(const struct lg *g, double p)
{
    if (g->responses == 0) {
        return 0;
    }
    uint64_t rank = (uint64_t)(p * (double)g->responses + 0.999999);
    if (rank < 1) {
        rank = 1;
    }
    uint64_t seen = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        seen += g->hist[b];
        if (seen >= rank) {
            double v = bucket_mid(b);
            if (v > (double)g->max_lat_ns) {
                v = (double)g->max_lat_ns;
            }
            return v / 1e6;
        }
    }
    return (double)g->max_lat_ns / 1e6;
}

/* ---- the request ---- */

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) {
        *p++ = tmp[--n];
    }
    return p;
}

static int digits(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static void build_request_parts(struct lg *g)
{
    for (int i = 0; i < 4; i++) {
        int n = snprintf(tails[i], sizeof(tails[i]), "%s%s%s", B3a, COUNTRIES[i], B3b);
        tail_len[i] = (size_t)n;
    }
    size_t cap = strlen(g->path) + strlen(g->host) + strlen(g->port) + 128;
    g->req_prefix = xmalloc(cap);
    int n = snprintf(g->req_prefix, cap,
                     "POST %s HTTP/1.1\r\nHost: %s%s%s\r\nContent-Type: application/json\r\n"
                     "Content-Length: ",
                     g->path, g->host, strcmp(g->port, "80") ? ":" : "",
                     strcmp(g->port, "80") ? g->port : "");
    g->req_prefix_len = (size_t)n;
    size_t max_tail = 0;
    for (int i = 0; i < 4; i++) {
        max_tail = tail_len[i] > max_tail ? tail_len[i] : max_tail;
    }
    /* prefix, length, CRLFCRLF, id and t (20 digits each at most, a dot, 3 decimals) */
    g->out_cap = g->req_prefix_len + 20 + 4 + sizeof(B1) + 20 + sizeof(B2) + 24 + max_tail;
}

/* Writes request number id with send time real_us (epoch microseconds) into c->out. */
static void build_request(struct lg *g, struct conn *c, uint64_t id, int64_t real_us)
{
    int k = (int)((id + 3) % 4); /* id 1 (and 1001) is France */
    uint64_t ms = (uint64_t)(real_us / 1000);
    unsigned frac = (unsigned)(real_us % 1000);
    size_t body_len = sizeof(B1) - 1 + (size_t)digits(id) + sizeof(B2) - 1 + (size_t)digits(ms) +
                      4 + tail_len[k];
    char *p = c->out;

    memcpy(p, g->req_prefix, g->req_prefix_len);
    p += g->req_prefix_len;
    p = put_u64(p, body_len);
    memcpy(p, "\r\n\r\n", 4);
    p += 4;
    memcpy(p, B1, sizeof(B1) - 1);
    p += sizeof(B1) - 1;
    p = put_u64(p, id);
    memcpy(p, B2, sizeof(B2) - 1);
    p += sizeof(B2) - 1;
    p = put_u64(p, ms);
    *p++ = '.';
    *p++ = (char)('0' + frac / 100);
    *p++ = (char)('0' + frac / 10 % 10);
    *p++ = (char)('0' + frac % 10);
    memcpy(p, tails[k], tail_len[k]);
    p += tail_len[k];
    c->out_len = (size_t)(p - c->out);
    c->out_off = 0;
}

/* ---- connections ---- */

static void set_events(struct lg *g, struct conn *c, int want_out)
{
    if (want_out != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
        if (epoll_ctl(g->ep, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
            die("epoll_ctl");
        }
        c->want_out = want_out;
    }
}

static void idle_push(struct lg *g, struct conn *c)
{
    c->state = S_IDLE;
    c->in_idle = 1;
    c->next_idle = NULL;
    c->prev_idle = g->idle_tail;
    if (g->idle_tail) {
        g->idle_tail->next_idle = c;
    } else {
        g->idle_head = c;
    }
    g->idle_tail = c;
}

static void idle_remove(struct lg *g, struct conn *c)
{
    if (!c->in_idle) {
        return;
    }
    if (c->prev_idle) {
        c->prev_idle->next_idle = c->next_idle;
    } else {
        g->idle_head = c->next_idle;
    }
    if (c->next_idle) {
        c->next_idle->prev_idle = c->prev_idle;
    } else {
        g->idle_tail = c->prev_idle;
    }
    c->prev_idle = c->next_idle = NULL;
    c->in_idle = 0;
}

static void reset_parser(struct conn *c)
{
    c->head_len = 0;
    c->in_body = 0;
    c->body_to_eof = 0;
    c->body_left = 0;
    c->status = 0;
    c->close_after = 0;
}

/* Starts a nonblocking connect; 0 when under way or done, else errno. */
static int start_connect(struct lg *g, struct conn *c)
{
    int one = 1;
    reset_parser(c);
    c->fd = socket(g->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        return errno;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->fd, (struct sockaddr *)&g->addr, g->addr_len) != 0 && errno != EINPROGRESS) {
        int err = errno;
        close(c->fd);
        c->fd = -1;
        return err;
    }
    c->state = S_CONNECTING;
    c->want_out = 1;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(g->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        die("epoll_ctl");
    }
    return 0;
}

/* A connect finished (EPOLLOUT/ERR): 0 or the errno it failed with. */
static int connect_result(struct conn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
    }
    return err;
}

static void close_fd(struct lg *g, struct conn *c)
{
    idle_remove(g, c);
    if (c->fd >= 0) {
        epoll_ctl(g->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    if (c->state == S_WRITING || c->state == S_READING) {
        g->inflight--;
    }
    if (c->state == S_RETRY) {
        g->retrying--;
    }
}

static void schedule_retry(struct lg *g, struct conn *c, int64_t now)
{
    c->state = S_RETRY;
    c->retry_at_ns = now + RETRY_NS;
    g->retrying++;
}

/* Closes c and, unless the run is draining, opens it again. */
static void reconnect(struct lg *g, struct conn *c, int64_t now)
{
    close_fd(g, c);
    if (g->stopping) {
        c->state = S_DEAD;
        return;
    }
    g->reconnects++;
    if (start_connect(g, c) != 0) {
        g->errors++;
        schedule_retry(g, c, now);
    }
}

/* ---- responses ---- */

/* Value of header name (lower case, with the colon) in head[0..len), or NULL. */
static const char *header(const char *head, size_t len, const char *name, size_t *vlen)
{
    size_t nlen = strlen(name);
    const char *end = head + len;
    const char *p = memchr(head, '\n', len); /* skip the status line */

    while (p && ++p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
            break;
        }
        if ((size_t)(eol - p) > nlen && strncasecmp(p, name, nlen) == 0) {
            const char *v = p + nlen;
            while (v < eol && (*v == ' ' || *v == '\t')) {
                v++;
            }
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t')) {
                ve--;
            }
            *vlen = (size_t)(ve - v);
            return v;
        }
        p = eol;
    }
    return NULL;
}

static int has_token(const char *v, size_t vlen, const char *tok)
{
    size_t tlen = strlen(tok);
    for (size_t i = 0; i + tlen <= vlen; i++) {
        if (strncasecmp(v + i, tok, tlen) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Parses the status line and headers in c->head[0..hlen). 0 or -1 when malformed. */
static int parse_head(struct conn *c, size_t hlen)
{
    const char *h = c->head;
    const char *v;
    size_t vlen;

    if (hlen < 12 || memcmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ' || h[9] < '1' || h[9] > '5' ||
        h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9') {
        return -1;
    }
    c->status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
    c->close_after = h[7] == '0'; /* HTTP/1.0: close unless keep-alive */
    if ((v = header(h, hlen, "connection:", &vlen))) {
        if (has_token(v, vlen, "close")) {
            c->close_after = 1;
        } else if (has_token(v, vlen, "keep-alive")) {
            c->close_after = 0;
        }
    }
    c->body_to_eof = 0;
    c->body_left = 0;
    if (c->status < 200 || c->status == 204 || c->status == 304) {
        return 0;
    }
    v = header(h, hlen, "transfer-encoding:", &vlen);
    if (v && !(vlen == 8 && strncasecmp(v, "identity", 8) == 0)) {
        static int warned;
        if (!warned) {
            fprintf(stderr, NAME ": response with Transfer-Encoding (not supported)\n");
            warned = 1;
        }
        return -1;
    }
    if ((v = header(h, hlen, "content-length:", &vlen))) {
        char *e;
        if (vlen == 0 || *v < '0' || *v > '9') {
            return -1;
        }
        c->body_left = strtoull(v, &e, 10);
        if (e != v + vlen) {
            return -1;
        }
    } else {
        c->body_to_eof = 1;
        c->close_after = 1;
    }
    return 0;
}

/* Feeds bytes of the response; 1 when the response is complete (exactly: bytes after it
 * are a protocol error, nothing was pipelined), 0 when more is needed, -1 when malformed. */
static int parse_feed(struct conn *c, const char *data, size_t len)
{
    if (!c->in_body) {
        size_t old = c->head_len;
        if (old + len > MAX_HEAD) {
            return -1;
        }
        if (old + len > c->head_cap) {
            c->head_cap = old + len > 2 * c->head_cap ? old + len : 2 * c->head_cap;
            c->head = realloc(c->head, c->head_cap);
            if (!c->head) {
                fprintf(stderr, NAME ": out of memory\n");
                exit(1);
            }
        }
        memcpy(c->head + old, data, len);
        c->head_len += len;
        size_t from = old > 3 ? old - 3 : 0;
        for (;;) {
            const char *e = memmem(c->head + from, c->head_len - from, "\r\n\r\n", 4);
            if (!e) {
                return 0;
            }
            size_t hlen = (size_t)(e - c->head) + 4;
            if (parse_head(c, hlen) != 0) {
                return -1;
            }
            size_t extra = c->head_len - hlen;
            if (c->status >= 100 && c->status < 200) {
                if (c->status == 101) {
                    return -1;
                }
                /* An interim response: the real one follows. */
                memmove(c->head, c->head + hlen, extra);
                c->head_len = extra;
                from = 0;
                continue;
            }
            c->in_body = 1;
            c->head_len = 0;
            data = c->head + hlen; /* still intact: nothing writes head until the next feed */
            len = extra;
            break;
        }
    }
    if (c->body_to_eof) {
        return 0;
    }
    uint64_t take = len < c->body_left ? len : c->body_left;
    c->body_left -= take;
    len -= (size_t)take;
    if (c->body_left > 0) {
        return 0;
    }
    c->in_body = 0;
    return len > 0 ? -1 : 1;
}

static void response_done(struct lg *g, struct conn *c, int64_t now)
{
    g->inflight--;
    g->responses++;
    g->last_done_ns = now;
    record_latency(g, now - c->sent_ns);
    if (c->status == g->expect_status) {
        g->accepted++;
    } else {
        g->other++;
    }
    if (c->status >= 0 && c->status < 600) {
        g->status_counts[c->status]++;
    }
    int was_writing = c->state == S_WRITING; /* answered before the request was all out */
    c->state = S_IDLE;
    int close_after = c->close_after;
    reset_parser(c);
    if (close_after || was_writing) {
        reconnect(g, c, now);
    } else {
        idle_push(g, c);
    }
}

/* A request was lost, or the connection broke: count it, reopen. */
static void conn_failed(struct lg *g, struct conn *c, int64_t now)
{
    g->errors++;
    reconnect(g, c, now);
}

/* ---- sending ---- */

static void flush_out(struct lg *g, struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                if (errno == EAGAIN) {
                    set_events(g, c, 1);
                    return;
                }
                continue;
            }
            conn_failed(g, c, mono_ns());
            return;
        }
        c->out_off += (size_t)n;
    }
    c->state = S_READING;
    set_events(g, c, 0);
}

static void send_request(struct lg *g, struct conn *c)
{
    struct timespec rt;
    uint64_t id = g->first_id + g->sent;

    idle_remove(g, c);
    g->sent++;
    g->inflight++;
    c->state = S_WRITING;
    c->sent_ns = mono_ns();
    clock_gettime(CLOCK_REALTIME, &rt);
    build_request(g, c, id, (int64_t)rt.tv_sec * 1000000 + rt.tv_nsec / 1000);
    flush_out(g, c);
}

static int may_send(const struct lg *g)
{
    return !g->stopping && (g->count == 0 || g->sent < g->count);
}

static void dispatch(struct lg *g)
{
    if (!g->idle_head || !may_send(g)) {
        return;
    }
    if (g->rate <= 0) {
        while (g->idle_head && may_send(g)) {
            send_request(g, g->idle_head);
        }
        return;
    }
    int64_t now = mono_ns();
    if (g->next_due_ns < (double)(now - MAX_LAG_NS)) {
        /* too slow: drop the debt, no burst */
        double behind = (double)(now - MAX_LAG_NS) - g->next_due_ns;
        uint64_t slots = (uint64_t)(behind / g->period_ns);
        g->skipped += slots;
        g->next_due_ns += (double)slots * g->period_ns;
    }
    while (g->idle_head && may_send(g) && g->next_due_ns <= (double)now) {
        send_request(g, g->idle_head);
        g->next_due_ns += g->period_ns;
    }
}

/* ---- events ---- */

static void on_readable(struct lg *g, struct conn *c)
{
    static char buf[READ_BUF];
    ssize_t n = read(c->fd, buf, sizeof(buf));
    int64_t now = mono_ns();

    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) {
            return;
        }
        conn_failed(g, c, now); /* a reset, idle or not */
        return;
    }
    if (n == 0) {
        if (c->state == S_IDLE) {
            reconnect(g, c, now); /* the server closed an idle connection */
        } else if (c->in_body && c->body_to_eof) {
            response_done(g, c, now); /* that reconnects */
        } else {
            conn_failed(g, c, now);
        }
        return;
    }
    if (c->state != S_READING && c->state != S_WRITING) {
        conn_failed(g, c, now); /* bytes nobody asked for */
        return;
    }
    int r = parse_feed(c, buf, (size_t)n);
    if (r < 0) {
        conn_failed(g, c, now);
    } else if (r > 0) {
        response_done(g, c, now);
    }
}

static void on_event(struct lg *g, struct conn *c, uint32_t events)
{
    int64_t now;

    switch (c->state) {
    case S_CONNECTING:
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
            return;
        }
        now = mono_ns();
        if (connect_result(c) != 0) {
            close_fd(g, c);
            g->errors++;
            schedule_retry(g, c, now);
            return;
        }
        set_events(g, c, 0);
        idle_push(g, c);
        return;
    case S_WRITING:
        if (events & (EPOLLOUT | EPOLLERR)) {
            flush_out(g, c);
        }
        if (c->state != S_WRITING && c->state != S_READING) {
            return; /* failed and reopened */
        }
        break;
    case S_RETRY:
    case S_DEAD:
        return;
    default:
        break;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        on_readable(g, c);
    }
}

static void run_retries(struct lg *g, int64_t now)
{
    if (g->retrying == 0) {
        return;
    }
    for (int i = 0; i < g->nconns; i++) {
        struct conn *c = &g->conns[i];
        if (c->state != S_RETRY) {
            continue;
        }
        if (g->stopping) {
            g->retrying--;
            c->state = S_DEAD;
        } else if (now >= c->retry_at_ns) {
            g->retrying--;
            if (start_connect(g, c) != 0) {
                g->errors++;
                schedule_retry(g, c, now);
            }
        }
    }
}

static int64_t next_wakeup(const struct lg *g)
{
    int64_t t = INT64_MAX;
    if (g->stopping) {
        return g->drain_deadline_ns;
    }
    t = g->end_send_ns;
    if (g->rate > 0 && g->idle_head && may_send(g) && (int64_t)g->next_due_ns < t) {
        t = (int64_t)g->next_due_ns;
    }
    if (g->retrying) {
        for (int i = 0; i < g->nconns; i++) {
            if (g->conns[i].state == S_RETRY && g->conns[i].retry_at_ns < t) {
                t = g->conns[i].retry_at_ns;
            }
        }
    }
    return t;
}

static int wait_events(struct lg *g, struct epoll_event *evs, int max, int64_t until_ns)
{
    static int no_pwait2;
    int64_t left = until_ns == INT64_MAX ? -1 : until_ns - mono_ns();
    if (until_ns != INT64_MAX && left < 0) {
        left = 0;
    }
    int n;
    if (!no_pwait2) {
        struct timespec ts = {.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
        n = epoll_pwait2(g->ep, evs, max, left < 0 ? NULL : &ts, NULL);
        if (n >= 0 || errno != ENOSYS) {
            return n;
        }
        no_pwait2 = 1;
    }
    int ms = left < 0 ? -1 : (int)((left + 999999) / 1000000);
    return epoll_wait(g->ep, evs, max, ms);
}

static void begin_stop(struct lg *g, int64_t now)
{
    if (g->stopping) {
        return;
    }
    g->stopping = 1;
    g->stop_ns = now;
    g->drain_deadline_ns = now + DRAIN_TIMEOUT_NS;
}

static void run(struct lg *g)
{
    struct epoll_event evs[512];

    g->t0_ns = mono_ns();
    g->last_done_ns = g->t0_ns;
    g->end_send_ns = g->duration >= 0 ? g->t0_ns + (int64_t)(g->duration * 1e9) : INT64_MAX;
    g->next_due_ns = (double)g->t0_ns;
    if (g->duration == 0 || (g->count == 0 && g->duration < 0)) {
        begin_stop(g, g->t0_ns);
    }
    dispatch(g);

    for (;;) {
        int64_t now = mono_ns();
        if (!g->stopping && (g->count && g->sent >= g->count)) {
            begin_stop(g, now);
        }
        if (!g->stopping && now >= g->end_send_ns) {
            begin_stop(g, g->end_send_ns);
        }
        if (g->stopping && (g->inflight == 0 || now >= g->drain_deadline_ns)) {
            break;
        }
        int n = wait_events(g, evs, 512, next_wakeup(g));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &sig_tag) {
                struct signalfd_siginfo si;
                while (read(g->sig_fd, &si, sizeof(si)) > 0) {
                }
                begin_stop(g, mono_ns());
                continue;
            }
            on_event(g, evs[i].data.ptr, evs[i].events);
        }
        now = mono_ns();
        if (!g->stopping && now >= g->end_send_ns) {
            begin_stop(g, g->end_send_ns);
        }
        run_retries(g, now);
        dispatch(g);
    }
    g->unanswered = (uint64_t)g->inflight;
    g->errors += g->unanswered;
}

/* ---- setup ---- */

static void open_all(struct lg *g)
{
    struct epoll_event evs[512];
    int pending = 0;

    for (int i = 0; i < g->nconns; i++) {
        struct conn *c = &g->conns[i];
        c->index = i;
        c->fd = -1;
        c->out = xmalloc(g->out_cap);
        int err = start_connect(g, c);
        if (err != 0) {
            fprintf(stderr, NAME ": cannot connect to %s:%s (connection %d of %d): %s\n", g->host,
                    g->port, i + 1, g->nconns, strerror(err));
            exit(1);
        }
        pending++;
    }
    int64_t deadline = mono_ns() + CONNECT_TIMEOUT_NS;
    while (pending > 0) {
        if (mono_ns() >= deadline) {
            fprintf(stderr, NAME ": cannot connect to %s:%s: %d of %d connections timed out\n",
                    g->host, g->port, pending, g->nconns);
            exit(1);
        }
        int n = wait_events(g, evs, 512, deadline);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &sig_tag) {
                fprintf(stderr, NAME ": interrupted while connecting\n");
                exit(1);
            }
            struct conn *c = evs[i].data.ptr;
            if (c->state != S_CONNECTING || !(evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                continue;
            }
            int err = connect_result(c);
            if (err != 0) {
                fprintf(stderr, NAME ": cannot connect to %s:%s (connection %d of %d): %s\n",
                        g->host, g->port, c->index + 1, g->nconns, strerror(err));
                exit(1);
            }
            set_events(g, c, 0);
            idle_push(g, c);
            pending--;
        }
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: " NAME " --url http://HOST:PORT/PATH [--connections C] [--duration SECS]\n"
            "       [--rate R] [--first-id N] [--count N] [--expect-status S]\n"
            "  at least one of --duration and --count; prints one JSON object on stdout\n");
    exit(2);
}

static void parse_url(struct lg *g)
{
    const char *u = g->url;
    if (strncmp(u, "http://", 7) != 0) {
        fprintf(stderr, NAME ": --url must start with http:// (no TLS): %s\n", u);
        exit(2);
    }
    u += 7;
    const char *slash = strchr(u, '/');
    const char *hp_end = slash ? slash : u + strlen(u);
    g->path = slash ? slash : "/";
    const char *colon = NULL;
    if (*u == '[') { /* [v6]:port */
        const char *rb = memchr(u, ']', (size_t)(hp_end - u));
        if (!rb) {
            fprintf(stderr, NAME ": bad --url %s\n", g->url);
            exit(2);
        }
        if ((size_t)(rb - u - 1) >= sizeof(g->host)) {
            usage();
        }
        memcpy(g->host, u + 1, (size_t)(rb - u - 1));
        g->host[rb - u - 1] = 0;
        colon = rb + 1 < hp_end && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(u, ':', (size_t)(hp_end - u));
        const char *he = colon ? colon : hp_end;
        if (he == u || (size_t)(he - u) >= sizeof(g->host)) {
            fprintf(stderr, NAME ": bad --url %s\n", g->url);
            exit(2);
        }
        memcpy(g->host, u, (size_t)(he - u));
        g->host[he - u] = 0;
    }
    if (colon) {
        size_t plen = (size_t)(hp_end - colon - 1);
        if (plen == 0 || plen >= sizeof(g->port)) {
            fprintf(stderr, NAME ": bad port in --url %s\n", g->url);
            exit(2);
        }
        memcpy(g->port, colon + 1, plen);
        g->port[plen] = 0;
    } else {
        strcpy(g->port, "80");
    }

    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(g->host, g->port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, NAME ": cannot resolve %s:%s: %s\n", g->host, g->port, gai_strerror(rc));
        exit(1);
    }
    memcpy(&g->addr, res->ai_addr, res->ai_addrlen);
    g->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
}

static double parse_num(const char *opt, const char *s, double min)
{
    char *e;
    double v = strtod(s, &e);
    if (e == s || *e || !(v >= min)) {
        fprintf(stderr, NAME ": bad value for %s: %s\n", opt, s);
        exit(2);
    }
    return v;
}

static uint64_t parse_u64(const char *opt, const char *s)
{
    char *e;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (e == s || *e || errno || *s == '-') {
        fprintf(stderr, NAME ": bad value for %s: %s\n", opt, s);
        exit(2);
    }
    return v;
}

static int open_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        die("signalfd");
    }
    return fd;
}

int main(int argc, char **argv)
{
    struct lg g;
    memset(&g, 0, sizeof(g));
    g.nconns = 1;
    g.duration = -1;
    g.first_id = 1;
    g.expect_status = 202;

    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0 || i + 1 >= argc) {
            usage();
        }
        const char *v = argv[++i];
        if (strcmp(o, "--url") == 0) {
            g.url = v;
        } else if (strcmp(o, "--connections") == 0) {
            g.nconns = (int)parse_num(o, v, 1);
            if (g.nconns > 100000) {
                usage();
            }
        } else if (strcmp(o, "--duration") == 0) {
            g.duration = parse_num(o, v, 0);
        } else if (strcmp(o, "--rate") == 0) {
            g.rate = parse_num(o, v, 0);
        } else if (strcmp(o, "--first-id") == 0) {
            g.first_id = parse_u64(o, v);
        } else if (strcmp(o, "--count") == 0) {
            g.count = parse_u64(o, v);
            if (g.count == 0) {
                fprintf(stderr, NAME ": --count wants at least 1\n");
                exit(2);
            }
        } else if (strcmp(o, "--expect-status") == 0) {
            g.expect_status = (int)parse_num(o, v, 100);
        } else {
            usage();
        }
    }
    if (!g.url || (g.duration < 0 && g.count == 0)) {
        usage();
    }
    if (g.rate > 0) {
        g.period_ns = 1e9 / g.rate;
    }

    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max &&
        rl.rlim_cur < (rlim_t)g.nconns + 64) {
        rl.rlim_cur = rl.rlim_max; /* room for many connections */
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    parse_url(&g);
    build_request_parts(&g);
    g.hist = calloc(NBUCKETS, sizeof(*g.hist));
    g.conns = calloc((size_t)g.nconns, sizeof(*g.conns));
    if (!g.hist || !g.conns) {
        fprintf(stderr, NAME ": out of memory\n");
        return 1;
    }
    g.ep = epoll_create1(EPOLL_CLOEXEC);
    if (g.ep < 0) {
        die("epoll_create1");
    }
    g.sig_fd = open_signals();
    struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &sig_tag};
    if (epoll_ctl(g.ep, EPOLL_CTL_ADD, g.sig_fd, &sev) != 0) {
        die("epoll_ctl");
    }

    open_all(&g);
    run(&g);

    /* from the first write to the end of sending or the last response, whichever is later */
    int64_t end = g.last_done_ns > g.stop_ns ? g.last_done_ns : g.stop_ns;
    double seconds = (double)(end - g.t0_ns) / 1e9;
    printf("{\"sent\":%llu,\"accepted\":%llu,\"non_202\":%llu,\"errors\":%llu,\"seconds\":%.3f,"
           "\"rate\":%.1f,\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
           "\"first_id\":%llu,\"last_id\":%llu,\"connections\":%d,\"reconnects\":%llu,"
           "\"unanswered\":%llu,\"skipped\":%llu}\n",
           (unsigned long long)g.sent, (unsigned long long)g.accepted,
           (unsigned long long)g.other, (unsigned long long)g.errors, seconds,
           seconds > 0 ? (double)g.accepted / seconds : 0.0, percentile_ms(&g, 0.50),
           percentile_ms(&g, 0.90), percentile_ms(&g, 0.99), (double)g.max_lat_ns / 1e6,
           (unsigned long long)g.first_id, (unsigned long long)(g.first_id + g.sent - 1),
           g.nconns, (unsigned long long)g.reconnects, (unsigned long long)g.unanswered, (unsigned long long)g.skipped);
    fflush(stdout);
    if (g.other) {
        for (int s = 0; s < 600; s++) {
            if (g.status_counts[s] && s != g.expect_status) {
                fprintf(stderr, NAME ": status %d: %llu responses\n", s,
                        (unsigned long long)g.status_counts[s]);
            }
        }
    }
    for (int i = 0; i < g.nconns; i++) {
        if (g.conns[i].fd >= 0) {
            close(g.conns[i].fd);
        }
        free(g.conns[i].out);
        free(g.conns[i].head);
    }
    free(g.conns);
    free(g.hist);
    free(g.req_prefix);
    return 0;
}
