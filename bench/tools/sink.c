/* gust-bench-sink: the counting HTTP/1.1 server at the end of the benchmarks' pipelines.
 *
 *   gust-bench-sink [--listen ADDR] [--port N] [--id-field NAME] [--expect N] [--service-us US]
 *
 * Prints "port N" as its first line (port 0, the default, picks a free one). Answers every
 * POST with 200 and an empty body; from each body it takes "t" (epoch ms, with a fraction)
 * for the latency and the id field (default order_ref) for the count of unique ids and
 * duplicates; a body that is a JSON array (a batch) counts each of its elements so. GET /stats answers the stats as JSON; SIGINT, SIGTERM, or reaching
 * --expect unique ids prints them on stdout and exits 0.
 *
 * One thread, epoll, nonblocking sockets, keep-alive and pipelining: it must stay far from
 * being the bottleneck of what it measures.
 *
 * --service-us US stands in for a real API, which spends time on each request: a
 * connection's requests are served one after the other, each answered US microseconds
 * after the one before it was (or after it arrived, when the connection was idle), as an
 * HTTP/1.1 server answers what is pipelined to it, in order. Without it every answer goes
 * out at once. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sink_body.h"
#include "sink_stats.h"

#define MAX_BODY (16u << 20)
#define READ_CHUNK 65536

struct conn {
    struct conn *prev, *next; /* every open connection, to close them all on exit */
    int fd;
    int closing;    /* close once out is written */
    int want_write; /* EPOLLOUT registered */
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_off, out_len, out_cap;
    /* --service-us: answers written to out but not yet due: each ends at end[i] in out and
     * may go at due[i] (CLOCK_MONOTONIC us); ready is where out may be sent up to. */
    size_t *end;
    int64_t *due;
    size_t nheld, held_cap, ready;
    int64_t last_due;
};

struct sink {
    int ep;
    int listen_fd;
    int signal_fd;
    const char *id_field;
    unsigned long long expect;
    struct sink_stats *stats;
    struct conn *conns;
    int64_t service_us; /* 0: answer at once */
};

/* Tags for the two fds that are not connections, told apart by their epoll data pointer. */
static char listener_tag, signal_tag;

static void die(const char *what)
{
    fprintf(stderr, "gust-bench-sink: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size);
    if (!p) {
        fprintf(stderr, "gust-bench-sink: out of memory\n");
        exit(1);
    }
    return p;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void out_append(struct conn *c, const char *data, size_t len)
{
    if (c->out_len + len > c->out_cap) {
        c->out_cap = (c->out_len + len) * 2;
        c->out = xrealloc(c->out, c->out_cap);
    }
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
}

static void respond(struct conn *c, const char *status, const char *type, const char *body,
                    size_t body_len)
{
    char head[256];
    int n = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\n%s%s%sContent-Length: %zu\r\n%s\r\n",
                     status, type ? "Content-Type: " : "", type ? type : "", type ? "\r\n" : "",
                     body_len, c->closing ? "Connection: close\r\n" : "");
    out_append(c, head, (size_t)n);
    out_append(c, body, body_len);
}

/* With a service time, holds what respond() just wrote until its turn comes; without
 * one, it may go at once. */
static void answer_done(const struct sink *s, struct conn *c)
{
    if (s->service_us == 0) {
        c->ready = c->out_len;
        return;
    }
    if (c->nheld == c->held_cap) {
        c->held_cap = c->held_cap ? c->held_cap * 2 : 64;
        c->end = xrealloc(c->end, c->held_cap * sizeof(*c->end));
        c->due = xrealloc(c->due, c->held_cap * sizeof(*c->due));
    }
    int64_t now = mono_us();
    c->last_due = (c->last_due > now ? c->last_due : now) + s->service_us;
    c->end[c->nheld] = c->out_len;
    c->due[c->nheld] = c->last_due;
    c->nheld++;
}

/* Moves c->ready past the held answers that are due; returns the next one's due time
 * (0: none held). */
static int64_t release_due(struct conn *c, int64_t now)
{
    size_t i = 0;
    while (i < c->nheld && c->due[i] <= now) {
        c->ready = c->end[i++];
    }
    if (i > 0) {
        memmove(c->end, c->end + i, (c->nheld - i) * sizeof(*c->end));
        memmove(c->due, c->due + i, (c->nheld - i) * sizeof(*c->due));
        c->nheld -= i;
    }
    return c->nheld ? c->due[0] : 0;
}

static void conn_close(struct sink *s, struct conn *c)
{
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        s->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c->end);
    free(c->due);
    free(c);
}

