/* HMAC for signatures, both ways: the webhooks' verification (host/http/webhook_verify.c)
 * and http_out's signed requests use these, so both speak one Standard Webhooks. */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdlib.h>
#include <string.h>

#include "gust/sdk.h"

size_t gust_hmac(const unsigned char *key, size_t keylen, int sha1, const char *const *parts, const size_t *lens,
                 size_t n, unsigned char mac[GUST_HMAC_MAX])
{
    EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = m != NULL ? EVP_MAC_CTX_new(m) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, sha1 ? "SHA1" : "SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    size_t out = 0;
    int ok = ctx != NULL && EVP_MAC_init(ctx, key, keylen, params) == 1;
    for (size_t i = 0; ok && i < n; i++) {
        ok = EVP_MAC_update(ctx, (const unsigned char *)parts[i], lens[i]) == 1;
    }
    if (!ok || EVP_MAC_final(ctx, mac, &out, GUST_HMAC_MAX) != 1) {
        out = 0;
    }
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(m);
    return out;
}

unsigned char *gust_whsec_decode(const char *text, size_t len, size_t *out_len)
{
    /* The spec's libraries take the prefix off when it is there, and decode the rest. */
    if (len > 6 && memcmp(text, "whsec_", 6) == 0) {
        text += 6;
        len -= 6;
    }
    size_t n = 0;
    unsigned char *key = len > 0 ? gust_base64_decode(text, len, &n) : NULL;
    if (key != NULL && n == 0) {
        free(key);
        key = NULL;
    }
    *out_len = key != NULL ? n : 0;
    return key;
}

int gust_hex_append(struct gust_buf *out, const unsigned char *s, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    if (gust_buf_reserve(out, 2 * len) != 0) {
        return GUST_ENOMEM;
    }
    char *p = out->data + out->len;
    for (size_t i = 0; i < len; i++) {
        *p++ = digits[s[i] >> 4];
        *p++ = digits[s[i] & 15];
    }
    out->len += 2 * len;
    return 0;
}
