/* W3C Trace Context: parsing and writing traceparent, new ids. */
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>

#include "gust/sdk.h"
#include "trace_int.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1; /* upper case is invalid in traceparent */
}

static int unhex(const char *s, uint8_t *out, size_t n)
{
    uint8_t any = 0;
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
        any |= out[i];
    }
    return any ? 0 : -1;
}

int gust_trace_parse(const char *s, size_t len, struct gust_trace_ctx *out)
{
    while (len > 0 && (s[0] == ' ' || s[0] == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) {
        len--;
    }
    if (len < GUST_TRACEPARENT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-') {
        return -1;
    }
    if (hexval(s[0]) < 0 || hexval(s[1]) < 0 || (s[0] == 'f' && s[1] == 'f')) {
        return -1;
    }
    int v00 = s[0] == '0' && s[1] == '0';
    /* Version 00 is exactly 55 characters; a later one may go on after a '-'. */
    if ((v00 && len != GUST_TRACEPARENT_LEN) || (!v00 && len > GUST_TRACEPARENT_LEN && s[55] != '-')) {
        return -1;
    }
    uint8_t flags;
    if (unhex(s + 3, out->trace_id, 16) != 0 || unhex(s + 36, out->span_id, 8) != 0 ||
        hexval(s[53]) < 0 || hexval(s[54]) < 0) {
        return -1;
    }
    flags = (uint8_t)(hexval(s[53]) << 4 | hexval(s[54]));
    out->flags = flags & 1;
    return 0;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
}

void gust_trace_hex(const uint8_t *b, size_t n, char *out)
{
    hex(b, n, out);
    out[2 * n] = '\0';
}

void gust_trace_format(const struct gust_trace_ctx *c, char out[GUST_TRACEPARENT_LEN + 1])
{
    memcpy(out, "00-", 3);
    hex(c->trace_id, 16, out + 3);
    out[35] = '-';
    hex(c->span_id, 8, out + 36);
    out[52] = '-';
    out[53] = '0';
    out[54] = (c->flags & 1) ? '1' : '0';
    out[55] = '\0';
}

/* xorshift128+ per thread, seeded from the kernel: ids need to be unique, not secret. */
static _Thread_local uint64_t rng[2];

static uint64_t next_random(void)
{
    if (rng[0] == 0 && rng[1] == 0) {
        if (getrandom(rng, sizeof(rng), 0) != (ssize_t)sizeof(rng)) {
            uint64_t now = gust_clock_mono_ns();
            rng[0] = now * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&now;
            rng[1] = (now >> 30) ^ 0xda942042e4dd58b5ull;
        }
        rng[0] |= 1;
    }
    uint64_t x = rng[0], y = rng[1];
    rng[0] = y;
    x ^= x << 23;
    rng[1] = x ^ y ^ (x >> 17) ^ (y >> 26);
    return rng[1] + y;
}

static void random_bytes(uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = next_random();
        memcpy(out + i, &r, n - i < 8 ? n - i : 8);
    }
}

void gust_trace_new_span_id(uint8_t out[8])
{
    do {
        random_bytes(out, 8);
    } while (memcmp(out, "\0\0\0\0\0\0\0\0", 8) == 0);
}

void gust_trace_child(const struct gust_trace_ctx *parent, struct gust_trace_ctx *out)
{
    memcpy(out->trace_id, parent->trace_id, 16);
    out->flags = parent->flags;
    gust_trace_new_span_id(out->span_id);
}

int gust_trace_start_root(struct gust_trace_ctx *out)
{
    if (!gust_trace_exporting()) {
        return 0;
    }
    double ratio = gust_trace_sample_ratio();
    if (ratio < 1.0 && (double)(next_random() >> 11) * (1.0 / 9007199254740992.0) >= ratio) {
        return 0;
    }
    random_bytes(out->trace_id, 16);
    out->trace_id[0] |= out->trace_id[0] == 0 ? 1 : 0;
    gust_trace_new_span_id(out->span_id);
    out->flags = 1;
    return 1;
}

