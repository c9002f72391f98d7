/* gust-bench-coldstart PORT CMD [ARGS...]: starts CMD and measures the time until
 * GET /healthz on 127.0.0.1:PORT answers 200, polling every 100 us. Prints JSON
 * {"cold_start_ms": ..., "pid": ...} and leaves the process running. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int healthy(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = 0;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        char buf[64] = "";
        if (write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1 && read(fd, buf, sizeof(buf) - 1) > 12) {
            ok = strncmp(buf + 9, "200", 3) == 0;
        }
    }
    close(fd);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gust-bench-coldstart PORT CMD [ARGS...]\n");
        return 2;
    }
    int port = atoi(argv[1]);
    double start = mono_ms();
    pid_t pid = fork();
    if (pid == 0) {
        /* Our stdout is usually a pipe read to its end: keep the child off it. */
        dup2(2, 1);
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    while (!healthy(port)) {
        if (mono_ms() - start > 30000) {
            fprintf(stderr, "gust-bench-coldstart: no /healthz 200 within 30 s\n");
            return 1;
        }
        usleep(100);
    }
    printf("{\"cold_start_ms\":%.2f,\"pid\":%d}\n", mono_ms() - start, (int)pid);
    return 0;
}
