#include "embedded.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"

struct gust_nats_child {
    char *bin;
    char *store_dir;
    int port;
    pid_t pid;
    int stopping;
    pthread_t supervisor;
    pthread_mutex_t lock;
};

static int free_loopback_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
        port = ntohs(sa.sin_port);
    }
    close(fd);
    return port;
}

static int port_accepts(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return 0;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int mkdir_p(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                return -1;
            }
            *p = '/';
        }
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static pid_t spawn(struct gust_nats_child *c)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", c->port);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) {
        return pid;
    }
    /* The server must not outlive us, even after kill -9 of the host. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) {
        _exit(1);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Its log goes beside its store, not into ours. */
    char log[4200];
    snprintf(log, sizeof(log), "%s/nats-server.log", c->store_dir);
    execlp(c->bin, c->bin, "-a", "127.0.0.1", "-p", port, "-js", "-sd", c->store_dir, "-l", log, (char *)NULL);
    fprintf(stderr, "gust: cannot run %s: %s\n", c->bin, strerror(errno));
    _exit(127);
}

/* Reaps the child and restarts it (same port, same store) unless we are stopping,
 * so clients reconnect to it as to any restarted server. */
static void *supervise(void *arg)
{
    struct gust_nats_child *c = arg;
    long backoff_ms = 100;
    for (;;) {
        int status;
        pid_t pid = c->pid;
        if (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            continue;
        }
        pthread_mutex_lock(&c->lock);
        int stopping = c->stopping;
        pthread_mutex_unlock(&c->lock);
        if (stopping) {
            return NULL;
        }
        gust_warn("embedded nats-server (pid %d) exited (status %d); restarting in %ld ms", (int)pid,
                  status, backoff_ms);
        sleep_ms(backoff_ms);
        backoff_ms = backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
        pthread_mutex_lock(&c->lock);
        if (c->stopping) {
            pthread_mutex_unlock(&c->lock);
            return NULL;
        }
        c->pid = spawn(c);
        pthread_mutex_unlock(&c->lock);
    }
}

int gust_nats_child_start(const char *server_bin, const char *state_dir, char *url, size_t url_size,
                          struct gust_nats_child **out, struct gust_err *err)
{
    struct gust_nats_child *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&c->lock, NULL);
    c->bin = strdup(server_bin != NULL ? server_bin : "nats-server");
    size_t n = strlen(state_dir) + 16;
    c->store_dir = malloc(n);
    if (c->bin == NULL || c->store_dir == NULL) {
        gust_nats_child_stop(c);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    snprintf(c->store_dir, n, "%s/nats", state_dir);
    if (mkdir_p(c->store_dir) != 0) {
        int rc = gust_err_set(err, GUST_EIO, "cannot create %s: %s", c->store_dir, strerror(errno));
        gust_nats_child_stop(c);
        return rc;
    }
    c->port = free_loopback_port();
    if (c->port < 0) {
        gust_nats_child_stop(c);
        return gust_err_set(err, GUST_EIO, "no free loopback port: %s", strerror(errno));
    }
    c->pid = spawn(c);
    if (c->pid < 0) {
        int rc = gust_err_set(err, GUST_EIO, "fork: %s", strerror(errno));
        gust_nats_child_stop(c);
        return rc;
    }
    /* Wait for the port, giving up after 10 s or if the child died. */
    for (int waited = 0;; waited += 2) {
        if (port_accepts(c->port)) {
            break;
        }
        int status;
        if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
            c->pid = -1;
            gust_nats_child_stop(c);
            return gust_err_set(err, GUST_EIO,
                                "embedded nats-server exited at start (status %d); is nats-server "
                                "installed and %s writable?",
                                status, state_dir);
        }
        if (waited > 10000) {
            gust_nats_child_stop(c);
            return gust_err_set(err, GUST_ETIMEOUT, "embedded nats-server did not listen within 10 s");
        }
        sleep_ms(2);
    }
    if (pthread_create(&c->supervisor, NULL, supervise, c) != 0) {
        gust_nats_child_stop(c);
        return gust_err_set(err, GUST_EIO, "cannot start the supervisor thread");
    }
    snprintf(url, url_size, "nats://127.0.0.1:%d", c->port);
    gust_info("embedded nats-server pid %d on %s, store and log in %s", (int)c->pid, url, c->store_dir);
    *out = c;
    return 0;
}

void gust_nats_child_stop(struct gust_nats_child *c)
{
    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pid_t pid = c->pid;
    int supervised = c->supervisor != 0;
    pthread_mutex_unlock(&c->lock);
    if (pid > 0) {
        kill(pid, SIGTERM);
        if (!supervised) {
            waitpid(pid, NULL, 0);
        } else {
            /* The supervisor reaps it; escalate if it lingers. */
            for (int i = 0; i < 200 && kill(pid, 0) == 0; i++) {
                sleep_ms(10);
                if (i == 199) {
                    kill(pid, SIGKILL);
                }
            }
        }
    }
    if (supervised) {
        pthread_join(c->supervisor, NULL);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->bin);
    free(c->store_dir);
    free(c);
}
