/* The unit kinds host.conf knows: one X(name) a kind, its entry gust_kind_<name> in
 * host/core/kind_<file>.c (kind.h). The order is --help's and a kind's rank nowhere else. */
#ifndef GUST_CORE_KINDS_H
#define GUST_CORE_KINDS_H

#include "kind.h"

#define GUST_KINDS(X) X(flow) X(detect) X(relay) X(sink) X(source)

#define GUST_KIND_DECLARE(n) extern const struct gust_kind gust_kind_##n;
GUST_KINDS(GUST_KIND_DECLARE)
#undef GUST_KIND_DECLARE

/* At most this many kinds (the top level's list of block words is that long). */
#define GUST_MAX_KINDS 32

/* Every kind, NULL-terminated (kinds.c; a test may define its own table instead). */
extern const struct gust_kind *const gust_kinds[];

/* The kind whose block word is name, or NULL. */
const struct gust_kind *gust_kind_named(const char *name);

#endif
