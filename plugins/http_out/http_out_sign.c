/* Signed requests (`sign`): each request carries an HMAC-SHA256 of what it sends, made
 * with the SDK's one HMAC (gust_hmac, also behind the webhooks' verification), so the far
 * end can tell it came from the holder of the secret.
 *
 *   standard  Standard Webhooks (what Svix and Convoy send): webhook-id, webhook-timestamp
 *             (Unix seconds, when the request is written), webhook-signature
 *             "v1,<base64 of HMAC-SHA256 over id.timestamp.body>"; the secret is written
 *             whsec_<base64> and used decoded
 *   hmac      sign_header: sign_prefix + the HMAC-SHA256 of the body, in sign_encoding
 *             (hex or base64): GitHub's X-Hub-Signature-256 "sha256=<hex>" and the like;
 *             the secret's bytes as they are
 *
 * The webhook-id is the message's Nats-Msg-Id (seq-<stream sequence> for a message
 * stored without one): the same event has the same id on every attempt, so the far end
 * can drop a repeat. A batch of several messages has batch-<32 hex digits>, from a
 * SHA-256 of its messages' ids: the id names exactly that set, so a batch made again of
 * the same messages has the same one, and a batch holding other messages beside an
 * earlier one's never takes its id (which a far end that dropped it as a repeat would
 * lose). Every write of a request, a resend included, signs it again with the time of
 * that write: a far end's tolerance is measured from there.
 *
 * The secret is read when the unit starts (secret_file, relative to host.conf, its
 * trailing newline dropped; or secret, whose {secret:PATH#KEY} the host fills in then),
 * so a reload reads it again. */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_out.h"

struct http_out_signer {
    const struct http_out_conf *conf;
    unsigned char *key; /* owned, wiped when freed */
    size_t keylen;
};

/* The names a sign scheme writes, for the checks against the other header keys. */
static size_t sign_names(const struct http_out_conf *conf, const char *names[3])
{
    if (conf->sign == HTTP_OUT_SIGN_STANDARD) {
        names[0] = "webhook-id";
        names[1] = "webhook-timestamp";
        names[2] = "webhook-signature";
        return 3;
    }
    names[0] = conf->k.sign_header;
    return conf->sign == HTTP_OUT_SIGN_HMAC ? 1 : 0;
}

int http_out_sign_load(struct http_out_conf *conf, const struct gust_host_api *api, const struct gust_cfg *cfg,
                       struct gust_err *err)
{
    const struct http_out_keys *k = &conf->k;
    const char *scheme = k->sign;

    conf->sign = strcmp(scheme, "standard") == 0 ? HTTP_OUT_SIGN_STANDARD
                 : strcmp(scheme, "hmac") == 0   ? HTTP_OUT_SIGN_HMAC
                                                 : HTTP_OUT_SIGN_NONE;
    conf->sign_base64 = strcmp(k->sign_encoding, "base64") == 0;
    if (conf->sign == HTTP_OUT_SIGN_NONE) {
        const char *stray = k->secret_file ? "secret_file"
                            : k->secret    ? "secret"
                            : k->sign_header ? "sign_header"
                            : k->sign_prefix ? "sign_prefix"
                                             : NULL;
        return stray == NULL ? 0
                             : gust_err_set(err, GUST_ECONFIG, "%s: %s: is for signed requests: set sign standard "
                                            "or sign hmac", api->cfg_where(cfg, stray), stray);
    }
    if (k->secret_file == NULL && k->secret == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: sign %s needs its secret: secret_file FILE, or secret "
                            "\"{secret:PATH#KEY}\"", api->cfg_where(cfg, "sign"), scheme);
    }
    if (k->secret_file != NULL && k->secret != NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: secret and secret_file: give the signing secret one way",
                            api->cfg_where(cfg, "secret"));
    }
    if (conf->sign == HTTP_OUT_SIGN_STANDARD && (k->sign_header || k->sign_prefix)) {
        const char *key = k->sign_header ? "sign_header" : "sign_prefix";
        return gust_err_set(err, GUST_ECONFIG, "%s: %s: is for sign hmac (sign standard writes the webhook-* "
                            "headers)", api->cfg_where(cfg, key), key);
    }
    if (conf->sign == HTTP_OUT_SIGN_HMAC && k->sign_header == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: sign hmac needs sign_header, the header carrying the "
                            "signature (e.g. X-Hub-Signature-256)", api->cfg_where(cfg, "sign"));
    }
    for (const char *c = k->sign_prefix; c != NULL && *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            return gust_err_set(err, GUST_ECONFIG, "%s: sign_prefix: holds a control character",
                                api->cfg_where(cfg, "sign_prefix"));
        }
    }
    const char *names[3];
    size_t n = sign_names(conf, names);
    for (size_t i = 0; i < n; i++) {
        const char *why = http_out_header_name_problem(conf, names[i]);
        for (size_t f = 0; why == NULL && f < conf->nfwd; f++) {
            why = strcasecmp(conf->fwd[f], names[i]) == 0 ? "is forwarded too (forward_headers)" : NULL;
        }
        if (why != NULL) {
            return gust_err_set(err, GUST_ECONFIG, "%s: the signature's header \"%s\" %s",
                                api->cfg_where(cfg, conf->sign == HTTP_OUT_SIGN_HMAC ? "sign_header" : "sign"),
                                names[i], why);
        }
    }
    snprintf(conf->secret_where, sizeof(conf->secret_where), "%s",
             api->cfg_where(cfg, k->secret_file ? "secret_file" : "secret"));
    return 0;
}

