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

size_t gust_rfc3339_ms(int64_t epoch_ms, char out[GUST_RFC3339_SIZE])
{
    /* Floor division, so that a time before 1970 still has ms in 0..999. */
    int64_t sec = epoch_ms / 1000, ms = epoch_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        sec--;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    int n = snprintf(out, GUST_RFC3339_SIZE, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)ms);
    return n > 0 && n < GUST_RFC3339_SIZE ? (size_t)n : 0;
}