/* Value of header name (lower case, with the colon) in head[0..len), or NULL. */
static const char *header(const char *head, size_t len, const char *name, size_t *vlen)
{
    size_t nlen = strlen(name);
    const char *end = head + len;
    const char *p = memchr(head, '\n', len); /* skip the request line */

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
            *vlen = (size_t)(eol - v) - (eol[-1] == '\r');
            return v;
        }
        p = eol;
    }
    return NULL;
}

static void count_one(void *ud, const char *body, size_t len)
{
    struct sink *s = ud;
    struct sink_fields f;
    int64_t now = now_us();

    if (sink_body_scan(body, len, s->id_field, &f) != 0) {
        sink_stats_add(s->stats, now, NULL, 0, -1);
        return;
    }
    sink_stats_add(s->stats, now, f.id, f.id_len, f.has_t ? f.t_us : -1);
}

/* A body is one event, or a batch of them (a JSON array): each is counted. */
static void count_body(struct sink *s, const char *body, size_t len)
{
    size_t i = 0;

    sink_stats_body(s->stats);
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n')) {
        i++;
    }
    if (i < len && body[i] == '[') {
        if (sink_body_elements(body, len, count_one, s) < 0) {
            sink_stats_add(s->stats, now_us(), NULL, 0, -1);
        }
        return;
    }
    count_one(s, body, len);
}

static void answer_get(struct sink *s, struct conn *c, const char *path, size_t path_len)
{
    char json[1024];

    if (path_len == 6 && memcmp(path, "/stats", 6) == 0) {
        int n = sink_stats_json(s->stats, json, sizeof(json));
        respond(c, "200 OK", "application/json", json, (size_t)n);
    } else {
        respond(c, "404 Not Found", NULL, "", 0);
    }
}

/* Handles the request at the start of in[0..len). Returns the bytes it used, 0 when the
 * request is not all there yet, or -1 when the connection must close now. */
static long handle_request(struct sink *s, struct conn *c, const char *in, size_t len)
{
    const char *hend = memmem(in, len, "\r\n\r\n", 4);
    size_t vlen, clen = 0;
    const char *v;

    if (!hend) {
        return len > 65536 ? -1 : 0;
    }
    size_t head_len = (size_t)(hend - in) + 4;
    const char *sp1 = memchr(in, ' ', head_len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(hend - sp1 - 1)) : NULL;
    if (!sp2) {
        return -1;
    }
    if ((v = header(in, head_len, "content-length:", &vlen))) {
        clen = strtoul(v, NULL, 10);
    }
    v = header(in, head_len, "connection:", &vlen);
    if (v ? vlen == 5 && strncasecmp(v, "close", 5) == 0 : memcmp(sp2 + 1, "HTTP/1.0", 8) == 0) {
        c->closing = 1;
    }
    if (header(in, head_len, "transfer-encoding:", &vlen) || clen > MAX_BODY) {
        /* The clients it serves send Content-Length; anything else is refused, not guessed. */
        c->closing = 1;
        respond(c, "411 Length Required", NULL, "", 0);
        answer_done(s, c);
        return (long)len;
    }
    if (len < head_len + clen) {
        return 0;
    }
    size_t mlen = (size_t)(sp1 - in);
    if ((mlen == 4 && memcmp(in, "POST", 4) == 0) || (mlen == 3 && memcmp(in, "PUT", 3) == 0)) {
        count_body(s, in + head_len, clen);
        respond(c, "200 OK", NULL, "", 0);
    } else if (mlen == 3 && memcmp(in, "GET", 3) == 0) {
        answer_get(s, c, sp1 + 1, (size_t)(sp2 - sp1 - 1));
    } else {
        respond(c, "405 Method Not Allowed", NULL, "", 0);
    }
    answer_done(s, c);
    return (long)(head_len + clen);
}

/* Writes what is pending; returns -1 when the connection is gone or done. */
static int flush_out(struct sink *s, struct conn *c)
{
    if (c->nheld > 0) {
        release_due(c, mono_us());
    }
    while (c->out_off < c->ready) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->ready - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN) {
                break;
            }
            return -1;
        }
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = c->ready = 0;
        if (c->closing) {
            return -1;
        }
    } else if (c->out_off > 65536) {
        /* Answers held for their turn keep out from emptying: drop what went. */
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        for (size_t i = 0; i < c->nheld; i++) {
            c->end[i] -= c->out_off;
        }
        c->out_len -= c->out_off;
        c->ready -= c->out_off;
        c->out_off = 0;
    }
    int want = c->out_off < c->ready;
    if (want != c->want_write) {
        struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_write = want;
    }
    return 0;
}

