#include "nats_msg.h"

/* natsMsg_Destroy hands every message to nats.c's garbage-collector thread, which
 * frees it there: a wake-up of that thread per loop turn and, worse, free() of the
 * caller's allocations from another thread, contending for malloc's arena lock (two
 * futex calls per request on ingest, most of the gap to the hand-written client this
 * replaced). nats.c 3.4.1 exports the function that frees a message at once without
 * declaring it; a weak reference keeps gust correct with a nats.c that lacks it. */
extern void natsMsg_free(void *msg) __attribute__((weak));

void gust_nats_msg_free(natsMsg *m)
{
    if (natsMsg_free != NULL) {
        natsMsg_free(m);
    } else {
        natsMsg_Destroy(m);
    }
}

natsStatus gust_nats_publish(natsConnection *nc, const char *subject, const char *reply, const void *data,
                             size_t len, const char *msg_id, const struct gust_header *headers,
                             size_t nheaders)
{
    /* nats.c writes headers only for a natsMsg; without any, the plain call copies less. */
    if (msg_id == NULL && nheaders == 0) {
        return natsConnection_PublishRequest(nc, subject, reply, data, (int)len);
    }
    /* The one copy of the payload this side of the socket buffer, which nats.c 3.4.1
     * cannot skip when a message has headers (a consumer core's emit always has its
     * Nats-Msg-Id): natsMsg_Create copies data into the message it allocates, and no
     * public call makes a natsMsg over the caller's memory. natsMsg_init does, for the
     * library's own stack messages, but it is not declared and needs sizeof(natsMsg),
     * which is private and changed between releases. The message lives only for this
     * call (PublishMsg writes it into the connection's buffer, the reconnect buffer
     * included): what it was made from, an emit in its unit's arena, may change as soon
     * as this returns, and the PubAck is matched by the reply subject, not by it. */
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, subject, reply, data, (int)len);
    if (s == NATS_OK && msg_id != NULL) {
        s = natsMsgHeader_Set(m, "Nats-Msg-Id", msg_id);
    }
    for (size_t i = 0; s == NATS_OK && i < nheaders; i++) {
        if (headers[i].value[0] != '\0') {
            s = natsMsgHeader_Add(m, headers[i].name, headers[i].value);
        }
    }
    if (s == NATS_OK) {
        s = natsConnection_PublishMsg(nc, m);
    }
    if (m != NULL) {
        gust_nats_msg_free(m);
    }
    return s;
}
