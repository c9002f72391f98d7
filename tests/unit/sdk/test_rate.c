/* Unit tests of libgust-sdk's rate limiter: parsing "N/s|m|h", the token bucket (burst,
 * refill, the wait it announces, debt for a take above the burst), and the keyed limiter
 * (one bucket per key, LRU bound). Time is passed in, so nothing here sleeps. */
#include <stdio.h>
#include <string.h>

#include "../../check.h"

#include "gust/sdk.h"


static void test_parse(void)
{
    double r = 0;
    CHECK(gust_rate_parse("200/s", &r) == 0 && r == 200, "200/s: %g", r);
    CHECK(gust_rate_parse("120/m", &r) == 0 && r == 2, "120/m: %g", r);
    CHECK(gust_rate_parse("7200/h", &r) == 0 && r == 2, "7200/h: %g", r);
    CHECK(gust_rate_parse("2.5/s", &r) == 0 && r == 2.5, "2.5/s: %g", r);
    const char *bad[] = {"", "200", "/s", "0/s", "-1/s", "200/d", "200/ s", "200/sec", "x/s", " 1/s", "1e99/s"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(gust_rate_parse(bad[i], &r) == -1, "\"%s\" refused", bad[i]);
    }
}

static void test_bucket(void)
{
    struct gust_bucket b;
    int taken = 0;

    gust_bucket_init(&b, 200, 200, 1000);
    while (gust_bucket_take(&b, 1, 1000) == 0) {
        taken++;
    }
    CHECK(taken == 200, "a full bucket gives its burst at once: %d", taken);
    int64_t w = gust_bucket_take(&b, 1, 1000);
    CHECK(w == 5 || w == 6, "then one token every 5 ms: wait %lld", (long long)w);
    CHECK(gust_bucket_take(&b, 1, 1005) == 0, "there after 5 ms");
    /* Over 6 s at 200/s: 1200 tokens, whoever asks how often. */
    taken = 0;
    for (int64_t t = 1005; t <= 7005; t++) {
        while (gust_bucket_take(&b, 1, t) == 0) {
            taken++;
        }
    }
    CHECK(taken >= 1199 && taken <= 1201, "1200 in 6 s: %d", taken);
    /* Idle: it fills up to the burst, no more. */
    taken = 0;
    while (gust_bucket_take(&b, 1, 100000) == 0) {
        taken++;
    }
    CHECK(taken == 200, "refilled to the burst after idling: %d", taken);

    gust_bucket_init(&b, 10.0 / 60, 0, 0);
    CHECK(b.burst == 1, "a burst under one token is one");
    CHECK(gust_bucket_take(&b, 1, 0) == 0, "the first of 10/m at once");
    w = gust_bucket_take(&b, 1, 0);
    CHECK(w >= 5999 && w <= 6001, "the next 6 s later: %lld", (long long)w);

    gust_bucket_init(&b, 100, 10, 0);
    CHECK(gust_bucket_take(&b, 50, 0) == 0, "a take above the burst from a full bucket");
    w = gust_bucket_take(&b, 1, 0);
    CHECK(w >= 410 && w <= 412, "leaves it in debt: 41 tokens at 100/s: %lld", (long long)w);
}

static void test_limiter(void)
{
    struct gust_limiter *l = NULL;
    CHECK(gust_limiter_create(&l, 0, 1, 10) == GUST_EINVAL && l == NULL, "rate 0 refused");
    CHECK(gust_limiter_create(&l, 1, 2, 3) == 0, "created");
    CHECK(gust_limiter_take(l, "a", 1, 1, 0) == 0 && gust_limiter_take(l, "a", 1, 1, 0) == 0, "a: its burst");
    CHECK(gust_limiter_take(l, "a", 1, 1, 0) > 0, "a: empty");
    CHECK(gust_limiter_take(l, "b", 1, 1, 0) == 0, "b has its own bucket");
    CHECK(gust_limiter_take(l, "ab", 2, 1, 0) == 0 && gust_limiter_keys(l) == 3, "three keys");
    CHECK(gust_limiter_take(l, "a", 1, 1, 0) > 0, "a still empty (used last but one)");
    /* A fourth key pushes out the one used longest ago: b. */
    CHECK(gust_limiter_take(l, "c", 1, 1, 0) == 0 && gust_limiter_keys(l) == 3, "bounded at 3 keys");
    CHECK(gust_limiter_take(l, "a", 1, 1, 0) > 0, "a kept (empty)");
    CHECK(gust_limiter_take(l, "b", 1, 1, 0) == 0 && gust_limiter_take(l, "b", 1, 1, 0) == 0,
          "b came back full");
    gust_limiter_destroy(l);

    /* Many keys through a small limiter: no key is ever lost track of wrongly. */
    CHECK(gust_limiter_create(&l, 1000, 1, 100) == 0, "created");
    char key[16];
    for (int i = 0; i < 10000; i++) {
        int n = snprintf(key, sizeof(key), "k%d", i);
        CHECK(gust_limiter_take(l, key, (size_t)n, 1, 0) == 0, "new key %d full", i);
        if (gust_limiter_keys(l) > 100) {
            CHECK(0, "more than 100 keys");
            break;
        }
    }
    for (int i = 9900; i < 10000; i++) {
        int n = snprintf(key, sizeof(key), "k%d", i);
        CHECK(gust_limiter_take(l, key, (size_t)n, 1, 0) > 0, "recent key %d kept, empty", i);
    }
    gust_limiter_destroy(l);
    gust_limiter_destroy(NULL);
}

int main(void)
{
    test_parse();
    test_bucket();
    test_limiter();
    return check_result("rate");
}
