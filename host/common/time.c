/* Clocks and the one RFC 3339 writer of the host and the plugins. */
#include <stdio.h>
#include <time.h>

#include "gust/sdk.h"

int64_t gust_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gust_clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gust_clock_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void gust_clock_deadline(int64_t ms, struct timespec *at)
{
    clock_gettime(CLOCK_REALTIME, at);
    at->tv_sec += (time_t)(ms / 1000);
    at->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (at->tv_nsec >= 1000000000L) {
        at->tv_sec++;
        at->tv_nsec -= 1000000000L;
    }
}

uint64_t gust_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian), after Howard Hinnant's
 * civil_from_days: exact for every day count an int64 of ms can give. */
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

/* v as `width` digits, zero-padded (v has no more digits than that). */
static char *put_digits(char *w, unsigned v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        w[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return w + width;
}

/* Written by hand: gmtime_r and snprintf took 3.5k instructions a call (callgrind), and
 * a flow's meta.time_rfc3339 is written once per event. */
size_t gust_rfc3339_ms(int64_t epoch_ms, char out[GUST_RFC3339_SIZE])
{
    /* Floor division, so that a time before 1970 still has ms in 0..999. */
    int64_t days = epoch_ms / 86400000, rem = epoch_ms % 86400000;
    if (rem < 0) {
        rem += 86400000;
        days--;
    }
    int64_t y;
    unsigned mo, d;
    civil_from_days(days, &y, &mo, &d);
    unsigned s = (unsigned)(rem / 1000), ms = (unsigned)(rem % 1000);
    if (y < 0 || y > 9999) { /* no time a clock or a stream gives; RFC 3339 years have four digits */
        int n = snprintf(out, GUST_RFC3339_SIZE, "%04lld-%02u-%02uT%02u:%02u:%02u.%03uZ", (long long)y, mo, d,
                         s / 3600, s / 60 % 60, s % 60, ms);
        return n > 0 && n < GUST_RFC3339_SIZE ? (size_t)n : 0;
    }
    char *w = put_digits(out, (unsigned)y, 4);
    *w++ = '-';
    w = put_digits(w, mo, 2);
    *w++ = '-';
    w = put_digits(w, d, 2);
    *w++ = 'T';
    w = put_digits(w, s / 3600, 2);
    *w++ = ':';
    w = put_digits(w, s / 60 % 60, 2);
    *w++ = ':';
    w = put_digits(w, s % 60, 2);
    *w++ = '.';
    w = put_digits(w, ms, 3);
    *w++ = 'Z';
    *w = '\0';
    return (size_t)(w - out);
}
