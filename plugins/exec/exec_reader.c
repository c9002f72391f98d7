/* exec_source and exec_stream: a child whose stdout lines are published.
 *
 *   source ps  { use exec_source; command /usr/bin/some-tool --flag; interval 10s; subject ev.ps; }
 *   source log { use exec_stream; command /usr/bin/tail -F /var/log/app.jsonl; subject ev.app; }
 *
 * exec_source runs the command at start and then every `interval` (from the start of one
 * run to the next; a run that takes longer delays the next), killing it after `timeout`.
 * exec_stream keeps one child running and restarts it when it exits, waiting restart_min,
 * doubling up to restart_max while it keeps exiting early.
 *
 * Each stdout line that is one JSON object is published to `subject` as is; blank lines are
 * ignored; other lines, lines over max_line, failed runs and commands that cannot start are
 * logged (rate-limited) and counted, and the source goes on. stderr is kept as a tail for
 * the log line of a failed run. One thread per instance does it all, the SDK's source
 * runner's (run once: the loop below is its run()), which also publishes with
 * back-pressure: past max_inflight, stdout is not read and the child blocks. stop() wakes
 * the thread, which kills the child's process group (SIGTERM, then SIGKILL after 100 ms). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec.h"
#include "gust/source.h"

#define KILL_GRACE_MS 100

#define READER_KEYS                                                                                      \
    EXEC_COMMON_KEYS, EXEC_KEY(subject, SUBJECT, NULL, GUST_K_REQUIRED, "publish each JSON line of stdout here"), \
        EXEC_KEY_RANGE(max_line, SIZE, "1m", 0, 16, 1 << 30, "longer stdout lines are skipped (logged, counted)"), \
        EXEC_KEY_RANGE(max_inflight, INT, "1024", 0, 1, 1000000,                                                 \
                       "publishes without a PubAck yet; past it stdout is not read (the child blocks)")

const struct gust_schema_key exec_source_schema[] = {
    READER_KEYS,
    EXEC_KEY_RANGE(interval, DURATION, "10s", 0, 10, INT64_MAX, "from the start of one run to the start of the next"),
    EXEC_KEY_RANGE(timeout, DURATION, "30s", 0, 10, INT64_MAX,
                   "a run still going after this is killed (its process group)"),
    GUST_KEY_END,
};

const struct gust_schema_key exec_stream_schema[] = {
    READER_KEYS,
    EXEC_KEY_RANGE(restart_min, DURATION, "1s", 0, 10, INT64_MAX,
                   "wait before restarting a child that exited (at most restart_max)"),
    EXEC_KEY(restart_max, DURATION, "30s", 0,
             "the wait doubles up to this while the child keeps exiting; a child that ran this long restarts after "
             "restart_min again"),
    GUST_KEY_END,
};

enum { MODE_SOURCE, MODE_STREAM };

struct reader {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    struct exec_keys keys;
    int mode;
    struct exec_cmd cmd;
    const char *subject;
    size_t max_line;
    size_t max_inflight;
    int64_t interval_ms, restart_min_ms, restart_max_ms;

    struct gust_source_runner *runner; /* the thread, stop, and publishing */
    int wake_fd;
    int running;

    struct exec_ratelog rl;
    /* counts, touched by the thread only; read after join */
    uint64_t runs, lines, bad_lines, too_long, failed_runs, start_failures, timeouts;
    uint64_t run_lines, run_bad; /* of the current run */
};

static int reader_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, int mode,
                         struct gust_err *err)
{
    const struct gust_host_api *h = exec_host;
    struct reader *r = calloc(1, sizeof(*r));
    int rc;

