#include "rfc3339.h"

#include <stdio.h>
#include <string.h>

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int digits(const char *s, size_t len, size_t *pos, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (*pos >= len || s[*pos] < '0' || s[*pos] > '9') {
            return -1;
        }
        v = v * 10 + (s[(*pos)++] - '0');
    }
    *out = v;
    return 0;
}

static int expect(const char *s, size_t len, size_t *pos, const char *set)
{
    if (*pos >= len) {
        return -1;
    }
    for (; *set; set++) {
        if (s[*pos] == *set) {
            (*pos)++;
            return 0;
        }
    }
    return -1;
}

int rfc3339_parse(const char *s, size_t len, int64_t *ms)
{
    size_t p = 0;
    int y, mo, d, h, mi, se, frac = 0;
    if (digits(s, len, &p, 4, &y) || expect(s, len, &p, "-") || digits(s, len, &p, 2, &mo) ||
        expect(s, len, &p, "-") || digits(s, len, &p, 2, &d) || expect(s, len, &p, "Tt ") ||
        digits(s, len, &p, 2, &h) || expect(s, len, &p, ":") || digits(s, len, &p, 2, &mi) ||
        expect(s, len, &p, ":") || digits(s, len, &p, 2, &se)) {
        return -1;
    }
    static const unsigned char mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60) {
        return -1;
    }
    if (p < len && s[p] == '.') {
        p++;
        int n = 0;
        while (p < len && s[p] >= '0' && s[p] <= '9') {
            if (n < 3) {
                frac = frac * 10 + (s[p] - '0');
            }
            n++;
            p++;
        }
        if (n == 0) {
            return -1;
        }
        for (; n < 3; n++) {
            frac *= 10;
        }
    }
    int offset = 0;
    if (p < len && (s[p] == 'Z' || s[p] == 'z')) {
        p++;
    } else if (p < len && (s[p] == '+' || s[p] == '-')) {
        int sign = s[p++] == '-' ? -1 : 1, oh, om;
        if (digits(s, len, &p, 2, &oh) || expect(s, len, &p, ":") || digits(s, len, &p, 2, &om) || oh > 23 ||
            om > 59) {
            return -1;
        }
        offset = sign * (oh * 60 + om);
    } else {
        return -1;
    }
    if (p != len) {
        return -1;
    }
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + se - (int64_t)offset * 60;
    *ms = secs * 1000 + frac;
    return 0;
}

size_t rfc3339_format(int64_t ms, char out[40])
{
    /* Floor division so times before 1970 still format. */
    int64_t secs = ms / 1000, milli = ms % 1000;
    if (milli < 0) {
        milli += 1000;
        secs--;
    }
    int64_t days = secs / 86400, rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    /* Clamp to years 0-9999: beyond that RFC 3339 has no representation. */
    if (days < -719528) {
        days = -719528, rem = 0, milli = 0;
    }
    if (days > 2932896) {
        days = 2932896, rem = 86399, milli = 999;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    /* By hand: snprintf was a tenth of the engine's time on alert-heavy programs. The
     * clamp above keeps every field in range: y 0-9999, the others two or three digits. */
    unsigned v[7] = {
        (unsigned)y,    m, d, (unsigned)(rem / 3600), (unsigned)(rem / 60 % 60), (unsigned)(rem % 60),
        (unsigned)milli};
    static const unsigned char width[7] = {4, 2, 2, 2, 2, 2, 3};
    static const char sep[7] = {'-', '-', 'T', ':', ':', '.', 'Z'};
    char *p = out;
    for (int k = 0; k < 7; k++) {
        for (int i = width[k] - 1; i >= 0; i--) {
            p[i] = (char)('0' + v[k] % 10);
            v[k] /= 10;
        }
        p += width[k];
        *p++ = sep[k];
    }
    *p = '\0';
    return (size_t)(p - out);
}

size_t rfc3339_format_cached(struct rfc3339_cache *c, int64_t ms, char out[40])
{
    /* Years 0-9999 only: outside, rfc3339_format clamps the milliseconds too. */
    const int64_t lo = INT64_C(-62167219200000), hi = INT64_C(253402300800000);
    if (ms < lo || ms >= hi) {
        return rfc3339_format(ms, out);
    }
    int64_t sec = (ms - lo) / 1000;
    unsigned milli = (unsigned)((ms - lo) % 1000);
    if (!c->valid || c->sec != sec) {
        size_t n = rfc3339_format(ms, out);
        if (n == sizeof(c->text)) {
            memcpy(c->text, out, n);
            c->sec = sec;
            c->valid = 1;
        }
        return n;
    }
    memcpy(out, c->text, sizeof(c->text));
    out[20] = (char)('0' + milli / 100);
    out[21] = (char)('0' + milli / 10 % 10);
    out[22] = (char)('0' + milli % 10);
    out[24] = '\0';
    return sizeof(c->text);
}
