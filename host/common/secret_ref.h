/* The host's secret store as the SDK and the flow runtime reach it: by name in the
 * process. gust exports gust_secret_value (host/secret/secret.h) from its dynamic symbol
 * table, so a plugin's templates and a flow's secret() need nothing linked of the host,
 * and a process without a store (a test, a tool, `gust flow-test`) simply has none. */
#ifndef GUST_COMMON_SECRET_REF_H
#define GUST_COMMON_SECRET_REF_H

#include <stddef.h>

/* The value of the reference ref (reflen bytes, "PATH#KEY") copied into out
 * (NUL-terminated) with its length in *len: 0; -1 when it is not resolved or this
 * process has no store (why says so, naming the reference); -2 when out is too small. */
int gust_secret_ref_value(const char *ref, size_t reflen, char *out, size_t outsz, size_t *len, char *why,
                          size_t whysz);

#endif
