/* Children: spawned with posix_spawn (vfork-like: safe in a threaded process, and exec
 * errors come back as its return value), each in its own process group so a timeout or
 * stop kills what it started too.
 *
 * Descriptor hygiene: our pipe ends are O_CLOEXEC; the child gets only its stdin, stdout
 * and stderr, everything else of gust (sockets, the NATS connection, other instances'
 * pipes) is closed with closefrom. Signal dispositions and mask are reset, because gust
 * ignores SIGPIPE and blocks SIGTERM/SIGINT/SIGHUP in its threads, and exec keeps both. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec.h"

extern char **environ;

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void exec_child_close(struct exec_child *c)
{
    close_fd(&c->in);
    close_fd(&c->out);
    close_fd(&c->err);
}

static int nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int exec_child_spawn(struct exec_child *c, const struct exec_cmd *cmd, const char *const *extra, int pipes,
                     struct gust_err *err)
{
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    char **envp = NULL;
    size_t nextra = 0;
    int rc;

    memset(c, 0, sizeof(*c));
    c->pid = -1;
    c->in = c->out = c->err = -1;
    while (extra && extra[nextra]) {
        nextra++;
    }
    if (!(envp = calloc(cmd->nenv + nextra + 1, sizeof(*envp)))) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    memcpy(envp, cmd->envp, cmd->nenv * sizeof(*envp));
    if (nextra > 0) {
        memcpy(envp + cmd->nenv, extra, nextra * sizeof(*envp));
    }
    if (((pipes & EXEC_PIPE_IN) && pipe2(pin, O_CLOEXEC) != 0) ||
        ((pipes & EXEC_PIPE_OUT) && pipe2(pout, O_CLOEXEC) != 0) || pipe2(perr, O_CLOEXEC) != 0) {
        rc = gust_err_set(err, GUST_EIO, "pipe: %s", strerror(errno));
        goto fail_pipes;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    if (pipes & EXEC_PIPE_IN) {
        posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
    } else {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    }
    if (pipes & EXEC_PIPE_OUT) {
        posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
    } else {
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    }
    posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (cmd->workdir) {
        posix_spawn_file_actions_addchdir_np(&fa, cmd->workdir);
    }
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    /* Without a '/', look the program up in gust's PATH (posix_spawnp reads ours, not envp). */
    if (strchr(cmd->argv[0], '/')) {
        rc = posix_spawn(&c->pid, cmd->argv[0], &fa, &at, cmd->argv, envp);
    } else {
        rc = posix_spawnp(&c->pid, cmd->argv[0], &fa, &at, cmd->argv, envp);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        c->pid = -1;
        if (cmd->workdir) {
            rc = gust_err_set(err, GUST_EIO, "cannot start %s: %s (workdir %s)", cmd->what, strerror(rc),
                          cmd->workdir);
        } else {
            rc = gust_err_set(err, GUST_EIO, "cannot start %s: %s", cmd->what, strerror(rc));
        }
        goto fail_pipes;
    }
    c->started_ms = gust_clock_mono_ms();
    close_fd(&pin[0]);
    close_fd(&pout[1]);
    close_fd(&perr[1]);
    c->in = pin[1];
    c->out = pout[0];
    c->err = perr[0];
    if ((c->in >= 0 && nonblock(c->in) != 0) || (c->out >= 0 && nonblock(c->out) != 0) ||
        nonblock(c->err) != 0) {
        /* cannot happen on a fresh pipe; the reads would block, so do not go on */
        exec_child_kill(c, 0);
        free(envp);
        return gust_err_set(err, GUST_EIO, "fcntl: %s", strerror(errno));
    }
    free(envp);
    return 0;
fail_pipes:
    for (int i = 0; i < 2; i++) {
        close_fd(&pin[i]);
        close_fd(&pout[i]);
        close_fd(&perr[i]);
    }
    free(envp);
    return rc;
}

static void reap(struct exec_child *c)
{
    /* The zombie still holds the pid, so the group id cannot have been reused yet: kill
     * whatever the command left behind in its group, then reap. */
    kill(-c->pid, SIGKILL);
    while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR) {
    }
    c->reaped = 1;
}

int exec_child_exited(struct exec_child *c)
{
    siginfo_t si;

    if (c->reaped || c->pid <= 0) {
        return 1;
    }
    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
        /* ECHILD: someone else reaped it (cannot happen unless SIGCHLD is ignored) */
        c->reaped = 1;
        c->status = 0;
        return 1;
    }
    if (si.si_pid != c->pid) {
        return 0;
    }
    reap(c);
    return 1;
}

void exec_child_kill(struct exec_child *c, int grace_ms)
{
    if (c->pid > 0 && !c->reaped) {
        if (grace_ms > 0 && kill(-c->pid, SIGTERM) == 0) {
            int64_t until = gust_clock_mono_ms() + grace_ms;
            while (!exec_child_exited(c) && gust_clock_mono_ms() < until) {
                usleep(2000);
            }
        }
        if (!c->reaped) {
            reap(c);
        }
    }
    exec_child_close(c);
}

int exec_child_read_err(struct exec_child *c)
{
    char buf[4096];

    while (c->err >= 0) {
        ssize_t r = read(c->err, buf, sizeof(buf));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 1;
        }
        if (r <= 0) {
            close_fd(&c->err);
            return 0;
        }
        for (ssize_t i = 0; i < r; i++) {
            c->tail[c->tail_pos] = buf[i];
            c->tail_pos = (c->tail_pos + 1) % sizeof(c->tail);
        }
        c->tail_len = c->tail_len + (size_t)r > sizeof(c->tail) ? sizeof(c->tail) : c->tail_len + (size_t)r;
    }
    return 0;
}

void exec_child_tail(const struct exec_child *c, char *buf, size_t size)
{
    size_t start = (c->tail_pos + sizeof(c->tail) - c->tail_len) % sizeof(c->tail), o = 0, n = c->tail_len;
    char tmp[sizeof(c->tail)];

    for (size_t i = 0; i < n; i++) {
        tmp[i] = c->tail[(start + i) % sizeof(c->tail)];
    }
    while (n > 0 && (tmp[n - 1] == '\n' || tmp[n - 1] == '\r' || tmp[n - 1] == ' ')) {
        n--;
    }
    /* The end matters most (the last error line): keep what fits of it. */
    size_t from = 0, room = size - 1;
    size_t need = 0;
    for (size_t i = 0; i < n; i++) {
        need += tmp[i] == '\n' ? 3 : 1;
    }
    for (; from < n && need > room; from++) {
        need -= tmp[from] == '\n' ? 3 : 1;
    }
    for (size_t i = from; i < n && o < room; i++) {
        unsigned char ch = (unsigned char)tmp[i];
        if (ch == '\n') {
            if (o + 3 > room) {
                break;
            }
            memcpy(buf + o, " | ", 3);
            o += 3;
        } else {
            buf[o++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
        }
    }
    buf[o] = '\0';
}

void exec_status_text(int status, char *buf, size_t size)
{
    if (WIFEXITED(status)) {
        snprintf(buf, size, "exit %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else {
        snprintf(buf, size, "status 0x%x", status);
    }
}
