/* Secrets from a store: `{secret:PATH#KEY}` references and the `secrets { }` block.
 *
 * One store per process (env, file or Vault KV v2), holding the value of every reference
 * the configuration names, behind one lock. Values are read at the moment they are used:
 * a sink template's {secret:…} part copies the value when it renders (secret_ref.c finds
 * gust_secret_value by name in the process, so plugins need nothing more than the SDK),
 * and a flow's secret("PATH#KEY") when its script loads. A refresh (every `refresh`, and
 * at each reload) fetches every reference again and zeroes the values it replaces, so a
 * rotated value is in force for the next request without a restart.
 *
 * Values never leave this module but through gust_secret_value: /secrets, the log and
 * the errors name references and stores only. */
#ifndef GUST_SECRET_H
#define GUST_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include "gust/sdk.h"

/* The `secrets { }` block, bound (host/core/config.c). One store of the three. */
struct gust_secrets_keys {
    const char *vault_addr; /* http(s)://host:port */
    const char *vault_token_file;
    const char *vault_mount;
    const char *vault_ca;
    const char *file; /* a JSON object: {"PATH": {"KEY": "value"}} */
    int env;          /* GUST_SECRET_<REFERENCE> */
    int64_t refresh;  /* ms */
    int64_t timeout;  /* ms, one Vault request */
};

/* Calls fn for each `{secret:PATH#KEY}` in text, with the reference (PATH#KEY) and its
 * length; stops when fn returns nonzero and returns that. */
int gust_secret_refs_each(const char *text, int (*fn)(void *ud, const char *ref, size_t len), void *ud);
/* NULL when ref (len bytes) is a usable PATH#KEY, else why not. */
const char *gust_secret_ref_problem(const char *ref, size_t len);

/* Puts k (borrowed for the call; NULL: no secrets block) in force, knows the references
 * refs[0..n) from now on (those no longer named are forgotten, their values zeroed) and
 * fetches every one of them now, the token file read again. Starts the refresh thread on
 * the first call. Returns how many did not resolve. */
size_t gust_secrets_configure(const struct gust_secrets_keys *k, const char *const *refs, size_t n);
/* 1 when ref resolved; else 0 with why (the store's error, never a value). */
int gust_secrets_resolved(const char *ref, char *why, size_t whysz);
/* Stops the refresh thread and zeroes every value. */
void gust_secrets_shutdown(void);

/* Units kept from starting by a reference that did not resolve, for /healthz: cleared
 * at each configure, added to as the generation starts. */
void gust_secrets_block_unit(const char *unit, const char *ref, const char *why);
/* Calls fn for each such unit (under the lock: fn must not call back here). */
void gust_secrets_blocked_each(void (*fn)(void *ud, const char *unit, const char *ref, const char *why),
                               void *ud);

/* GET /secrets: {"store": ..., "refresh_ms": ..., "secrets": [{"ref", "store", "resolved",
 * "resolved_at", "checked_at", "error"}], "blocked_units": [...]}: never a value. A
 * resolved reference with an error: the last fetch failed, the value of resolved_at is
 * in force. */
void gust_secrets_render(struct gust_buf *out);

/* The value of ref (reflen bytes) copied into out (NUL-terminated) with its length in
 * *len: 0, -1 when it is not resolved (why says so, naming the reference), -2 when out is
 * too small. Exported from the executable for the SDK's templates and the flows
 * (host/common/secret_ref.c); a reference not known yet is fetched first. */
int gust_secret_value(const char *ref, size_t reflen, char *out, size_t outsz, size_t *len, char *why,
                      size_t whysz);

#endif
