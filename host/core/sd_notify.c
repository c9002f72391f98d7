#include "sd_notify.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gust/sdk.h"

void gust_sd_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || (path[0] != '/' && path[0] != '@')) {
        return;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len >= sizeof(sa.sun_path)) {
        return;
    }
    memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@') {
        sa.sun_path[0] = '\0'; /* the abstract namespace */
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return;
    }
    socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    (void)!sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, sl);
    close(fd);
}

void gust_sd_notify_reloading(void)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)(gust_clock_mono_ns() / 1000u));
    gust_sd_notify(msg);
}
