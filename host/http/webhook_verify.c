#include "webhook_verify.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json_out.h" /* gust_base64_decode, gust_hmac, gust_whsec_decode */

#define MAX_MAC GUST_HMAC_MAX

int gust_wh_scheme_of(const char *word)
{
    static const char *const words[] = {"none", "github", "stripe", "shopify", "slack", "standard", "hmac"};
    for (int i = 0; i < (int)(sizeof(words) / sizeof(words[0])); i++) {
        if (strcmp(word, words[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* The HMAC of the concatenation of parts under a secret (the SDK's one HMAC). */
static size_t hmac(const struct gust_wh_secret *key, int sha1, const char *const *parts, const size_t *lens,
                   size_t n, unsigned char mac[MAX_MAC])
{
    return gust_hmac(key->key, key->len, sha1, parts, lens, n, mac);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Hex s[0..len) into out (at most MAX_MAC bytes); the length, or 0 when not hex. */
static size_t unhex(const char *s, size_t len, unsigned char out[MAX_MAC])
{
    if (len == 0 || len % 2 != 0 || len / 2 > MAX_MAC) {
        return 0;
    }
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return 0;
        }
        out[i] = (unsigned char)(hi * 16 + lo);
    }
    return len / 2;
}

/* Base64 s[0..len) into out; the length, or 0 when malformed or too long. */
static size_t unbase64(const char *s, size_t len, unsigned char out[MAX_MAC])
{
    if (len == 0 || len > 4 * ((MAX_MAC + 2) / 3)) {
        return 0;
    }
    size_t n = 0;
    unsigned char *d = gust_base64_decode(s, len, &n);
    if (d == NULL || n == 0 || n > MAX_MAC) {
        free(d);
        return 0;
    }
    memcpy(out, d, n);
    free(d);
    return n;
}

/* 1 when sig[0..siglen) is the MAC of parts under one of the secrets. */
static int matches(const struct gust_wh_verifier *v, int sha1, const unsigned char *sig, size_t siglen,
                   const char *const *parts, const size_t *lens, size_t n)
{
    int ok = 0;
    for (size_t i = 0; i < v->nsecrets; i++) {
        unsigned char mac[MAX_MAC];
        size_t mlen = hmac(&v->secrets[i], sha1, parts, lens, n, mac);
        /* Every secret is tried whatever the outcome: the time does not tell which. */
        ok |= mlen > 0 && mlen == siglen && CRYPTO_memcmp(mac, sig, mlen) == 0;
        OPENSSL_cleanse(mac, sizeof(mac));
    }
    return ok;
}

/* The header, required once; else why. */
static int need(gust_wh_header_fn header, void *ud, const char *name, const char **val, size_t *len,
                char *why, size_t size)
{
    int got = header(ud, name, val, len);
    if (got == 1 && *len > 0) {
        return 1;
    }
    snprintf(why, size, got < 0 ? "header %s given more than once" : "missing %s header", name);
    return 0;
}

/* A Unix time in s[0..len), within tolerance of now; else why. */
static int fresh(const char *s, size_t len, int64_t now_s, int64_t tolerance_s, const char *what, char *why,
                 size_t size)
{
    int64_t t = 0;
    if (len == 0 || len > 15) {
        snprintf(why, size, "%s is not a Unix time", what);
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            snprintf(why, size, "%s is not a Unix time", what);
            return 0;
        }
        t = t * 10 + (s[i] - '0');
    }
    if (t < now_s - tolerance_s || t > now_s + tolerance_s) {
        snprintf(why, size, "%s is %lld s from now, more than the tolerance of %lld s (a replay?)", what,
                 (long long)(t - now_s), (long long)tolerance_s);
        return 0;
    }
    return 1;
}

static int bad_sig(char *why, size_t size, const char *header)
{
    snprintf(why, size, "%s does not match the body under any secret", header);
    return -1;
}

/* X-Hub-Signature-256, X-Shopify-Hmac-Sha256, hmac: a MAC of the body alone. */
static int body_mac(const struct gust_wh_verifier *v, const char *name, const char *prefix, int sha1, int b64,
                    gust_wh_header_fn header, void *ud, const char *body, size_t len, char *why, size_t size)
{
    const char *val;
    size_t vlen;
    if (!need(header, ud, name, &val, &vlen, why, size)) {
        return -1;
    }
    size_t plen = strlen(prefix);
    if (vlen < plen || memcmp(val, prefix, plen) != 0) {
        snprintf(why, size, "%s does not start with '%s'", name, prefix);
        return -1;
    }
    unsigned char sig[MAX_MAC];
    size_t slen = b64 ? unbase64(val + plen, vlen - plen, sig) : unhex(val + plen, vlen - plen, sig);
    if (slen == 0) {
        snprintf(why, size, "%s is not %s", name, b64 ? "base64" : "hex");
        return -1;
    }
    const char *parts[] = {body};
    size_t lens[] = {len};
    return matches(v, sha1, sig, slen, parts, lens, 1) ? 0 : bad_sig(why, size, name);
}

/* A header holding several signatures (rotated secrets), entries separated by sep, each
 * "<tag><signature>" in hex or base64: 1 when one of them is the MAC of parts. *any is
 * set when the header held an entry with the tag at all. */
static int any_entry_matches(const struct gust_wh_verifier *v, const char *val, size_t vlen, char sep,
                             const char *tag, int base64, const char *const *parts, const size_t *lens, size_t nparts,
                             int *any)
{
    size_t taglen = strlen(tag);
    for (size_t i = 0; i < vlen;) {
        const char *stop = memchr(val + i, sep, vlen - i);
        size_t end = stop != NULL ? (size_t)(stop - val) : vlen;
        if (end - i > taglen && memcmp(val + i, tag, taglen) == 0) {
            unsigned char sig[MAX_MAC];
            const char *enc = val + i + taglen;
            size_t slen = base64 ? unbase64(enc, end - i - taglen, sig) : unhex(enc, end - i - taglen, sig);
            *any = 1;
            if (slen > 0 && matches(v, 0, sig, slen, parts, lens, nparts)) {
                return 1;
            }
        }
        i = end + 1;
    }
    return 0;
}

/* Stripe-Signature: t=...,v1=...[,v1=...][,v0=...]: any v1 may match. */
static int stripe(const struct gust_wh_verifier *v, gust_wh_header_fn header, void *ud, const char *body,
                  size_t len, int64_t now_s, char *why, size_t size)
{
    const char *val;
    size_t vlen;
    if (!need(header, ud, "stripe-signature", &val, &vlen, why, size)) {
        return -1;
    }
    const char *t = NULL;
    size_t tlen = 0;
    for (size_t i = 0; i < vlen;) {
        const char *comma = memchr(val + i, ',', vlen - i);
        size_t end = comma != NULL ? (size_t)(comma - val) : vlen;
        if (end - i > 2 && val[i] == 't' && val[i + 1] == '=') {
            t = val + i + 2;
            tlen = end - i - 2;
        }
        i = end + 1;
    }
    if (t == NULL) {
        snprintf(why, size, "Stripe-Signature has no t=");
        return -1;
    }
    if (!fresh(t, tlen, now_s, v->tolerance_s, "Stripe-Signature's t", why, size)) {
        return -1;
    }
    const char *parts[] = {t, ".", body};
    size_t lens[] = {tlen, 1, len};
    int any = 0;
    if (any_entry_matches(v, val, vlen, ',', "v1=", 0, parts, lens, 3, &any)) {
        return 0;
    }
    if (!any) {
        snprintf(why, size, "Stripe-Signature has no v1= signature");
        return -1;
    }
    return bad_sig(why, size, "Stripe-Signature");
}

static int slack(const struct gust_wh_verifier *v, gust_wh_header_fn header, void *ud, const char *body,
                 size_t len, int64_t now_s, char *why, size_t size)
{
    const char *ts, *val;
    size_t tslen, vlen;
    if (!need(header, ud, "x-slack-request-timestamp", &ts, &tslen, why, size) ||
        !fresh(ts, tslen, now_s, v->tolerance_s, "X-Slack-Request-Timestamp", why, size) ||
        !need(header, ud, "x-slack-signature", &val, &vlen, why, size)) {
        return -1;
    }
    unsigned char sig[MAX_MAC];
    size_t slen = vlen > 3 && memcmp(val, "v0=", 3) == 0 ? unhex(val + 3, vlen - 3, sig) : 0;
    if (slen == 0) {
        snprintf(why, size, "X-Slack-Signature is not v0=<hex>");
        return -1;
    }
    const char *parts[] = {"v0:", ts, ":", body};
    size_t lens[] = {3, tslen, 1, len};
    return matches(v, 0, sig, slen, parts, lens, 4) ? 0 : bad_sig(why, size, "X-Slack-Signature");
}

/* webhook-signature: "v1,<base64>" entries separated by spaces; any may match. */
static int standard(const struct gust_wh_verifier *v, gust_wh_header_fn header, void *ud, const char *body,
                    size_t len, int64_t now_s, char *why, size_t size)
{
    const char *id, *ts, *val;
    size_t idlen, tslen, vlen;
    if (!need(header, ud, "webhook-id", &id, &idlen, why, size) ||
        !need(header, ud, "webhook-timestamp", &ts, &tslen, why, size) ||
        !fresh(ts, tslen, now_s, v->tolerance_s, "webhook-timestamp", why, size) ||
        !need(header, ud, "webhook-signature", &val, &vlen, why, size)) {
        return -1;
    }
    const char *parts[] = {id, ".", ts, ".", body};
    size_t lens[] = {idlen, 1, tslen, 1, len};
    int any = 0;
    if (any_entry_matches(v, val, vlen, ' ', "v1,", 1, parts, lens, 5, &any)) {
        return 0;
    }
    if (!any) {
        snprintf(why, size, "webhook-signature has no v1,<base64> signature");
        return -1;
    }
    return bad_sig(why, size, "webhook-signature");
}

int gust_wh_verify(const struct gust_wh_verifier *v, gust_wh_header_fn header, void *ud, const char *body,
                   size_t len, int64_t now_s, char *why, size_t size)
{
    if (body == NULL) {
        body = "";
        len = 0;
    }
    switch (v->scheme) {
    case GUST_WH_NONE:
        return 0;
    case GUST_WH_GITHUB:
        return body_mac(v, "x-hub-signature-256", "sha256=", 0, 0, header, ud, body, len, why, size);
    case GUST_WH_SHOPIFY:
        return body_mac(v, "x-shopify-hmac-sha256", "", 0, 1, header, ud, body, len, why, size);
    case GUST_WH_HMAC:
        return body_mac(v, v->signature_header, v->prefix != NULL ? v->prefix : "", v->sha1, v->base64,
                        header, ud, body, len, why, size);
    case GUST_WH_STRIPE:
        return stripe(v, header, ud, body, len, now_s, why, size);
    case GUST_WH_SLACK:
        return slack(v, header, ud, body, len, now_s, why, size);
    case GUST_WH_STANDARD:
        return standard(v, header, ud, body, len, now_s, why, size);
    }
    snprintf(why, size, "unknown verify scheme");
    return -1;
}

int gust_wh_secret_make(enum gust_wh_scheme scheme, const char *text, size_t len, struct gust_wh_secret *out,
                        char *why, size_t size)
{
    *out = (struct gust_wh_secret){0};
    if (len == 0) {
        snprintf(why, size, "the secret is empty");
        return -1;
    }
    if (scheme == GUST_WH_STANDARD) {
        size_t n = 0;
        out->key = gust_whsec_decode(text, len, &n);
        if (out->key == NULL) {
            snprintf(why, size, "a Standard Webhooks secret is whsec_ followed by base64");
            return -1;
        }
        out->len = n;
        return 0;
    }
    out->key = malloc(len);
    if (out->key == NULL) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    memcpy(out->key, text, len);
    out->len = len;
    return 0;
}

void gust_wh_secret_clear(struct gust_wh_secret *s)
{
    if (s->key != NULL) {
        OPENSSL_cleanse(s->key, s->len);
        free(s->key);
    }
    *s = (struct gust_wh_secret){0};
}
