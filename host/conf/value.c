#include "value.h"

#include <string.h>
#include <strings.h>

#include "gust/err.h"

/* Reads the leading decimal digits of s into *out (no sign), setting *end past them.
 * Fails on no digits or on int64 overflow. */
static int parse_digits(const char *s, const char **end, int64_t *out)
{
    int64_t v = 0;
    const char *p = s;

    for (; *p >= '0' && *p <= '9'; p++) {
        int d = *p - '0';
        if (v > (INT64_MAX - d) / 10) {
            return GUST_EINVAL;
        }
        v = v * 10 + d;
    }
    if (p == s) {
        return GUST_EINVAL;
    }
    *end = p;
    *out = v;
    return 0;
}

/* v * mul, failing instead of overflowing. */
static int scale(int64_t v, int64_t mul, int64_t *out)
{
    if (v > INT64_MAX / mul) {
        return GUST_EINVAL;
    }
    *out = v * mul;
    return 0;
}

int gust_parse_int(const char *s, int64_t *out)
{
    const char *end;
    int64_t v;
    int neg = s[0] == '-';

    /* Parse the magnitude as negative-safe: INT64_MIN has no positive counterpart. */
    if (neg && strcmp(s, "-9223372036854775808") == 0) {
        *out = INT64_MIN;
        return 0;
    }
    if (parse_digits(s + neg, &end, &v) != 0 || *end != '\0') {
        return GUST_EINVAL;
    }
    *out = neg ? -v : v;
    return 0;
}

int gust_parse_bool(const char *s, int64_t *out)
{
    static const char *const yes[] = {"on", "true", "yes"};
    static const char *const no[] = {"off", "false", "no"};

    for (size_t i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return GUST_EINVAL;
}

int gust_parse_size(const char *s, int64_t *out)
{
    static const struct {
        const char *suffix;
        int64_t mul;
    } units[] = {
        {"", 1},         {"k", 1 << 10}, {"kb", 1 << 10},          {"m", 1 << 20},
        {"mb", 1 << 20}, {"g", 1 << 30}, {"gb", (int64_t)1 << 30},
    };
    const char *end;
    int64_t v;

    if (parse_digits(s, &end, &v) != 0) {
        return GUST_EINVAL;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            return scale(v, units[i].mul, out);
        }
    }
    return GUST_EINVAL;
}

int gust_parse_duration(const char *s, int64_t *ms)
{
    /* Lower case only: "M" could be read as months. */
    static const struct {
        const char *suffix;
        int64_t mul;
    } units[] = {
        {"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 60 * 60 * 1000},
    };
    const char *end;
    int64_t v;

    if (parse_digits(s, &end, &v) != 0) {
        return GUST_EINVAL;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            return scale(v, units[i].mul, ms);
        }
    }
    return GUST_EINVAL;
}

int gust_parse_addr(const char *s, int *port)
{
    const char *colon;
    const char *end;
    int64_t p;

    if (s[0] == '[') {
        /* An IPv6 literal: hex digits, ':' and '.', then "]:port". */
        size_t n = strspn(s + 1, "0123456789abcdefABCDEF:.");
        if (n == 0 || s[1 + n] != ']' || s[2 + n] != ':') {
            return GUST_EINVAL;
        }
        colon = s + 2 + n;
    } else {
        /* A name or IPv4 address: no ':' (that would be IPv6 without brackets). */
        size_t n = strcspn(s, ": \t/[]");
        if (n == 0 || s[n] != ':') {
            return GUST_EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
            if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) {
                return GUST_EINVAL;
            }
        }
        colon = s + n;
    }
    if (parse_digits(colon + 1, &end, &p) != 0 || *end != '\0' || p < 1 || p > 65535) {
        return GUST_EINVAL;
    }
    *port = (int)p;
    return 0;
}

int gust_name_valid(const char *s)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
            return 0;
        }
    }
    return n >= 1 && n <= 64;
}

/* The authority of a URL, [user[:password]@]host[:port], as the bytes [s, end). */
static int authority_valid(const char *s, const char *end)
{
    const char *at = NULL;
    for (const char *p = s; p < end; p++) {
        at = *p == '@' ? p : at;
    }
    const char *host = at != NULL ? at + 1 : s;
    const char *colon = NULL;
    if (host < end && *host == '[') {
        const char *rb = memchr(host, ']', (size_t)(end - host));
        if (rb == NULL || rb == host + 1 || (rb + 1 < end && rb[1] != ':')) {
            return 0;
        }
        colon = rb + 1 < end ? rb + 1 : NULL;
    } else {
        colon = memchr(host, ':', (size_t)(end - host));
        if ((colon != NULL ? colon : end) == host) {
            return 0; /* no host */
        }
    }
    if (colon == NULL) {
        return 1;
    }
    int64_t port;
    const char *digits_end;
    return parse_digits(colon + 1, &digits_end, &port) == 0 && digits_end == end && port >= 1 && port <= 65535;
}

int gust_parse_url(const char *s, char *scheme, size_t scheme_size)
{
#define LETTERS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    /* A scheme: a letter, then letters, digits, '+', '.' and '-'. */
    size_t n = strspn(s, LETTERS) > 0 ? strspn(s, LETTERS "0123456789+.-") : 0;
#undef LETTERS
    if (n == 0 || strncmp(s + n, "://", 3) != 0 || n >= scheme_size) {
        return GUST_EINVAL;
    }
    for (const char *p = s; *p != '\0'; p++) {
        if ((unsigned char)*p <= ' ' || (unsigned char)*p == 0x7f) {
            return GUST_EINVAL; /* spaces and control characters are %-encoded in a URL */
        }
    }
    const char *auth = s + n + 3;
    if (!authority_valid(auth, auth + strcspn(auth, "/?#"))) {
        return GUST_EINVAL;
    }
    memcpy(scheme, s, n); /* as written: the libraries behind the keys match it that way */
    scheme[n] = '\0';
    return 0;
}

int gust_parse_ratio(const char *s, double *out)
{
    /* A decimal in [0, 1], without strtod's locale, exponents and hex. */
    double v = 0, scale = 1;
    int digits = 0, dot = 0;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '.' && !dot) {
            dot = 1;
        } else if (*p >= '0' && *p <= '9' && digits < 12) {
            digits++;
            if (dot) {
                scale /= 10;
                v += (*p - '0') * scale;
            } else {
                v = v * 10 + (*p - '0');
            }
        } else {
            return GUST_EINVAL;
        }
    }
    if (digits == 0 || v > 1.0) {
        return GUST_EINVAL;
    }
    *out = v;
    return 0;
}
