#include "nats_msg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* natsMsg_Destroy hands every message to nats.c's garbage-collector thread, which
 * frees it there: a wake-up of that thread per loop turn and, worse, free() of the
 * caller's allocations from another thread, contending for malloc's arena lock (two
 * futex calls per request on ingest, most of the gap to the hand-written client this
 * replaced). nats.c 3.4.1 exports the function that frees a message at once without
 * declaring it; a weak reference keeps gust correct with a nats.c that lacks it. */
extern void natsMsg_free(void *msg) __attribute__((weak));

/* nats.c 3.4.1 also exports, undeclared, the constructor of a message whose headers
 * come already written (what it uses for a message it reads): buf holds hdr_len bytes
 * of "NATS/1.0\r\n...\r\n\r\n" then the payload. Published, such a message is sent
 * as it is. Building a message with natsMsgHeader_Set instead costs a hash table, a
 * copy of each name and value and an encoding into a scratch buffer, every publish: a
 * detect unit storing 100 000 alerts with their ids spends more there than anywhere
 * else of its own. */
extern natsStatus natsMsg_create(natsMsg **msg, const char *subject, int subj_len, const char *reply,
                                 int reply_len, const char *buf, int buf_len, int hdr_len)
    __attribute__((weak));

void gust_nats_msg_free(natsMsg *m)
{
    if (natsMsg_free != NULL) {
        natsMsg_free(m);
    } else {
        natsMsg_Destroy(m);
    }
}

static const char HDR_LINE[] = "NATS/1.0\r\n";

/* Appends "name: value\r\n" at *at (room was counted by the caller). CR and LF of the
 * value become spaces, as nats.c's own encoder makes them. */
static void put_header(char *buf, size_t *at, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    memcpy(buf + *at, name, nl);
    memcpy(buf + *at + nl, ": ", 2);
    char *v = buf + *at + nl + 2;
    for (size_t i = 0; i < vl; i++) {
        v[i] = value[i] == '\r' || value[i] == '\n' ? ' ' : value[i];
    }
    memcpy(v + vl, "\r\n", 2);
    *at += nl + 2 + vl + 2;
}

/* The message with its headers written here: one allocation. NATS_ERR when it cannot
 * be built this way (the caller builds it with nats.c's header calls). */
static natsStatus publish_encoded(natsConnection *nc, const char *subject, const char *reply,
                                  const void *data, size_t len, const char *msg_id,
                                  const struct gust_header *headers, size_t nheaders)
{
    size_t hdr = sizeof(HDR_LINE) - 1 + 2, written = 0;
    if (msg_id != NULL) {
        hdr += strlen("Nats-Msg-Id") + 2 + strlen(msg_id) + 2;
        written++;
    }
    for (size_t i = 0; i < nheaders; i++) {
        if (headers[i].value[0] != '\0' && headers[i].name[0] == '\0') {
            return NATS_INVALID_ARG; /* as natsMsgHeader_Add says */
        }
        if (headers[i].value[0] != '\0') {
            hdr += strlen(headers[i].name) + 2 + strlen(headers[i].value) + 2;
            written++;
        }
    }
    if (written == 0) { /* a message without headers, as nats.c sends one */
        return natsConnection_PublishRequest(nc, subject, reply, data, (int)len);
    }
    if (hdr + len > (size_t)INT32_MAX) {
        return NATS_ERR;
    }
    char stack[1024];
    char *buf = hdr + len <= sizeof(stack) ? stack : malloc(hdr + len);
    if (buf == NULL) {
        return NATS_NO_MEMORY;
    }
    size_t at = sizeof(HDR_LINE) - 1;
    memcpy(buf, HDR_LINE, at);
    if (msg_id != NULL) {
        put_header(buf, &at, "Nats-Msg-Id", msg_id);
    }
    for (size_t i = 0; i < nheaders; i++) {
        if (headers[i].value[0] != '\0') {
            put_header(buf, &at, headers[i].name, headers[i].value);
        }
    }
    memcpy(buf + at, "\r\n", 2);
    at += 2;
    if (len > 0) {
        memcpy(buf + at, data, len);
    }
    natsMsg *m = NULL;
    natsStatus s = natsMsg_create(&m, subject, (int)strlen(subject), reply,
                                  reply != NULL ? (int)strlen(reply) : 0, buf, (int)(at + len), (int)at);
    if (buf != stack) {
        free(buf);
    }
    if (s == NATS_OK) {
        s = natsConnection_PublishMsg(nc, m);
        gust_nats_msg_free(m);
    }
    return s;
}

natsStatus gust_nats_publish(natsConnection *nc, const char *subject, const char *reply, const void *data,
                             size_t len, const char *msg_id, const struct gust_header *headers,
                             size_t nheaders)
{
    /* nats.c writes headers only for a natsMsg; without any, the plain call copies less. */
    if (msg_id == NULL && nheaders == 0) {
        return natsConnection_PublishRequest(nc, subject, reply, data, (int)len);
    }
    if (natsMsg_create != NULL && natsMsg_free != NULL) {
        return publish_encoded(nc, subject, reply, data, len, msg_id, headers, nheaders);
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
