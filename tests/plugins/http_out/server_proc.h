/* Test servers run as child processes: started with a free loopback port that they pick
 * and announce as their first line of output ("port N"), stopped by PID. */
#ifndef GUST_TEST_SERVER_PROC_H
#define GUST_TEST_SERVER_PROC_H

#include <sys/types.h>

struct server_proc {
    pid_t pid;
    int port;
    int out; /* read end of the child's stdout */
};

/* Runs argv (borrowed, NULL-terminated) and waits up to 10 s for its "port N" line.
 * Exits the test with a message when it does not come. */
void server_proc_start(struct server_proc *sp, char *const argv[]);

/* SIGTERM, then waits for the exit. Whatever the child printed after its port line is
 * read into buf (NUL-terminated; may be NULL). Returns the exit status from waitpid. */
int server_proc_stop(struct server_proc *sp, char *buf, size_t size);

/* A loopback port on which nothing listens, for connection-refused tests. It stays
 * reserved until *fd (bound, not listening) is closed. */
int server_proc_dead_port(int *fd);

#endif
