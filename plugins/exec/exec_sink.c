/* exec_sink: runs the command once per message, with the message body on its stdin.
 *
 *   sink notify { use exec_sink; source ev.alerts; command /usr/local/bin/notify --channel ops;
 *                 env_file TOKEN=/etc/gust/notify.token; timeout 10s; max_inflight 4; }
 *
 * What the child's end means for the message:
 *   exit 0                           DELIVERED  the host acks it
 *   exit non-zero, killed by signal  REJECTED   "exit 3: <stderr tail>": max_deliver attempts,
 *                                               then the dead-letter stream
 *   cannot start, timeout            RETRY      redelivered with backoff until it works
 * The child also gets GUST_SUBJECT, GUST_SEQ and GUST_ATTEMPT in its environment; its stdout
 * goes to /dev/null. With max_inflight N, up to N messages of a batch run at once (their
 * order is then not kept); 1 runs them one after another in stream order. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec.h"

#define MAX_INFLIGHT 64

const struct gust_schema_key exec_sink_schema[] = {
    EXEC_COMMON_KEYS,
    EXEC_KEY_RANGE(timeout, DURATION, "30s", 0, 10, INT64_MAX,
                   "a child still running after this is killed and the message retried"),
    EXEC_KEY_RANGE(max_inflight, INT, "1", 0, 1, MAX_INFLIGHT, "messages of a batch run at once (1 keeps stream order)"),
    GUST_KEY_END,
};

struct sink {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    struct exec_keys keys;
    struct exec_cmd cmd;
    int max_inflight;
    struct exec_ratelog rl;
    uint64_t delivered, rejected, retried;
};

struct slot {
    struct exec_child c;
    const struct gust_msg *msg;
    struct gust_result *res;
    size_t off; /* of the body written to stdin */
    int64_t deadline;
    int active;
};

int exec_sink_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    const struct gust_host_api *h = exec_host;
    struct sink *s = calloc(1, sizeof(*s));
    int rc;

    if (!s) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    s->inst = inst;
    s->cfg = cfg;
    if ((rc = gust_sdk_bind(h, cfg, exec_sink_schema, &s->keys, err)) != 0 ||
        (rc = exec_cmd_load(&s->cmd, &s->keys, cfg, err)) != 0) {
        goto fail;
    }
    s->max_inflight = (int)s->keys.max_inflight;
    *ctx = s;
    return 0;
fail:
    exec_cmd_free(&s->cmd);
    free(s);
    return rc;
}

int exec_sink_start(void *ctx, struct gust_err *err)
{
    struct sink *s = ctx;
    return exec_cmd_env(&s->cmd, &s->keys, s->cfg, err);
}

