/* Checking parsed host.conf blocks against declarative schemas (gust/schema.h).
 *
 * The check turns a block's statements into a struct gust_cfg with every value parsed
 * once, so the accessors of gust/schema.h are cheap lookups. */
#ifndef GUST_CONF_SCHEMA_H
#define GUST_CONF_SCHEMA_H

#include <stdio.h>

#include "conf.h"
#include "gust/err.h"
#include "gust/schema.h"

/* Checks the statements of `block` (borrowed) against `schema` (borrowed, ends with a NULL
 * key). It works for any node, including struct gust_conf's root for the top level; a
 * block the caller makes up (to read defaults only) needs a file name, and line 0 makes
 * messages name the file alone. `what` (borrowed) names the block in messages, e.g.
 * "flow 'orders'". Statements whose name is in `ignore` (a NULL-terminated array, or NULL)
 * are skipped: they belong to the caller, e.g. `use` or nested blocks it walks itself.
 *
 * On success *out owns the values (free with gust_cfg_destroy); it does not refer to the
 * tree or the schema. Errors, first one wins, err->msg naming file:line:
 *   GUST_ECONFIG  unknown key, duplicate non-list key, wrong number of values, bad value,
 *                 a nested block for a schema key, missing required key (at the block);
 *   GUST_EINVAL   a default in the schema that its own type rejects (a bug in the table);
 *   GUST_ENOMEM.
 * A key marked GUST_K_REQUIRED must be written by the user; its default is not used. */
int gust_cfg_check(const struct gust_conf_node *block, const char *what,
                   const struct gust_schema_key *schema, const char *const *ignore,
                   struct gust_cfg **out, struct gust_err *err);

/* NULL is a no-op. */
void gust_cfg_destroy(struct gust_cfg *cfg);
/* The same, every value zeroed first: a copy that held secrets. */
void gust_cfg_destroy_wiped(struct gust_cfg *cfg);

/* A copy of cfg (*out, NULL when nothing changed) in which fn rewrote the values of the
 * keys of schema (borrowed) that have the GUST_K_* bits `with` and none of `without`:
 * fn returns 0 and sets *repl to a new string (owned by the copy from then) or leaves it
 * NULL to keep the value; nonzero fails the copy with that code. Numbers are not
 * parsed again: for text keys (STR, LIST). */
int gust_cfg_rewrite(const struct gust_cfg *cfg, const struct gust_schema_key *schema, unsigned with,
                     unsigned without, int (*fn)(void *ud, const char *key, const char *value, char **repl),
                     void *ud, struct gust_cfg **out);

/* 1 when key has the same values (as written, after defaults) in a and b. The reload
 * diff: a changed key without GUST_K_RELOADABLE refuses the reload. */
int gust_cfg_same(const struct gust_cfg *a, const struct gust_cfg *b, const char *key);

/* Prints a table of the schema's keys (type, default, flags, help) under `title` for
 * `gust --help`. Defaults of GUST_K_SECRET keys are not shown. */
void gust_schema_print_help(FILE *out, const char *title, const struct gust_schema_key *schema);
/* The columns of that table, for other renderings of it (gust-host.conf(5)). */
const char *gust_schema_type_name(enum gust_type t);
/* The default as shown: "-" for none, "(hidden)" for a secret key's. */
const char *gust_schema_shown_default(const struct gust_schema_key *k);
/* What a key's declared bounds accept, for messages and help: "within 1..1024",
 * "at least 10ms", "0 (off) or at least 100ms", "one of text|json"; "" when it declares
 * none. Returns buf. */
const char *gust_schema_bounds_text(const struct gust_schema_key *k, char *buf, size_t size);
/* "required,reloadable,secret,template" or "-"; buf holds at least 40 bytes. */
const char *gust_schema_flag_names(unsigned flags, char *buf, size_t size);

#endif
