#include "nkeys.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_tree.h>

#define PREFIX_SEED (18 << 3) /* base32 "S..." */
#define PREFIX_USER (20 << 3) /* base32 "U..." */
#define KEY_LEN 32
#define MAX_FILE (64 << 10) /* a credentials file is a few kilobytes */

static const char B32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/* CRC-16/XMODEM, as the NKeys encoding uses. */
static uint16_t crc16(const unsigned char *p, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++) {
            crc = (crc & 0x8000) != 0 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
        }
    }
    return crc;
}

/* Base32 without padding; returns the bytes written, or -1 on a bad character or when
 * out is too small. */
static long b32_decode(const char *s, size_t len, unsigned char *out, size_t size)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        const char *c = s[i] != '\0' ? strchr(B32, s[i]) : NULL;
        if (c == NULL) {
            return -1;
        }
        acc = (acc << 5) | (uint32_t)(c - B32);
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            if (n == size) {
                return -1;
            }
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)n;
}

static void b32_encode(const unsigned char *p, size_t n, char *out)
{
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | p[i];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            *out++ = B32[(acc >> bits) & 31];
        }
    }
    if (bits > 0) {
        *out++ = B32[(acc << (5 - bits)) & 31];
    }
    *out = '\0';
}

int gust_nkey_public_of_seed(const char *seed, size_t len, char pub[GUST_NKEY_PUBLIC_LEN + 1], char *why,
                             size_t why_size)
{
    unsigned char raw[2 + KEY_LEN + 2 + 8];
    int rc = GUST_EINVAL;
    long n = b32_decode(seed, len, raw, sizeof(raw));
    if (n < 0) {
        snprintf(why, why_size, "not an NKey seed (base32 expected)");
        goto done;
    }
    if (n != 2 + KEY_LEN + 2) {
        snprintf(why, why_size, "not an NKey seed (wrong length)");
        goto done;
    }
    uint16_t crc = (uint16_t)(raw[n - 2] | raw[n - 1] << 8);
    if (crc16(raw, (size_t)n - 2) != crc) {
        snprintf(why, why_size, "the seed's checksum does not match (a typo or a truncated copy?)");
        goto done;
    }
    int b1 = raw[0] & 0xf8, b2 = ((raw[0] & 7) << 5) | ((raw[1] & 0xf8) >> 3);
    if (b1 != PREFIX_SEED) {
        snprintf(why, why_size, "not a seed (it should start with S)");
        goto done;
    }
    if (b2 != PREFIX_USER) {
        snprintf(why, why_size, "not a user seed (it should start with SU)");
        goto done;
    }
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, raw + 2, KEY_LEN);
    unsigned char out[1 + KEY_LEN + 2];
    size_t klen = KEY_LEN;
    if (key == NULL || EVP_PKEY_get_raw_public_key(key, out + 1, &klen) != 1 || klen != KEY_LEN) {
        EVP_PKEY_free(key);
        snprintf(why, why_size, "cannot derive the public key (OpenSSL without Ed25519?)");
        goto done;
    }
    EVP_PKEY_free(key);
    out[0] = PREFIX_USER;
    uint16_t pcrc = crc16(out, 1 + KEY_LEN);
    out[1 + KEY_LEN] = (unsigned char)(pcrc & 0xff);
    out[2 + KEY_LEN] = (unsigned char)(pcrc >> 8);
    b32_encode(out, sizeof(out), pub);
    rc = 0;
done:
    OPENSSL_cleanse(raw, sizeof(raw));
    return rc;
}

/* The whole file, NUL-terminated, in a buffer the caller wipes and frees. */
static char *read_file(const char *path, size_t *len, struct gust_err *err, const char *what)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        gust_err_set(err, GUST_ECONFIG, "%s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(MAX_FILE + 1);
    size_t n = buf != NULL ? fread(buf, 1, MAX_FILE + 1, f) : 0;
    int failed = buf != NULL && ferror(f);
    fclose(f);
    if (buf == NULL || failed || n > MAX_FILE) {
        gust_err_set(err, GUST_ECONFIG, "%s %s: %s", what, path,
                     buf == NULL ? "out of memory"
                     : failed    ? "read error"
                                 : "over 64 KiB: not a key file");
        if (buf != NULL) {
            OPENSSL_cleanse(buf, n);
        }
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void wipe(char *buf, size_t len)
{
    if (buf != NULL) {
        OPENSSL_cleanse(buf, len);
        free(buf);
    }
}

/* The first line of text (from *p) that starts, after blanks, with prefix: its start and
 * length without trailing blanks and CR. */
static const char *find_line(const char *text, const char *prefix, size_t *len)
{
    size_t plen = strlen(prefix);
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t n = end != NULL ? (size_t)(end - line) : strlen(line);
        const char *s = line;
        while (s < line + n && (*s == ' ' || *s == '\t')) {
            s++;
        }
        size_t sl = n - (size_t)(s - line);
        while (sl > 0 && (s[sl - 1] == ' ' || s[sl - 1] == '\t' || s[sl - 1] == '\r')) {
            sl--;
        }
        if (sl >= plen && memcmp(s, prefix, plen) == 0) {
            *len = sl;
            return s;
        }
        line = end != NULL ? end + 1 : line + n;
    }
    return NULL;
}

int gust_nkey_public_of_seed_file(const char *path, char pub[GUST_NKEY_PUBLIC_LEN + 1], struct gust_err *err)
{
    size_t len = 0;
    char *text = read_file(path, &len, err, "nkey_seed");
    if (text == NULL) {
        return GUST_ECONFIG;
    }
    size_t slen = 0;
    /* nats.c takes the first line starting with SU; another seed (SA..., SO...) would be
     * a user's mistake worth naming. */
    const char *seed = find_line(text, "SU", &slen);
    if (seed == NULL) {
        seed = find_line(text, "S", &slen);
    }
    char why[128];
    int rc = 0;
    if (seed == NULL) {
        rc = gust_err_set(err, GUST_ECONFIG, "nkey_seed %s: no user seed (a line starting with SU)", path);
    } else if (gust_nkey_public_of_seed(seed, slen, pub, why, sizeof(why)) != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "nkey_seed %s: %s", path, why);
    }
    wipe(text, len);
    return rc;
}