static int read_requests(struct sink *s, struct conn *c)
{
    if (c->in_cap - c->in_len < READ_CHUNK) {
        c->in_cap = c->in_cap * 2 + READ_CHUNK;
        c->in = xrealloc(c->in, c->in_cap);
    }
    ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
    if (n <= 0) {
        return n < 0 && errno == EAGAIN ? 0 : -1;
    }
    c->in_len += (size_t)n;

    size_t used = 0;
    while (!c->closing && used < c->in_len) {
        long r = handle_request(s, c, c->in + used, c->in_len - used);
        if (r < 0) {
            return -1;
        }
        if (r == 0) {
            break;
        }
        used += (size_t)r;
    }
    memmove(c->in, c->in + used, c->in_len - used);
    c->in_len -= used;
    return 0;
}

static void accept_all(struct sink *s)
{
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != ECONNABORTED) {
                fprintf(stderr, "gust-bench-sink: accept: %s\n", strerror(errno));
            }
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = xrealloc(NULL, sizeof(*c));
        memset(c, 0, sizeof(*c));
        c->fd = fd;
        c->next = s->conns;
        if (s->conns) {
            s->conns->prev = c;
        }
        s->conns = c;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            die("epoll_ctl");
        }
        sink_stats_connection(s->stats);
    }
}

static int open_listener(const char *addr, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        die("socket");
    }
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        fprintf(stderr, "gust-bench-sink: --listen wants an IPv4 address, not %s\n", addr);
        exit(2);
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        die("bind");
    }
    if (listen(fd, 4096) != 0) {
        die("listen");
    }
    socklen_t len = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    printf("port %d\n", ntohs(sa.sin_port));
    fflush(stdout);
    return fd;
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

static void usage(void)
{
    fprintf(stderr, "usage: gust-bench-sink [--listen ADDR] [--port N] [--id-field NAME] "
                    "[--expect N] [--service-us US]\n");
    exit(2);
}

/* With answers held for their turn: sends the ones now due and returns how long to wait
 * for the next (ms, rounded up; -1: none held). */
static int release_held(struct sink *s)
{
    int64_t now = mono_us(), next = 0;
    for (struct conn *c = s->conns, *after; c; c = after) {
        after = c->next;
        if (c->nheld == 0) {
            continue;
        }
        if (c->due[0] <= now && flush_out(s, c) != 0) {
            conn_close(s, c);
            continue;
        }
        if (c->nheld > 0 && (next == 0 || c->due[0] < next)) {
            next = c->due[0];
        }
    }
    return next == 0 ? -1 : (int)((next - now + 999) / 1000);
}

static void run(struct sink *s)
{
    struct epoll_event evs[256];

    for (;;) {
        int n = epoll_wait(s->ep, evs, 256, s->service_us ? release_held(s) : -1);
        if (n < 0 && errno != EINTR) {
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &listener_tag) {
                accept_all(s);
            } else if (p == &signal_tag) {
                return;
            } else {
                struct conn *c = p;
                int gone = 0;
                if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                    gone = read_requests(s, c) != 0;
                }
                /* Answer what was read even when the peer has gone half-closed. */
                if (flush_out(s, c) != 0 || gone) {
                    conn_close(s, c);
                }
            }
        }
        if (s->expect && sink_stats_unique(s->stats) >= s->expect) {
            return;
        }
    }
}

int main(int argc, char **argv)
{
    struct sink s = {.id_field = "order_ref"};
    const char *addr = "127.0.0.1";
    int port = 0;

    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) {
            usage();
        }
        if (strcmp(argv[i], "--listen") == 0) {
            addr = argv[++i];
        } else if (strcmp(argv[i], "--port") == 0) {
            port = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--id-field") == 0) {
            s.id_field = argv[++i];
        } else if (strcmp(argv[i], "--expect") == 0) {
            s.expect = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--service-us") == 0) {
            s.service_us = strtoll(argv[++i], NULL, 10);
        } else {
            usage();
        }
    }

    s.stats = sink_stats_create();
    s.signal_fd = open_signals();
    s.listen_fd = open_listener(addr, port);
    s.ep = epoll_create1(EPOLL_CLOEXEC);
    if (s.ep < 0) {
        die("epoll_create1");
    }
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &listener_tag};
    struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &signal_tag};
    if (epoll_ctl(s.ep, EPOLL_CTL_ADD, s.listen_fd, &lev) != 0 ||
        epoll_ctl(s.ep, EPOLL_CTL_ADD, s.signal_fd, &sev) != 0) {
        die("epoll_ctl");
    }

    run(&s);

    char json[1024];
    sink_stats_json(s.stats, json, sizeof(json));
    printf("%s\n", json);
    while (s.conns) {
        conn_close(&s, s.conns);
    }
    sink_stats_destroy(s.stats);
    return 0;
}
