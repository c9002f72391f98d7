#include "nats_msg.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

/* The constructor nats.c uses for a message read off the wire, exported by 3.x (3.0 to
 * 3.7 have this signature) and not declared: given the header block as the wire carries
 * it, a publish sends that block as it is. natsMsgHeader_Set/Add instead build a hash
 * map per message (its buckets, each key, each value allocated, then walked to encode
 * it and freed): most of a source's cost per message on the publish path. */
extern natsStatus natsMsg_create(natsMsg **msg, const char *subject, int subject_len, const char *reply,
                                 int reply_len, const char *buf, int buf_len, int hdr_len) __attribute__((weak));

#define HEADER_LINE "NATS/1.0\r\n"
#define MSG_ID_KEY "Nats-Msg-Id"

static size_t header_len(const char *key, const char *value)
{
    return strlen(key) + 2 + strlen(value) + 2;
}

/* "key: value\r\n", a CR or LF in the value turned into a space (as nats.c encodes it). */
static char *put_header(char *p, const char *key, const char *value)
{
    size_t kl = strlen(key);
    memcpy(p, key, kl);
    p += kl;
    *p++ = ':';
    *p++ = ' ';
    for (const char *v = value; *v != '\0'; v++) {
        *p++ = *v == '\r' || *v == '\n' ? ' ' : *v;
    }
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* The message with its header block written here, in one allocation. */
static natsStatus build_encoded(natsMsg **out, const char *subject, const char *reply, const void *data,
                                size_t len, const char *msg_id, const struct gust_header *headers,
                                size_t nheaders)
{
    size_t hl = sizeof(HEADER_LINE) - 1 + 2;
    if (msg_id != NULL) {
        hl += header_len(MSG_ID_KEY, msg_id);
    }
    for (size_t i = 0; i < nheaders; i++) {
        if (headers[i].name[0] == '\0') {
            return NATS_INVALID_ARG; /* as natsMsgHeader_Add says of it */
        }
        if (headers[i].value[0] != '\0') {
            hl += header_len(headers[i].name, headers[i].value);
        }
    }
    if (hl + len > INT_MAX) {
        return NATS_MAX_PAYLOAD;
    }
    char stack[2048];
    char *buf = hl + len <= sizeof(stack) ? stack : malloc(hl + len);
    if (buf == NULL) {
        return NATS_NO_MEMORY;
    }
    char *p = buf;
    memcpy(p, HEADER_LINE, sizeof(HEADER_LINE) - 1);
    p += sizeof(HEADER_LINE) - 1;
    if (msg_id != NULL) {
        p = put_header(p, MSG_ID_KEY, msg_id);
    }
    for (size_t i = 0; i < nheaders; i++) {
        if (headers[i].value[0] != '\0') {
            p = put_header(p, headers[i].name, headers[i].value);
        }
    }
    *p++ = '\r';
    *p++ = '\n';
    if (len > 0) {
        memcpy(p, data, len);
    }
    natsStatus s = natsMsg_create(out, subject, (int)strlen(subject), reply, reply != NULL ? (int)strlen(reply) : 0,
                                  buf, (int)(hl + len), (int)hl);
    if (buf != stack) {
        free(buf);
    }
    return s;
}

natsStatus gust_nats_msg_build(natsMsg **out, const char *subject, const char *reply, const void *data, size_t len,
                               const char *msg_id, const struct gust_header *headers, size_t nheaders)
{
    *out = NULL;
    if (subject == NULL || subject[0] == '\0' || (reply != NULL && reply[0] == '\0')) {
        return NATS_INVALID_ARG; /* as natsMsg_Create says of them */
    }
    if (natsMsg_create != NULL) {
        return build_encoded(out, subject, reply, data, len, msg_id, headers, nheaders);
    }
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, subject, reply, data, (int)len);
    if (s == NATS_OK && msg_id != NULL) {
        s = natsMsgHeader_Set(m, MSG_ID_KEY, msg_id);
    }
    for (size_t i = 0; s == NATS_OK && i < nheaders; i++) {
        if (headers[i].value[0] != '\0') {
            s = natsMsgHeader_Add(m, headers[i].name, headers[i].value);
        }
    }
    if (s != NATS_OK) {
        gust_nats_msg_free(m);
        return s;
    }
    *out = m;
    return NATS_OK;
}

natsStatus gust_nats_publish(natsConnection *nc, const char *subject, const char *reply, const void *data,
                             size_t len, const char *msg_id, const struct gust_header *headers,
                             size_t nheaders)
{
    /* nats.c writes headers only for a natsMsg; without any, the plain call copies less. */
    if (msg_id == NULL && nheaders == 0) {
        return natsConnection_PublishRequest(nc, subject, reply, data, (int)len);
    }
    /* nats.c 3.4.1 has no public call that makes a natsMsg over the caller's memory
     * (natsMsg_init does, for its own stack messages, but needs the private
     * sizeof(natsMsg)), so a message with headers (a unit's emit always has its
     * Nats-Msg-Id) is copied here. It lives only for this call: PublishMsg writes it into
     * the connection's buffer (the reconnect buffer included), what it was made from (an
     * emit in its unit's arena) may change once this returns, and the PubAck is matched
     * by the reply subject. */
    natsMsg *m = NULL;
    natsStatus s = gust_nats_msg_build(&m, subject, reply, data, len, msg_id, headers, nheaders);
    if (s == NATS_OK) {
        s = natsConnection_PublishMsg(nc, m);
        gust_nats_msg_free(m);
    }
    return s;
}
