/* The SDK's signature pieces (host/common/hmac.c, json_out.c): the HMAC against RFC 4231
 * and RFC 2202 vectors (whole and in parts), Standard Webhooks' published example,
 * whsec_ secrets, base64 and hex. */
#include <stdlib.h>
#include <string.h>

#include "../../check.h"

#include "gust/sdk.h"

static void hex_of(const unsigned char *mac, size_t len, char *out)
{
    struct gust_buf b = {0};
    gust_hex_append(&b, mac, len);
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
    gust_buf_free(&b);
}

static void test_hmac(void)
{
    unsigned char mac[GUST_HMAC_MAX];
    char hex[2 * GUST_HMAC_MAX + 1];
    const unsigned char *key = (const unsigned char *)"Jefe";
    const char *whole[] = {"what do ya want for nothing?"};
    size_t whole_len[] = {28};
    const char *split[] = {"what do ya", " want ", "for nothing?"};
    size_t split_len[] = {10, 6, 12};

    CHECK(gust_hmac(key, 4, 0, whole, whole_len, 1, mac) == 32, "SHA-256 is 32 bytes");
    hex_of(mac, 32, hex);
    CHECK(strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0, "RFC 4231 2: %s", hex);
    CHECK(gust_hmac(key, 4, 0, split, split_len, 3, mac) == 32, "in parts");
    hex_of(mac, 32, hex);
    CHECK(strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0, "parts: %s", hex);
    CHECK(gust_hmac(key, 4, 1, whole, whole_len, 1, mac) == 20, "SHA-1 is 20 bytes");
    hex_of(mac, 20, hex);
    CHECK(strcmp(hex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79") == 0, "RFC 2202 2: %s", hex);
}

/* The example of the Standard Webhooks specification's libraries. */
static void test_standard_example(void)
{
    size_t klen = 0;
    unsigned char *k = gust_whsec_decode("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 38, &klen);
    const char *parts[] = {"msg_p5jXN8AQM9LWM0D4loKWxJek", ".", "1614265330", ".", "{\"test\": 2432232314}"};
    size_t lens[] = {28, 1, 10, 1, 20};
    unsigned char mac[GUST_HMAC_MAX];
    struct gust_buf b = {0};

    CHECK(k != NULL && klen == 24, "the secret decodes to 24 bytes: %zu", klen);
    size_t n = k ? gust_hmac(k, klen, 0, parts, lens, 5, mac) : 0;
    gust_base64_append(&b, mac, n);
    gust_buf_append(&b, "", 1);
    CHECK(n == 32 && strcmp(b.data, "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") == 0, "v1,%s", b.data);
    gust_buf_free(&b);
    free(k);
}

static void test_whsec(void)
{
    size_t n = 99;
    unsigned char *k = gust_whsec_decode("whsec_SmVmZQ==", 14, &n);
    CHECK(k && n == 4 && memcmp(k, "Jefe", 4) == 0, "whsec_<base64>");
    free(k);
    k = gust_whsec_decode("SmVmZQ==", 8, &n);
    CHECK(k && n == 4 && memcmp(k, "Jefe", 4) == 0, "the base64 alone");
    free(k);
    CHECK(gust_whsec_decode("whsec_", 6, &n) == NULL && n == 0, "nothing after the prefix");
    CHECK(gust_whsec_decode("whsec_!!!!", 10, &n) == NULL, "not base64");
    CHECK(gust_whsec_decode("secret", 6, &n) == NULL, "a word");
    CHECK(gust_whsec_decode("", 0, &n) == NULL, "empty");
}

static void test_encodings(void)
{
    static const struct {
        const char *in, *b64;
    } cases[] = {{"", ""}, {"M", "TQ=="}, {"Ma", "TWE="}, {"Man", "TWFu"}, {"Many", "TWFueQ=="}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gust_buf b = {0};
        CHECK(gust_base64_append(&b, (const unsigned char *)cases[i].in, strlen(cases[i].in)) == 0);
        CHECK(b.len == strlen(cases[i].b64) && (b.len == 0 || memcmp(b.data, cases[i].b64, b.len) == 0),
              "base64 of \"%s\": %.*s", cases[i].in, (int)b.len, b.data ? b.data : "");
        gust_buf_free(&b);
    }
    struct gust_buf q = {0};
    gust_buf_append(&q, "x=", 2);
    gust_json_append_base64(&q, (const unsigned char *)"Ma", 2);
    CHECK(q.len == 8 && memcmp(q.data, "x=\"TWE=\"", 8) == 0, "quoted: %.*s", (int)q.len, q.data);
    gust_buf_free(&q);
    char hex[7];
    hex_of((const unsigned char *)"\x00\xff\x1a", 3, hex);
    CHECK(strcmp(hex, "00ff1a") == 0, "hex: %s", hex);
}

int main(void)
{
    test_hmac();
    test_standard_example();
    test_whsec();
    test_encodings();
    return check_result("sdk_hmac");
}