/* The line after the one holding marker (skipping blank lines): a block's content. */
static const char *block_after(const char *text, const char *marker, size_t *len)
{
    const char *m = strstr(text, marker);
    if (m == NULL) {
        return NULL;
    }
    const char *p = strchr(m, '\n');
    while (p != NULL) {
        p++;
        const char *end = strchr(p, '\n');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) {
            n--;
        }
        while (n > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        if (n > 0) {
            *len = n;
            return p;
        }
        p = end;
    }
    return NULL;
}

/* Base64url without padding (a JWT's parts) into out, NUL-terminated; -1 on a bad one. */
static long b64url_decode(const char *s, size_t len, char *out, size_t size)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '=') {
            break;
        }
        const char *c = s[i] != '\0' ? strchr(A, s[i]) : NULL;
        if (c == NULL) {
            return -1;
        }
        acc = (acc << 6) | (uint32_t)(c - A);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n + 1 >= size) {
                return -1;
            }
            out[n++] = (char)(acc >> bits);
        }
    }
    out[n] = '\0';
    return (long)n;
}

/* The JWT's claims: a user's, for the key of the file's seed, and not expired. */
static int check_jwt(const char *jwt, size_t len, const char *pub, const char *path, int64_t now_s,
                     struct gust_err *err)
{
    const char *dot1 = memchr(jwt, '.', len);
    const char *dot2 = dot1 != NULL ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - jwt)) : NULL;
    if (dot1 == NULL || dot2 == NULL) {
        return gust_err_set(err, GUST_ECONFIG,
                            "creds %s: the user JWT is not a JWT (header.claims.signature)", path);
    }
    char claims[8192];
    char ebuf[128];
    if (b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), claims, sizeof(claims)) < 0) {
        return gust_err_set(err, GUST_ECONFIG, "creds %s: the user JWT's claims are not base64url", path);
    }
    yajl_val tree = yajl_tree_parse(claims, ebuf, sizeof(ebuf));
    if (tree == NULL || !YAJL_IS_OBJECT(tree)) {
        yajl_tree_free(tree);
        return gust_err_set(err, GUST_ECONFIG, "creds %s: the user JWT's claims are not a JSON object", path);
    }
    static const char *type_path[] = {"nats", "type", NULL};
    static const char *exp_path[] = {"exp", NULL};
    static const char *sub_path[] = {"sub", NULL};
    yajl_val type = yajl_tree_get(tree, type_path, yajl_t_string);
    yajl_val exp = yajl_tree_get(tree, exp_path, yajl_t_number);
    yajl_val sub = yajl_tree_get(tree, sub_path, yajl_t_string);
    int rc = 0;
    if (type != NULL && strcmp(type->u.string, "user") != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "creds %s: the JWT's type is \"%.40s\", not \"user\"", path,
                          type->u.string);
    } else if (sub != NULL && strcmp(sub->u.string, pub) != 0) {
        rc =
            gust_err_set(err, GUST_ECONFIG,
                         "creds %s: the seed is not the JWT's user's (the JWT is for %.60s, the seed for %s)",
                         path, sub->u.string, pub);
    } else if (exp != NULL && YAJL_IS_INTEGER(exp) && YAJL_GET_INTEGER(exp) > 0 &&
               YAJL_GET_INTEGER(exp) <= now_s) {
        time_t t = (time_t)YAJL_GET_INTEGER(exp);
        struct tm tm;
        char when[32];
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        rc = gust_err_set(err, GUST_ECONFIG, "creds %s: the user JWT expired at %s", path, when);
    }
    yajl_tree_free(tree);
    return rc;
}

int gust_creds_check_text(const char *text, const char *path, int64_t now_s, struct gust_err *err)
{
    size_t jlen = 0, slen = 0;
    const char *jwt = block_after(text, "BEGIN NATS USER JWT", &jlen);
    const char *seed = block_after(text, "BEGIN USER NKEY SEED", &slen);
    char why[128], pub[GUST_NKEY_PUBLIC_LEN + 1];
    if (jwt == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "creds %s: no user JWT (-----BEGIN NATS USER JWT-----)", path);
    }
    if (seed == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "creds %s: no user seed (-----BEGIN USER NKEY SEED-----)",
                            path);
    }
    if (gust_nkey_public_of_seed(seed, slen, pub, why, sizeof(why)) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "creds %s: %s", path, why);
    }
    return check_jwt(jwt, jlen, pub, path, now_s, err);
}

int gust_creds_check(const char *path, int64_t now_s, struct gust_err *err)
{
    size_t len = 0;
    char *text = read_file(path, &len, err, "creds");
    if (text == NULL) {
        return GUST_ECONFIG;
    }
    int rc = gust_creds_check_text(text, path, now_s, err);
    wipe(text, len);
    return rc;
}
