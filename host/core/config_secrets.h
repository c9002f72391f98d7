/* The `secrets { }` block (one store: vault_addr, file or env) and the `{secret:PATH#KEY}`
 * references of the unit blocks. The store itself is host/secret/. */
#ifndef GUST_CORE_CONFIG_SECRETS_H
#define GUST_CORE_CONFIG_SECRETS_H

#include "config.h"

/* Once the block is bound: one store named, and every reference well formed, naming
 * file:line. */
int gust_config_secrets_check(struct gust_config *c, struct gust_err *err);
/* Calls fn for each reference written in the unit's block (with the file:line of its
 * statement), duplicates included; stops at fn's nonzero answer and returns it. */
int gust_unit_secret_refs(const struct gust_unit_conf *u,
                          int (*fn)(void *ud, const char *ref, size_t len, const struct gust_conf_node *at),
                          void *ud);

#endif
