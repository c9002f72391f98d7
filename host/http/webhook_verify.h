/* Webhook signatures: the HMAC schemes of the providers (webhook.c checks each request
 * with these before it looks at the body or its content type).
 *
 *   github    X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>
 *   stripe    Stripe-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "t.body">[,v1=...]
 *             (refused when t is further than tolerance from now)
 *   shopify   X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of the body>
 *   slack     X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:timestamp:body">, with
 *             X-Slack-Request-Timestamp within tolerance of now
 *   standard  Standard Webhooks: webhook-id, webhook-timestamp (within tolerance),
 *             webhook-signature "v1,<base64 HMAC-SHA256 of "id.timestamp.body">" (several,
 *             space-separated); the secret "whsec_<base64>" is used decoded
 *   hmac      signature_header: prefix + hex or base64 HMAC-SHA256 (or SHA-1) of the body
 *
 * Every secret of the list is tried (rotation). The signature a request sends is
 * decoded, then compared with each expected MAC by CRYPTO_memcmp: the time taken does
 * not depend on how many bytes match. */
#ifndef GUST_HTTP_WEBHOOK_VERIFY_H
#define GUST_HTTP_WEBHOOK_VERIFY_H

#include <stddef.h>
#include <stdint.h>

enum gust_wh_scheme {
    GUST_WH_NONE,
    GUST_WH_GITHUB,
    GUST_WH_STRIPE,
    GUST_WH_SHOPIFY,
    GUST_WH_SLACK,
    GUST_WH_STANDARD,
    GUST_WH_HMAC,
};

/* The scheme a word of `verify` names (the schema's choices, host/core/config.c); -1
 * for any other word. */
int gust_wh_scheme_of(const char *word);

struct gust_wh_secret {
    unsigned char *key; /* owned */
    size_t len;
};

struct gust_wh_verifier {
    enum gust_wh_scheme scheme;
    const struct gust_wh_secret *secrets; /* at least one unless scheme is NONE */
    size_t nsecrets;
    int64_t tolerance_s;          /* stripe, slack, standard */
    const char *signature_header; /* hmac: lowercase */
    int sha1;                     /* hmac: SHA-1 rather than SHA-256 */
    int base64;                   /* hmac: base64 rather than hex */
    const char *prefix;           /* hmac: before the encoded MAC ("" for none) */
};

/* The request's header name (lowercase) as value[0..*len): 1 when present once, 0
 * when absent, -1 when given several times (refused: which one was signed?). */
typedef int (*gust_wh_header_fn)(void *ud, const char *name, const char **value, size_t *len);

/* 0 when the request carries a valid signature of body[0..len) by one of the secrets
 * (always for NONE); else -1 with why (one line, no secret in it). now_s: Unix time. */
int gust_wh_verify(const struct gust_wh_verifier *v, gust_wh_header_fn header, void *ud, const char *body,
                   size_t len, int64_t now_s, char *why, size_t size);

/* A secret as the scheme uses it, from the text of its file or variable (trailing
 * newline already removed): standard's "whsec_<base64>" (or bare base64) decoded, the
 * others as they are. 0, or -1 with why. */
int gust_wh_secret_make(enum gust_wh_scheme scheme, const char *text, size_t len, struct gust_wh_secret *out,
                        char *why, size_t size);
/* Wipes and frees the key. */
void gust_wh_secret_clear(struct gust_wh_secret *s);

#endif
