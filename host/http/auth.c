#include "auth.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_TOKEN 4096

/* Trailing whitespace (the newline of `echo secret > file`) is not part of a token. */
static size_t trim(const char *s, size_t len)
{
    while (len > 0 && isspace((unsigned char)s[len - 1])) {
        len--;
    }
    return len;
}

int gust_auth_load(struct gust_auth *auth, const char *what, const char *file, const char *env,
                   struct gust_err *err)
{
    memset(auth, 0, sizeof(*auth));
    if (file == NULL && env == NULL) {
        return 0;
    }
    if (file != NULL && env != NULL) {
        return gust_err_set(err, GUST_ECONFIG, "http: set %s_token_file or %s_token_env, not both", what, what);
    }
    char buf[MAX_TOKEN + 1];
    size_t len = 0;
    if (file != NULL) {
        FILE *f = fopen(file, "r");
        if (f == NULL) {
            return gust_err_set(err, GUST_ECONFIG, "http: %s_token_file %s: %s", what, file, strerror(errno));
        }
        len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        if (len > MAX_TOKEN) {
            return gust_err_set(err, GUST_ECONFIG, "http: %s_token_file %s: token longer than %d bytes", what,
                                file, MAX_TOKEN);
        }
    } else {
        const char *v = getenv(env);
        if (v == NULL) {
            return gust_err_set(err, GUST_ECONFIG, "http: %s_token_env: variable %s is not set", what, env);
        }
        len = strlen(v);
        if (len > MAX_TOKEN) {
            return gust_err_set(err, GUST_ECONFIG, "http: %s_token_env: %s is longer than %d bytes", what, env,
                                MAX_TOKEN);
        }
        memcpy(buf, v, len);
    }
    len = trim(buf, len);
    if (len == 0) {
        return gust_err_set(err, GUST_ECONFIG, "http: the %s token (%s) is empty", what, file != NULL ? file : env);
    }
    SHA256((const unsigned char *)buf, len, auth->digest);
    OPENSSL_cleanse(buf, sizeof(buf));
    auth->enabled = 1;
    return 0;
}

int gust_auth_check(const struct gust_auth *auth, const char *header, size_t len)
{
    if (!auth->enabled) {
        return 1;
    }
    static const char scheme[] = "bearer ";
    if (header == NULL || len < sizeof(scheme) - 1 || strncasecmp(header, scheme, sizeof(scheme) - 1) != 0) {
        return 0;
    }
    header += sizeof(scheme) - 1;
    len -= sizeof(scheme) - 1;
    while (len > 0 && *header == ' ') {
        header++;
        len--;
    }
    len = trim(header, len);
    /* Hashing first makes the comparison independent of the presented length too. */
    unsigned char digest[32];
    SHA256((const unsigned char *)header, len, digest);
    return CRYPTO_memcmp(digest, auth->digest, sizeof(digest)) == 0;
}
