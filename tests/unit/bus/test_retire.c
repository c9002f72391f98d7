/* Retiring subscriptions while messages for them stream in (host/bus/retire.c), on a real
 * nats-server this test starts on a free loopback port.
 *
 * One connection floods a subject; another subscribes to it, takes a message, and
 * retires the subscription, over and over. With nats.c 3.4.1, destroying the
 * subscription at once instead lets the reader thread lock it after it was freed now
 * and then (a crash under AddressSanitizer within a few thousand rounds here); retired,
 * every round must end cleanly and the connection must still deliver. */
#include <arpa/inet.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../host/bus/retire.h"
#include "../../check.h"

#define ROUNDS 3000

static atomic_int stop;

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
        port = ntohs(a.sin_port);
    }
    close(fd);
    return port;
}

static pid_t start_server(int port)
{
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test, even a crashed one */
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr); /* its log: connections come and go */
        execlp("nats-server", "nats-server", "-a", "127.0.0.1", "-p", p, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static natsStatus connect_to(natsConnection **nc, const char *url)
{
    natsStatus s = NATS_NO_SERVER;
    for (int i = 0; i < 100 && s != NATS_OK; i++) { /* up to 10 s for the server to listen */
        s = natsConnection_ConnectTo(nc, url);
        if (s != NATS_OK) {
            usleep(100000);
        }
    }
    return s;
}

static void *flood(void *arg)
{
    natsConnection *nc = arg;
    while (!atomic_load(&stop)) {
        for (int i = 0; i < 256; i++) {
            natsConnection_PublishString(nc, "race.x", "0123456789abcdef");
        }
        natsConnection_Flush(nc);
    }
    return NULL;
}

int main(void)
{
    int port = free_port();
    CHECK(port > 0);
    pid_t server = start_server(port);
    char url[64];
    snprintf(url, sizeof(url), "nats://127.0.0.1:%d", port);
    natsConnection *pub = NULL, *nc = NULL;
    CHECK(connect_to(&pub, url) == NATS_OK, "nats-server on %s", url);
    CHECK(connect_to(&nc, url) == NATS_OK);
    if (check_failures > 0) {
        kill(server, SIGTERM);
        return check_result("retire");
    }
    pthread_t flooder;
    pthread_create(&flooder, NULL, flood, pub);

    int delivered = 0;
    for (int round = 0; round < ROUNDS; round++) {
        natsSubscription *sub = NULL;
        natsMsg *m = NULL;
        if (natsConnection_SubscribeSync(&sub, nc, "race.x") == NATS_OK &&
            natsSubscription_NextMsg(&m, sub, 2000) == NATS_OK) {
            delivered++;
        }
        natsMsg_Destroy(m);
        gust_retire_sub(nc, sub); /* messages keep coming for it meanwhile */
    }
    CHECK_INT(delivered, ROUNDS, "every round got a message");

    /* What was retired stays valid until the connection is closed, then goes. */
    natsSubscription *last = NULL;
    natsMsg *m = NULL;
    CHECK(natsConnection_SubscribeSync(&last, nc, "race.x") == NATS_OK);
    CHECK(natsSubscription_NextMsg(&m, last, 2000) == NATS_OK, "the connection still delivers");
    natsMsg_Destroy(m);
    atomic_store(&stop, 1);
    pthread_join(flooder, NULL);
    gust_retire_sub(nc, last);
    natsConnection_Close(nc);
    gust_retire_closed(nc);
    natsConnection_Destroy(nc);
    natsConnection_Destroy(pub);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    nats_Close();
    return check_result("retire");
}
