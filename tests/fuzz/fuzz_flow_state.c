/* libFuzzer: the flow state store's envelopes (host/unit/flow_state.c, included for its
 * statics). The input is two texts split at the first NUL. Each that parses as an
 * envelope is written back and must parse to the same value, expiry and ranges; two
 * range sets merged (cut at a floor from the input) must come out ascending, disjoint,
 * above the floor, and cover exactly their union above it. The bus calls the file makes
 * are stubbed: nothing here reaches them. */
#include "../../host/unit/flow_state.c"

#include <assert.h>

int gust_kv_open(struct gust_bus *bus, const char *bucket, int replicas, int64_t wait_ms, struct gust_kv **out,
                 char *why, size_t why_size)
{
    (void)bus, (void)bucket, (void)replicas, (void)wait_ms, (void)out;
    snprintf(why, why_size, "stub");
    return GUST_EIO;
}

int gust_kv_open_existing(struct gust_bus *bus, const char *bucket, int64_t wait_ms, struct gust_kv **out, char *why,
                          size_t why_size)
{
    return gust_kv_open(bus, bucket, 1, wait_ms, out, why, why_size);
}

void gust_kv_close(struct gust_kv *kv)
{
    (void)kv;
}

int gust_kv_read(struct gust_kv *kv, const char *key, char **value, size_t *len, uint64_t *rev, char *why,
                 size_t why_size)
{
    (void)kv, (void)key, (void)value, (void)len, (void)rev, (void)why, (void)why_size;
    return GUST_EIO;
}

size_t gust_kv_write_all(struct gust_kv *kv, struct gust_kv_write *w, size_t n, int64_t wait_ms)
{
    (void)kv, (void)w, (void)wait_ms;
    return n;
}

int gust_kv_each(struct gust_kv *kv, const char *keys,
                 void (*fn)(void *ud, const char *key, const char *value, size_t len, uint64_t rev), void *ud,
                 char *why, size_t why_size)
{
    (void)kv, (void)keys, (void)fn, (void)ud;
    snprintf(why, why_size, "stub");
    return GUST_EIO;
}

void gust_log(int level, const char *fmt, ...)
{
    (void)level, (void)fmt;
}

uint64_t gust_durable_ack_floor(struct gust_bus *bus, const char *stream, const char *durable)
{
    (void)bus, (void)stream, (void)durable;
    return 0;
}

static int in_ranges(const uint64_t *r, size_t n, uint64_t x)
{
    for (size_t i = 0; i < n; i++) {
        if (x >= r[2 * i] && x <= r[2 * i + 1]) {
            return 1;
        }
    }
    return 0;
}

/* Parses, writes back, parses again: the same. Returns 1 with *out kept when it is an
 * envelope. */
static int round_trip(const char *text, size_t len, struct gust_state_value *out)
{
    char why[160];
    *out = (struct gust_state_value){0};
    if (parse_envelope(text, len, out, why, sizeof(why)) != 0) {
        assert(out->json == NULL && out->applied == NULL);
        return 0;
    }
    struct gust_state_write w = {.json = out->json, .len = out->len, .expires_ms = out->expires_ms};
    struct gust_buf b = {0};
    assert(write_envelope(&b, &w, out->applied, out->napplied) == 0);
    struct gust_state_value again = {0};
    assert(parse_envelope(b.data, b.len, &again, why, sizeof(why)) == 0);
    assert((again.json == NULL) == (out->json == NULL));
    assert(out->json == NULL || (again.len == out->len && memcmp(again.json, out->json, out->len) == 0));
    assert(again.expires_ms == (out->json != NULL ? out->expires_ms : 0));
    assert(again.napplied == out->napplied);
    assert(out->napplied == 0 || memcmp(again.applied, out->applied, 2 * out->napplied * sizeof(uint64_t)) == 0);
    free(again.json);
    free(again.applied);
    gust_buf_free(&b);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t la = nul != NULL ? (size_t)(nul - text) : size;
    const char *second = nul != NULL ? nul + 1 : text + size;
    size_t lb = size - la - (nul != NULL);
    struct gust_state_value a, b;
    int ok_a = round_trip(text, la, &a), ok_b = round_trip(second, lb, &b);
    if (ok_a && ok_b) {
        uint64_t floor = a.napplied > 0 ? a.applied[0] + (size & 7) : size;
        uint64_t *out = malloc((2 * (a.napplied + b.napplied) + 2) * sizeof(*out));
        assert(out != NULL);
        size_t n = merge_ranges(a.applied, a.napplied, b.applied, b.napplied, floor, out);
        for (size_t i = 0; i < n; i++) {
            assert(out[2 * i] <= out[2 * i + 1] && out[2 * i] > floor);
            assert(i == 0 || out[2 * i] > out[2 * i - 1] + 1); /* disjoint, not adjacent */
        }
        /* Every bound of the inputs (and its neighbours) is in the merge exactly when it
         * is in an input and above the floor. */
        const struct gust_state_value *sets[] = {&a, &b};
        for (size_t s = 0; s < 2; s++) {
            for (size_t i = 0; i < 2 * sets[s]->napplied; i++) {
                for (int d = -1; d <= 1; d++) {
                    uint64_t x = sets[s]->applied[i] + (uint64_t)(int64_t)d;
                    int want = x > floor && (in_ranges(a.applied, a.napplied, x) || in_ranges(b.applied, b.napplied, x));
                    assert(in_ranges(out, n, x) == want);
                }
            }
        }
        free(out);
    }
    free(a.json);
    free(a.applied);
    free(b.json);
    free(b.applied);
    return 0;
}