    if (!r) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    r->inst = inst;
    r->cfg = cfg;
    r->mode = mode;
    r->wake_fd = -1;
    if ((rc = gust_sdk_bind(h, cfg, mode == MODE_SOURCE ? exec_source_schema : exec_stream_schema, &r->keys,
                            err)) != 0 ||
        (rc = exec_cmd_load(&r->cmd, &r->keys, cfg, err)) != 0) {
        goto fail;
    }
    r->subject = r->keys.subject;
    /* The schema bounds every key; only the two restart waits are compared here. */
    r->max_line = (size_t)r->keys.max_line;
    r->max_inflight = (size_t)r->keys.max_inflight;
    if (mode == MODE_SOURCE) {
        r->interval_ms = r->keys.interval;
    } else {
        r->restart_min_ms = r->keys.restart_min;
        r->restart_max_ms = r->keys.restart_max;
        if (r->restart_max_ms < r->restart_min_ms) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: restart_min must be at most restart_max",
                              h->cfg_where(cfg, "restart_min"));
            goto fail;
        }
    }
    *ctx = r;
    return 0;
fail:
    exec_cmd_free(&r->cmd);
    free(r);
    return rc;
}

int exec_source_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                       struct gust_err *err)
{
    return reader_create(inst, cfg, ctx, MODE_SOURCE, err);
}

int exec_stream_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                       struct gust_err *err)
{
    return reader_create(inst, cfg, ctx, MODE_STREAM, err);
}

static int on_line(void *ud, char *line, size_t len)
{
    struct reader *r = ud;
    size_t n = len;

    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t')) {
        n--;
    }
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) {
        i++;
    }
    if (i == n) {
        return 0; /* blank */
    }
    if (!exec_is_json_object(line + i, n - i)) {
        r->bad_lines++;
        r->run_bad++;
        if (exec_ratelog_ok(&r->rl, r->inst)) {
            char pv[81];
            exec_preview(line + i, n - i, pv, sizeof(pv));
            exec_host->log(r->inst, GUST_LOG_WARN,
                           "skipped a stdout line that is not one JSON object (%zu bytes): %s%s", n - i, pv,
                           n - i > sizeof(pv) - 1 ? "..." : "");
        }
        return 0;
    }
    int rc = gust_source_publish(r->runner, r->subject, line + i, n - i);
    if (rc != 0 && gust_source_stopping(r->runner)) {
        return -1;
    }
    if (rc == 0) {
        r->lines++;
        r->run_lines++;
    } else if (exec_ratelog_ok(&r->rl, r->inst)) {
        exec_host->log(r->inst, GUST_LOG_WARN, "publish to %s refused (line dropped): error %d", r->subject,
                       rc);
    }
    return 0;
}

static void on_toolong(void *ud, size_t max)
{
    struct reader *r = ud;
    r->too_long++;
    r->run_bad++;
    if (exec_ratelog_ok(&r->rl, r->inst)) {
        exec_host->log(r->inst, GUST_LOG_WARN, "skipped a stdout line longer than max_line (%zu bytes)", max);
    }
}

/* Waits up to ms, or until stop. Returns 1 when stopping. */
static int pause_ms(struct reader *r, int64_t ms)
{
    int64_t until = gust_clock_mono_ms() + ms;
    while (!gust_source_stopping(r->runner)) {
        int64_t left = until - gust_clock_mono_ms();
        if (left <= 0) {
            return 0;
        }
        struct pollfd p = {.fd = r->wake_fd, .events = POLLIN};
        if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) > 0) {
            uint64_t v;
            if (read(r->wake_fd, &v, sizeof(v)) < 0) {
                /* non-blocking eventfd: only a wake-up */
            }
        }
    }
    return 1;
}

/* One child from start to reaped. Returns its wait status, or -1 when it did not start,
 * -2 when it was killed for the timeout, -3 when stopping. */
