#include "bucket.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The string or number of "name" in json, into out ("" when absent). */
static void field(const char *json, const char *name, char *out, size_t size)
{
    char pattern[32];
    snprintf(pattern, sizeof(pattern), "\"%s\":", name);
    const char *p = strstr(json, pattern);
    out[0] = '\0';
    if (p == NULL) {
        return;
    }
    p += strlen(pattern);
    if (*p == '"') {
        const char *end = strchr(++p, '"');
        if (end != NULL) {
            snprintf(out, size, "%.*s", (int)(end - p), p);
        }
    } else {
        snprintf(out, size, "%.*s", (int)strspn(p, "0123456789"), p);
    }
}

int64_t gust_entry_read(const char *value, char *holder, size_t hsize, char *config, size_t csize)
{
    char text[400], expires[24];
    snprintf(text, sizeof(text), "%s", value);
    field(text, "holder", holder, hsize);
    if (config != NULL) {
        field(text, "config", config, csize);
    }
    field(text, "expires_ms", expires, sizeof(expires));
    return strtoll(expires, NULL, 10);
}

void gust_key_safe(char *s)
{
    for (; *s != '\0'; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
              *s == '_' || *s == '=')) {
            *s = '_';
        }
    }
}

int64_t gust_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gust_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    until.tv_sec += ms / 1000 + until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(cond, lock, &until);
}
