/* The registry of unit kinds, alone in its file so that a test can link its own
 * (tests/unit/core/test_kinds.c). */
#include "kinds.h"

#include <stddef.h>

#define GUST_KIND_ENTRY(n) &gust_kind_##n,
const struct gust_kind *const gust_kinds[] = {GUST_KINDS(GUST_KIND_ENTRY) NULL};
#undef GUST_KIND_ENTRY
