/* Sending a call's reply (reply.h). */
#include "reply.h"

#include <stdio.h>
#include <string.h>

#include "bus_int.h"
#include "nats_msg.h"
#include "gust/err.h"

int gust_reply_to_ok(const char *s)
{
    size_t n = strlen(s), plen = sizeof(GUST_REPLY_INBOX_PREFIX) - 1;
    if (n <= plen || n > GUST_REPLY_TO_MAX || memcmp(s, GUST_REPLY_INBOX_PREFIX, plen) != 0) {
        return 0;
    }
    size_t token = 0;
    for (size_t i = plen; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.') {
            if (token == 0) {
                return 0;
            }
            token = 0;
        } else if (c == '*' || c == '>' || c <= ' ' || c >= 0x7f) {
            return 0;
        } else {
            token++;
        }
    }
    return token > 0;
}

int gust_bus_reply(struct gust_bus *bus, const char *inbox, int status, const void *data, size_t len, char *why,
                   size_t why_size)
{
    if (!gust_reply_to_ok(inbox)) {
        snprintf(why, why_size, "not an inbox: %.*s", 80, inbox);
        return GUST_EINVAL;
    }
    char code[16];
    snprintf(code, sizeof(code), "%d", status);
    const struct gust_header status_header = {GUST_REPLY_STATUS_HEADER, code};
    /* The connection that writes at once: a request waits for this. */
    natsStatus s = gust_nats_publish(gust_bus__conn_now(bus), inbox, NULL, data, len, NULL, &status_header, 1);
    if (s != NATS_OK) {
        snprintf(why, why_size, "%s", gust_bus__reason(s));
        return s == NATS_MAX_PAYLOAD ? GUST_EINVAL : GUST_EIO;
    }
    return 0;
}
