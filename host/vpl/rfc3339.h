/* RFC 3339 timestamps <-> epoch milliseconds (UTC, proleptic Gregorian). The VPL library
 * stands alone (no host code below it), so it has its own; the host and the plugins write
 * theirs with the SDK's gust_rfc3339_ms (host/common/time.c). */
#ifndef VPL_RFC3339_H
#define VPL_RFC3339_H

#include <stddef.h>
#include <stdint.h>

/* 0 and *ms on success, -1 when s[0..len) is not an RFC 3339 date-time. */
int rfc3339_parse(const char *s, size_t len, int64_t *ms);
/* "YYYY-MM-DDTHH:MM:SS.mmmZ"; returns the length (24 for years 0-9999). */
size_t rfc3339_format(int64_t ms, char out[40]);

/* The text of the last second formatted: alerts come in time order, many in one second,
 * and a date costs a few hundred instructions. Zeroed before first use. */
struct rfc3339_cache {
    int64_t sec;
    int valid;
    char text[24];
};
size_t rfc3339_format_cached(struct rfc3339_cache *c, int64_t ms, char out[40]);

#endif
