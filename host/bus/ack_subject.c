#include "ack_subject.h"

#include <string.h>

#define PREFIX "$JS.ACK."
#define MAX_TOKENS 12

/* A token of decimal digits that fits 63 bits (as nats.c reads them), or -1. */
static int64_t number(const char *s, size_t len)
{
    if (len == 0 || len > 19) {
        return -1;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v > INT64_MAX ? -1 : (int64_t)v;
}

int gust_ack_subject_parse(const char *reply, struct gust_ack_meta *m)
{
    if (reply == NULL || strncmp(reply, PREFIX, sizeof(PREFIX) - 1) != 0) {
        return -1;
    }
    const char *start[MAX_TOKENS];
    size_t len[MAX_TOKENS];
    size_t nt = 0;
    const char *p = reply + sizeof(PREFIX) - 1;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t l = dot != NULL ? (size_t)(dot - p) : strlen(p);
        if (nt < MAX_TOKENS) {
            start[nt] = p;
            len[nt] = l;
        }
        nt++;
        if (dot == NULL) {
            break;
        }
        p = dot + 1;
    }
    /* 7 tokens: the first form; 9 or more: the second, whose first two are the domain
     * and the account's hash. */
    size_t base = nt == 7 ? 0 : nt >= 9 ? 2 : SIZE_MAX;
    if (base == SIZE_MAX) {
        return -1;
    }
    int64_t v[5];
    for (size_t i = 0; i < 5; i++) {
        v[i] = number(start[base + 2 + i], len[base + 2 + i]);
        if (v[i] < 0) {
            return -1;
        }
    }
    m->delivered = (uint64_t)v[0];
    m->stream_seq = (uint64_t)v[1];
    m->consumer_seq = (uint64_t)v[2];
    m->stored_ns = v[3];
    m->pending = (uint64_t)v[4];
    return 0;
}
