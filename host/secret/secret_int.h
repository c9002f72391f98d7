/* What the secret store's files share (host/secret/). */
#ifndef GUST_SECRET_INT_H
#define GUST_SECRET_INT_H

#include <stdint.h>

#include "gust/sdk.h"
#include "gust/sock.h"

enum { STORE_NONE, STORE_ENV, STORE_FILE, STORE_VAULT };

/* The store in force: a copy of the block's settings, the token read from its file. */
struct secret_store {
    int kind;
    char *file;
    char *vault_host; /* from vault_addr */
    int vault_port;
    char *vault_mount;
    char *token;          /* zeroed when replaced */
    struct gust_tls *tls; /* https: vault_ca or the system store; NULL for http */
    char *token_error;    /* the token file could not be read: every fetch fails with it */
    int64_t timeout_ms;
};

const char *secret_store_name(int kind);

/* The value of ref (PATH#KEY) from s into val (the caller zeroes and frees it): 0, or -1
 * with why (never a value). */
int secret_fetch(const struct secret_store *s, const char *ref, struct gust_buf *val, char *why,
                 size_t whysz);

/* GET {vault}/v1/{mount}/data/{path} with X-Vault-Token: the body of a 200 into body
 * (zeroed and freed by the caller), or -1 with why. */
int secret_vault_get(const struct secret_store *s, const char *path, struct gust_buf *body, char *why,
                     size_t whysz);

/* Zeroes and frees a buffer that held a secret. */
void secret_buf_wipe(struct gust_buf *b);
/* Zeroes and frees a string that held a secret; NULL is a no-op. */
void secret_str_wipe(char *s);

#endif