int http_out_signer_create(struct http_out_signer **out, const struct http_out_conf *conf, struct gust_err *err)
{
    const struct http_out_keys *k = &conf->k;
    const char *key = k->secret_file ? "secret_file" : "secret";
    struct gust_buf text = {0};
    struct http_out_signer *s = NULL;
    int rc = 0;

    *out = NULL;
    if (conf->sign == HTTP_OUT_SIGN_NONE) {
        return 0;
    }
    if (k->secret_file != NULL && gust_file_read(k->secret_file, &text) != 0) {
        /* The path is not the secret: naming it helps. */
        rc = gust_err_set(err, GUST_ECONFIG, "%s: secret_file %s: cannot be read: %s", conf->secret_where,
                          k->secret_file, strerror(errno));
        goto done;
    }
    if (k->secret != NULL && gust_buf_append(&text, k->secret, strlen(k->secret)) != 0) {
        rc = gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
        goto done;
    }
    /* `echo secret > file` adds a newline the far end does not sign with. */
    while (text.len > 0 && (text.data[text.len - 1] == '\n' || text.data[text.len - 1] == '\r')) {
        text.len--;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        rc = gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
        goto done;
    }
    s->conf = conf;
    if (text.len == 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: %s: the signing secret is empty", conf->secret_where, key);
    } else if (conf->sign == HTTP_OUT_SIGN_STANDARD) {
        if (!(s->key = gust_whsec_decode(text.data, text.len, &s->keylen))) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: %s: a Standard Webhooks secret is whsec_ followed by base64",
                              conf->secret_where, key);
        }
    } else if (!(s->key = malloc(text.len))) {
        rc = gust_err_set(err, GUST_ENOMEM, "http_out: out of memory");
    } else {
        memcpy(s->key, text.data, text.len);
        s->keylen = text.len;
    }

done:
    if (text.data != NULL) {
        OPENSSL_cleanse(text.data, text.cap);
    }
    gust_buf_free(&text);
    if (rc != 0) {
        http_out_signer_destroy(s);
        return rc;
    }
    *out = s;
    return 0;
}

void http_out_signer_destroy(struct http_out_signer *s)
{
    if (!s) {
        return;
    }
    if (s->key != NULL) {
        OPENSSL_cleanse(s->key, s->keylen);
        free(s->key);
    }
    free(s);
}

/* m's id as webhook-id: its Nats-Msg-Id when it is a header value, else seq-<seq>. */
static const char *msg_id(const struct gust_msg *m, char *buf, size_t size)
{
    const char *id = http_out_msg_header(m, "Nats-Msg-Id");
    int ok = id != NULL && *id != '\0';
    for (const char *c = id; ok && *c; c++) {
        ok = (unsigned char)*c > 0x20 && *c != 0x7f;
    }
    if (ok) {
        return id;
    }
    snprintf(buf, size, "seq-%llu", (unsigned long long)m->stream_seq);
    return buf;
}

const char *http_out_sign_id(const struct gust_msg *msgs, const size_t *nxt, size_t first, size_t n, char *buf,
                             size_t size)
{
    char seq[32];

    if (n == 1) {
        const char *id = msg_id(&msgs[first], seq, sizeof(seq));
        return id == seq ? (snprintf(buf, size, "%s", seq), buf) : id;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    /* Each id ends with a newline: no two lists of ids hash the same bytes. */
    for (size_t m = first; ok && m != HTTP_OUT_NONE; m = nxt[m]) {
        const char *id = msg_id(&msgs[m], seq, sizeof(seq));
        ok = EVP_DigestUpdate(ctx, id, strlen(id)) == 1 && EVP_DigestUpdate(ctx, "\n", 1) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 16;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        /* OpenSSL out of memory: an id of this set still, from its first and its size. */
        snprintf(buf, size, "batch-%llu-%zu", (unsigned long long)msgs[first].stream_seq, n);
        return buf;
    }
    static const char digits[] = "0123456789abcdef";
    size_t w = (size_t)snprintf(buf, size, "batch-");
    for (size_t i = 0; i < 16 && w + 2 < size; i++) {
        buf[w++] = digits[md[i] >> 4];
        buf[w++] = digits[md[i] & 15];
    }
    buf[w < size ? w : size - 1] = '\0';
    return buf;
}

int http_out_sign(const struct http_out_signer *s, const char *id, const char *body, size_t len, int64_t now_s,
                  struct gust_buf *out)
{
    const struct http_out_conf *conf = s->conf;
    unsigned char mac[GUST_HMAC_MAX];
    size_t maclen;
    int rc;

    if (conf->sign == HTTP_OUT_SIGN_STANDARD) {
        char ts[24];
        int tslen = snprintf(ts, sizeof(ts), "%lld", (long long)now_s);
        const char *parts[] = {id, ".", ts, ".", body};
        size_t lens[] = {strlen(id), 1, (size_t)tslen, 1, len};
        if ((maclen = gust_hmac(s->key, s->keylen, 0, parts, lens, 5, mac)) == 0) {
            return -1;
        }
        rc = gust_buf_printf(out, "webhook-id: %s\r\nwebhook-timestamp: %s\r\nwebhook-signature: v1,", id, ts);
        rc = rc ? rc : gust_base64_append(out, mac, maclen);
    } else {
        const char *parts[] = {body};
        size_t lens[] = {len};
        if ((maclen = gust_hmac(s->key, s->keylen, 0, parts, lens, 1, mac)) == 0) {
            return -1;
        }
        rc = gust_buf_printf(out, "%s: %s", conf->k.sign_header, conf->k.sign_prefix ? conf->k.sign_prefix : "");
        rc = rc ? rc : conf->sign_base64 ? gust_base64_append(out, mac, maclen) : gust_hex_append(out, mac, maclen);
    }
    OPENSSL_cleanse(mac, sizeof(mac));
    return rc ? rc : gust_buf_append(out, "\r\n", 2);
}
