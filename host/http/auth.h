/* Bearer tokens for the admin routes and (optionally) for ingest.
 *
 * A token comes from a file or from an environment variable, read once at start. Only
 * its SHA-256 is kept, and a presented token is hashed and compared with
 * CRYPTO_memcmp: the comparison takes the same time whatever the length or the first
 * differing byte, so a timing side channel tells an attacker nothing. */
#ifndef GUST_HTTP_AUTH_H
#define GUST_HTTP_AUTH_H

#include <stddef.h>

#include "gust/err.h"

struct gust_auth {
    int enabled; /* 0: no token configured, every request passes */
    unsigned char digest[32];
};

/* Loads the token from file (when not NULL) or from the variable env (when not NULL);
 * both NULL leaves auth disabled. what names the keys in errors ("admin", "ingest").
 * An unreadable file, an unset or empty variable, an empty token, or both given, is
 * an error. */
int gust_auth_load(struct gust_auth *auth, const char *what, const char *file, const char *env,
                   struct gust_err *err);
/* 1 when auth is disabled or the Authorization header value (may be NULL) is
 * "Bearer <the token>". */
int gust_auth_check(const struct gust_auth *auth, const char *header, size_t len);

#endif