static void set_result(struct gust_result *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_result(struct gust_result *res, int status, const char *fmt, ...)
{
    va_list ap;
    res->status = status;
    va_start(ap, fmt);
    vsnprintf(res->error, sizeof(res->error), fmt, ap);
    va_end(ap);
}

static int spawn(struct sink *s, struct slot *sl, const struct gust_msg *m, struct gust_result *res)
{
    char subj[300], seq[48], att[32];
    const char *extra[] = {subj, seq, att, NULL};
    struct gust_err err = {{0}};

    snprintf(subj, sizeof(subj), "GUST_SUBJECT=%s", m->subject ? m->subject : "");
    snprintf(seq, sizeof(seq), "GUST_SEQ=%" PRIu64, m->stream_seq);
    snprintf(att, sizeof(att), "GUST_ATTEMPT=%" PRIu32, m->attempt);
    memset(sl, 0, sizeof(*sl));
    if (exec_child_spawn(&sl->c, &s->cmd, extra, EXEC_PIPE_IN, &err) != 0) {
        s->retried++;
        set_result(res, GUST_RETRY, "%s", err.msg);
        if (exec_ratelog_ok(&s->rl, s->inst)) {
            exec_host->log(s->inst, GUST_LOG_ERROR, "%s (message %" PRIu64 " will be retried)", err.msg,
                           m->stream_seq);
        }
        return -1;
    }
    sl->msg = m;
    sl->res = res;
    sl->deadline = gust_clock_mono_ms() + s->cmd.timeout_ms;
    sl->active = 1;
    if (m->len == 0) {
        close(sl->c.in); /* nothing to write: EOF at once */
        sl->c.in = -1;
    }
    return 0;
}

static void write_body(struct slot *sl)
{
    while (sl->c.in >= 0 && sl->off < sl->msg->len) {
        ssize_t w = write(sl->c.in, (const char *)sl->msg->data + sl->off, sl->msg->len - sl->off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        if (w < 0) {
            /* EPIPE (gust ignores SIGPIPE): the child does not read all of its stdin, which
             * is its business; its exit status decides. */
            break;
        }
        sl->off += (size_t)w;
    }
    close(sl->c.in);
    sl->c.in = -1;
}

static void finish(struct sink *s, struct slot *sl, int timed_out)
{
    char tail[160], st[80];

    if (timed_out) {
        exec_child_kill(&sl->c, 0);
        exec_child_tail(&sl->c, tail, sizeof(tail));
        s->retried++;
        set_result(sl->res, GUST_RETRY, "timed out after %lld ms%s%s", (long long)s->cmd.timeout_ms,
                   tail[0] ? ": " : "", tail);
        if (exec_ratelog_ok(&s->rl, s->inst)) {
            exec_host->log(s->inst, GUST_LOG_WARN,
                           "%s timed out after %lld ms on message %" PRIu64 " (will be retried)", s->cmd.what,
                           (long long)s->cmd.timeout_ms, sl->msg->stream_seq);
        }
    } else {
        exec_child_read_err(&sl->c);
        exec_child_tail(&sl->c, tail, sizeof(tail));
        exec_child_close(&sl->c);
        if (WIFEXITED(sl->c.status) && WEXITSTATUS(sl->c.status) == 0) {
            s->delivered++;
            sl->res->status = GUST_DELIVERED;
            sl->res->error[0] = '\0';
        } else {
            exec_status_text(sl->c.status, st, sizeof(st));
            s->rejected++;
            set_result(sl->res, GUST_REJECTED, "%s%s%s", st, tail[0] ? ": " : "", tail);
            if (exec_ratelog_ok(&s->rl, s->inst)) {
                exec_host->log(s->inst, GUST_LOG_WARN,
                               "message %" PRIu64 " (attempt %" PRIu32 ") rejected: %s", sl->msg->stream_seq,
                               sl->msg->attempt, sl->res->error);
            }
        }
    }
    sl->active = 0;
}

int exec_sink_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    struct sink *s = ctx;
    struct slot slots[MAX_INFLIGHT];
    struct pollfd p[2 * MAX_INFLIGHT];
    int owner[2 * MAX_INFLIGHT];
    size_t next = 0;
    int active = 0;

    memset(slots, 0, sizeof(slots));
    while (next < n || active > 0) {
        for (int i = 0; i < s->max_inflight && next < n; i++) {
            if (slots[i].active) {
                continue;
            }
            if (spawn(s, &slots[i], &msgs[next], &results[next]) == 0) {
                active++;
            }
            next++;
        }
        if (active == 0) {
            continue;
        }
        int np = 0;
        int64_t now = gust_clock_mono_ms(), wait = 100;
        for (int i = 0; i < s->max_inflight; i++) {
            struct slot *sl = &slots[i];
            if (!sl->active) {
                continue;
            }
            if (sl->c.in < 0 && sl->c.err < 0) {
                wait = 2; /* only its exit is left to see */
            }
            if (sl->deadline - now < wait) {
                wait = sl->deadline - now < 0 ? 0 : sl->deadline - now;
            }
            if (sl->c.in >= 0) {
                p[np] = (struct pollfd){.fd = sl->c.in, .events = POLLOUT};
                owner[np++] = i;
            }
            if (sl->c.err >= 0) {
                p[np] = (struct pollfd){.fd = sl->c.err, .events = POLLIN};
                owner[np++] = i;
            }
        }
        if (poll(p, (nfds_t)np, (int)wait) < 0 && errno != EINTR) {
            exec_host->log(s->inst, GUST_LOG_ERROR, "poll: %s", strerror(errno));
        }
        for (int k = 0; k < np; k++) {
            struct slot *sl = &slots[owner[k]];
            if (!p[k].revents) {
                continue;
            }
            if (p[k].fd == sl->c.in) {
                write_body(sl);
            } else if (p[k].fd == sl->c.err) {
                exec_child_read_err(&sl->c);
            }
        }
        now = gust_clock_mono_ms();
        for (int i = 0; i < s->max_inflight; i++) {
            struct slot *sl = &slots[i];
            if (!sl->active) {
                continue;
            }
            if (exec_child_exited(&sl->c)) {
                finish(s, sl, 0);
                active--;
            } else if (now >= sl->deadline) {
                finish(s, sl, 1);
                active--;
            }
        }
    }
    return 0;
}

void exec_sink_stop(void *ctx)
{
    struct sink *s = ctx;
    /* deliver runs its children to the end before it returns: nothing is left running. */
    exec_host->log(s->inst, GUST_LOG_INFO,
                   "stopped: %" PRIu64 " delivered, %" PRIu64 " rejected, %" PRIu64 " retried", s->delivered,
                   s->rejected, s->retried);
}

void exec_sink_destroy(void *ctx)
{
    struct sink *s = ctx;
    if (!s) {
        return;
    }
    exec_cmd_free(&s->cmd);
    free(s);
}
