/* Child-process test servers: see server_proc.h. */
#define _GNU_SOURCE
#include "server_proc.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void fatal(const char *what, const char *name)
{
    fprintf(stderr, "server_proc: %s: %s\n", name, what);
    exit(1);
}

/* Reads into buf[*len..size) until a newline arrives or timeout_ms passes; 0 when a
 * line is there. */
static int read_line(int fd, char *buf, size_t size, size_t *len, int timeout_ms)
{
    while (!memchr(buf, '\n', *len)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (*len + 1 >= size || poll(&p, 1, timeout_ms) <= 0) {
            return -1;
        }
        ssize_t n = read(fd, buf + *len, size - 1 - *len);
        if (n <= 0) {
            return -1;
        }
        *len += (size_t)n;
        buf[*len] = '\0';
    }
    return 0;
}

void server_proc_start(struct server_proc *sp, char *const argv[])
{
    posix_spawn_file_actions_t fa;
    char line[128] = "";
    size_t len = 0;
    int pipefd[2];

    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        fatal("pipe failed", argv[0]);
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    if (posix_spawnp(&sp->pid, argv[0], &fa, NULL, argv, environ) != 0) {
        fatal("cannot run it", argv[0]);
    }
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    sp->out = pipefd[0];
    if (read_line(sp->out, line, sizeof(line), &len, 10000) != 0 ||
        sscanf(line, "port %d", &sp->port) != 1) {
        kill(sp->pid, SIGKILL);
        waitpid(sp->pid, NULL, 0);
        fatal("no \"port N\" line within 10 s", argv[0]);
    }
}

int server_proc_stop(struct server_proc *sp, char *buf, size_t size)
{
    int status = 0;
    size_t len = 0;

    kill(sp->pid, SIGTERM);
    if (buf) {
        buf[0] = '\0';
        while (len + 1 < size) {
            ssize_t n = read(sp->out, buf + len, size - 1 - len);
            if (n <= 0) {
                break;
            }
            len += (size_t)n;
            buf[len] = '\0';
        }
    }
    waitpid(sp->pid, &status, 0);
    close(sp->out);
    return status;
}

int server_proc_dead_port(int *fd_out)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    /* Bound but never listening: connecting gets a RST, and no other test can take the
     * port while it stays bound. */
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        fatal("cannot bind", "dead port");
    }
    *fd_out = fd;
    return ntohs(sa.sin_port);
}
