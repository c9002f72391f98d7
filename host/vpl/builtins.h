/* Scalar functions callable from expressions (docs/VPL.md, "Expressions"). A missing
 * argument arrives as null; a function that cannot compute returns missing ("none"). */
#ifndef VPL_BUILTINS_H
#define VPL_BUILTINS_H

#include <stddef.h>

#include "eval.h"

typedef struct vval (*builtin_fn)(const struct ectx *c, const struct vval *a, uint32_t n,
                                  const struct expr *call);

struct builtin {
    const char *name;
    uint8_t min, max; /* argument count; max 255: variadic */
    builtin_fn fn;
};

extern const struct builtin builtins[];

/* Index into builtins[], or -1. */
int builtin_find(const char *name, size_t len);

/* Compiles a regex written in the common Rust/PCRE subset (\d, \w, \s, (?i), (?:),
 * lazy quantifiers) to POSIX ERE. Returns a malloc'd regex_t, or NULL with a message
 * in err. */
void *regex_compile(const char *pat, size_t len, char *err, size_t errlen);
void regex_destroy(void *re);

#endif