static int run_child(struct reader *r, struct exec_child *c)
{
    struct gust_err err = {{0}};
    struct exec_lines lines;
    int64_t deadline = r->mode == MODE_SOURCE ? gust_clock_mono_ms() + r->cmd.timeout_ms : INT64_MAX;
    int64_t exited_at = 0, closed_at = 0;
    int result = 0;

    if (exec_lines_init(&lines, r->max_line) != 0) {
        return -1;
    }
    if (exec_child_spawn(c, &r->cmd, NULL, EXEC_PIPE_OUT, &err) != 0) {
        exec_lines_free(&lines);
        r->start_failures++;
        if (exec_ratelog_ok(&r->rl, r->inst)) {
            exec_host->log(r->inst, GUST_LOG_ERROR, "%s", err.msg);
        }
        return -1;
    }
    r->runs++;
    r->run_lines = r->run_bad = 0;
    for (;;) {
        if (gust_source_stopping(r->runner)) {
            result = -3;
            break;
        }
        int64_t now = gust_clock_mono_ms();
        if (now >= deadline) {
            result = -2;
            break;
        }
        if (!exited_at && exec_child_exited(c)) {
            exited_at = now; /* what it left in its group is killed: the pipes end soon */
        }
        if (c->out < 0 && c->err < 0) {
            if (exited_at) {
                break;
            }
        } else if (exited_at && now - exited_at > 1000) {
            /* Something outside its process group (setsid) still holds the pipes. */
            exec_host->log(r->inst, GUST_LOG_WARN,
                           "the command exited but its output stays open; closing it");
            break;
        }
        struct pollfd p[3] = {{.fd = r->wake_fd, .events = POLLIN},
                              {.fd = c->out, .events = POLLIN},
                              {.fd = c->err, .events = POLLIN}};
        int64_t wait = deadline - now;
        /* With both pipes closed only the exit is left to see: look often. Otherwise the
         * pipes end with the exit; the tick only catches a child that closed them early. */
        int64_t tick = 100;
        if (c->out < 0 && c->err < 0) {
            /* Usually the exit follows at once; a child that closed its output and runs on
             * (a daemon-like stream) is then looked at ten times a second. */
            closed_at = closed_at ? closed_at : now;
            tick = now - closed_at < 200 ? 5 : 100;
        }
        wait = wait > tick ? tick : wait;
        int n = poll(p, 3, (int)wait);
        if (n < 0 && errno != EINTR) {
            exec_host->log(r->inst, GUST_LOG_ERROR, "poll: %s", strerror(errno));
            result = -3;
            break;
        }
        if (n <= 0) {
            continue;
        }
        if (p[0].revents & POLLIN) {
            uint64_t v;
            if (read(r->wake_fd, &v, sizeof(v)) < 0) {
                /* only a wake-up */
            }
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            int lr = exec_lines_read(&lines, c->out, on_line, on_toolong, r);
            if (lr <= 0) {
                close(c->out);
                c->out = -1;
                if (lr < 0) {
                    result = -3;
                    break;
                }
            }
        }
        if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
            exec_child_read_err(c);
        }
    }
    exec_lines_free(&lines);
    if (result == 0 && c->reaped) {
        result = c->status;
    }
    if (!c->reaped) {
        exec_child_kill(c, KILL_GRACE_MS);
    }
    if (result == 0 && c->reaped) {
        result = c->status;
    }
    exec_child_read_err(c);
    exec_child_close(c);
    return result;
}

static void report_run(struct reader *r, const struct exec_child *c, int result)
{
    char st[80], tail[200];
    double secs = (double)(gust_clock_mono_ms() - c->started_ms) / 1000.0;

    if (result == -3 || result == -1) {
        return;
    }
    exec_child_tail(c, tail, sizeof(tail));
    if (result == -2) {
        r->timeouts++;
        r->failed_runs++;
        exec_host->log(r->inst, GUST_LOG_WARN,
                       "%s killed after the %lld ms timeout (%" PRIu64 " lines published)%s%s", r->cmd.what,
                       (long long)r->cmd.timeout_ms, r->run_lines, tail[0] ? "; stderr: " : "", tail);
        return;
    }
    exec_status_text(result, st, sizeof(st));
    if (!WIFEXITED(result) || WEXITSTATUS(result) != 0) {
        r->failed_runs++;
        exec_host->log(r->inst, GUST_LOG_WARN,
                       "%s ended with %s after %.1f s (%" PRIu64 " lines published, %" PRIu64 " skipped)%s%s",
                       r->cmd.what, st, secs, r->run_lines, r->run_bad, tail[0] ? "; stderr: " : "", tail);
    } else if (r->mode == MODE_STREAM) {
        exec_host->log(r->inst, GUST_LOG_INFO,
                       "%s ended with %s after %.1f s (%" PRIu64 " lines published, %" PRIu64 " skipped)",
                       r->cmd.what, st, secs, r->run_lines, r->run_bad);
    } else if (r->run_bad) {
        exec_host->log(r->inst, GUST_LOG_INFO, "run: %" PRIu64 " lines published, %" PRIu64 " skipped",
                       r->run_lines, r->run_bad);
    }
}

