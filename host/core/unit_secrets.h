/* A generation's secrets: its units' references given to the store, and which units may
 * start (fail-closed: a unit with a reference that did not resolve does not). */
#ifndef GUST_CORE_UNIT_SECRETS_H
#define GUST_CORE_UNIT_SECRETS_H

#include <stddef.h>

#include "config.h"

/* Puts c's secrets block and every unit's references in force in the store, fetching
 * them all now (the reload's refetch). */
void gust_unit_secrets_configure(const struct gust_config *c);
/* 1 when every reference of u resolved; else 0, the first that did not in ref (PATH#KEY)
 * and the store's error in why. */
int gust_unit_secrets_ok(const struct gust_unit_conf *u, char *ref, size_t refsz, char *why, size_t whysz);

/* A copy of u's checked values (*out; NULL when there is nothing to replace) in which
 * each {secret:PATH#KEY} of a key plugin_schema marks GUST_K_SECRET and not
 * GUST_K_TEMPLATE is replaced by its value: a password, a broker URL's userinfo, a fixed
 * header line. Templates keep theirs (resolved at each render). Errors name the unit and
 * the reference, never a value. With stand_in, each is replaced by the word "secret"
 * instead, the store untouched: for the checks before a start (gust -t, a reload's), so
 * that a plugin parsing the value (a URL's userinfo) sees a well-formed one. */
int gust_unit_secrets_cfg(const struct gust_unit_conf *u, const struct gust_schema_key *plugin_schema,
                          int stand_in, struct gust_cfg **out, struct gust_err *err);

#endif
