/* Parsers for the scalar value syntaxes of host.conf (see enum gust_type), exported so
 * that the rest of the host reads sizes, durations and addresses the way host.conf does.
 * Each takes a NUL-terminated string (borrowed), returns 0 on success and GUST_EINVAL
 * when the whole string is not a valid value; *out is untouched on failure. */
#ifndef GUST_VALUE_H
#define GUST_VALUE_H

#include <stddef.h>
#include <stdint.h>

/* Decimal integer with an optional '-', within int64 range. */
int gust_parse_int(const char *s, int64_t *out);

/* on|off|true|false|yes|no, any case: 1 or 0. */
int gust_parse_bool(const char *s, int64_t *out);

/* Bytes: a number with an optional k, kb, m, mb, g or gb suffix (any case, powers of
 * 1024): 512, 64k, 1m, 2GB. */
int gust_parse_size(const char *s, int64_t *out);

/* Milliseconds: a number with an optional ms, s, m or h suffix; a bare number is ms. */
int gust_parse_duration(const char *s, int64_t *ms);

/* 1 when s is a name NATS takes as it is (GUST_T_NAME): 1 to 64 letters, digits, '_'
 * and '-'. Unit names are held to the same rule. */
int gust_name_valid(const char *s);

/* host:port or [ipv6]:port with port 1..65535; *port receives the port. The host is
 * checked for shape only (no spaces, no '/'), never resolved. */
int gust_parse_addr(const char *s, int *port);

/* A share from 0 to 1 as a plain decimal (GUST_T_RATIO): "1.0", "0.01", "1"; no sign,
 * exponent or locale. */
int gust_parse_ratio(const char *s, double *out);

/* scheme://[user[:password]@]host[:port][/path][?query][#fragment] (GUST_T_URL): a
 * scheme of letters, digits, '+', '.' and '-'; a host (a name, an address or [ipv6]);
 * a port 1..65535 when given; no spaces or control characters anywhere. The rest is
 * the scheme's business (its library parses it). The scheme, as written, is copied to
 * scheme (GUST_EINVAL when it does not fit scheme_size). */
int gust_parse_url(const char *s, char *scheme, size_t scheme_size);

#endif
