/* NATS user keys and credentials files, read for two reasons nats.c does not cover:
 *
 * - `nkey_seed FILE`: nats.c signs the server's nonce with the seed in the file, but it
 *   must be told the user's public key, which is derived from the seed (Ed25519, with
 *   OpenSSL), so the user names only the file.
 * - `gust -t` and the start check what the files hold, so that a bad or expired one is
 *   reported with its file:line before any connection is tried (a server only answers
 *   "Authorization Violation").
 *
 * The encoding is the NKeys one: base32 (RFC 4648, no padding) of a prefix, the 32-byte
 * key and a CRC-16 (XMODEM) of both. Seeds are wiped from memory after use. */
#ifndef GUST_BUS_NKEYS_H
#define GUST_BUS_NKEYS_H

#include <stddef.h>
#include <stdint.h>

#include "gust/err.h"

#define GUST_NKEY_PUBLIC_LEN 56 /* "U" + 55 more base32 characters */

/* The public user key ("U...", NUL-terminated, GUST_NKEY_PUBLIC_LEN + 1 bytes) of a
 * user seed ("SU..."; len bytes, need not be NUL-terminated). 0, or GUST_EINVAL with
 * what is wrong with the seed in why. */
int gust_nkey_public_of_seed(const char *seed, size_t len, char pub[GUST_NKEY_PUBLIC_LEN + 1], char *why,
                             size_t why_size);

/* Reads a seed file (the first line starting with "SU", as nats.c does) and derives its
 * public key. err names the file. */
int gust_nkey_public_of_seed_file(const char *path, char pub[GUST_NKEY_PUBLIC_LEN + 1], struct gust_err *err);

/* Checks a user credentials file as nsc writes it: a user JWT block, whose expiry (when
 * it has one) is after now_s, and a user seed block. 0, or GUST_ECONFIG with what is
 * wrong in err (naming the file). The JWT's signature is the server's to check. */
int gust_creds_check(const char *path, int64_t now_s, struct gust_err *err);
/* The same for the file's text (NUL-terminated), path naming it in messages. */
int gust_creds_check_text(const char *text, const char *path, int64_t now_s, struct gust_err *err);

#endif