/* The runner's run(), once: it loops until stop. */
static void reader_run(void *arg, uint64_t n)
{
    struct reader *r = arg;
    (void)n;
    int64_t backoff = r->restart_min_ms;

    exec_host->log(r->inst, GUST_LOG_INFO, "%s %s -> %s",
                   r->mode == MODE_SOURCE ? "running" : "streaming from", r->cmd.what, r->subject);
    while (!gust_source_stopping(r->runner)) {
        struct exec_child c;
        int64_t started = gust_clock_mono_ms();
        int result = run_child(r, &c);
        report_run(r, &c, result);
        if (gust_source_stopping(r->runner)) {
            break;
        }
        if (r->mode == MODE_SOURCE) {
            pause_ms(r, started + r->interval_ms - gust_clock_mono_ms());
            continue;
        }
        if (gust_clock_mono_ms() - started >= r->restart_max_ms) {
            backoff = r->restart_min_ms; /* it ran long: this exit is news, not a crash loop */
        }
        exec_host->log(r->inst, GUST_LOG_INFO, "restarting %s in %lld ms", r->cmd.what, (long long)backoff);
        if (pause_ms(r, backoff)) {
            break;
        }
        backoff = backoff * 2 < r->restart_max_ms ? backoff * 2 : r->restart_max_ms;
    }
}

static void reader_wake(void *ud)
{
    struct reader *r = ud;
    uint64_t one = 1;
    if (write(r->wake_fd, &one, sizeof(one)) < 0) {
        /* cannot fail on a fresh eventfd */
    }
}

int exec_reader_start(void *ctx, struct gust_err *err)
{
    struct reader *r = ctx;
    int rc;

    if ((rc = exec_cmd_env(&r->cmd, &r->keys, r->cfg, err)) != 0) {
        return rc;
    }
    if ((r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        return gust_err_set(err, GUST_EIO, "eventfd: %s", strerror(errno));
    }
    struct gust_source_conf sc = {
        .api = exec_host,
        .inst = r->inst,
        .interval_ms = 0, /* one run() that loops: it waits on pipes, not on a schedule */
        .max_inflight = r->max_inflight,
        .run = reader_run,
        .wake = reader_wake,
        .ud = r,
    };
    if ((rc = gust_source_create(&r->runner, &sc, err)) != 0 || (rc = gust_source_start(r->runner, 0, err)) != 0) {
        return rc;
    }
    r->running = 1;
    return 0;
}

void exec_reader_stop(void *ctx)
{
    struct reader *r = ctx;

    if (!r->running) {
        return;
    }
    gust_source_stop(r->runner); /* wakes the thread (and a publish waiting for room), joins */
    r->running = 0;
    /* A moment for the last PubAcks, so the summary is complete in the usual case. */
    uint64_t pending = gust_source_wait(r->runner, 200);
    const struct gust_pub_counts *pc = gust_source_counts(r->runner);
    exec_host->log(r->inst, GUST_LOG_INFO,
                   "stopped: %" PRIu64 " runs, %" PRIu64 " lines published (%" PRIu64 " stored, %" PRIu64
                   " failed, %" PRIu64 " pending), %" PRIu64 " not JSON, %" PRIu64 " too long, %" PRIu64
                   " failed runs (%" PRIu64 " timeouts), %" PRIu64 " could not start",
                   r->runs, r->lines, (uint64_t)atomic_load(&pc->stored), (uint64_t)atomic_load(&pc->failed),
                   pending, r->bad_lines, r->too_long, r->failed_runs, r->timeouts, r->start_failures);
}

void exec_reader_destroy(void *ctx)
{
    struct reader *r = ctx;

    if (!r) {
        return;
    }
    exec_reader_stop(r);
    gust_source_destroy(r->runner);
    if (r->wake_fd >= 0) {
        close(r->wake_fd);
    }
    exec_cmd_free(&r->cmd);
    free(r);
}
