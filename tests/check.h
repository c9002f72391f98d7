/* The C tests' one assertion harness: each CHECK counts, and on failure prints where,
 * the condition and an optional printf-style note, then carries on, so one run shows
 * every broken case; main returns check_result(name), non-zero when anything failed.
 *
 *   CHECK(n == 3);
 *   CHECK(n == 3, "after the restart: %d", n);   (the note is a format string literal) */
#ifndef GUST_TEST_CHECK_H
#define GUST_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int check_failures;
static int check_count;

static inline void check_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: FAIL %s\n", file, line, what);
    check_failures++;
}

static inline __attribute__((format(printf, 5, 6))) void check_at(int ok, const char *file, int line,
                                                                  const char *cond, const char *fmt, ...)
{
    check_count++;
    if (ok) {
        return;
    }
    check_failures++;
    fprintf(stderr, "%s:%d: FAIL %s", file, line, cond);
    if (fmt[1] != '\0') { /* the space, then the note */
        va_list ap;
        va_start(ap, fmt);
        fputc(':', stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
}

/* The note gets a leading space: a format may not be empty. */
#define CHECK(cond, ...) check_at(!!(cond), __FILE__, __LINE__, #cond, " " __VA_ARGS__)

static inline int check_result(const char *name)
{
    if (check_failures > 0) {
        fprintf(stderr, "%s: %d of %d checks failed\n", name, check_failures, check_count);
        return 1;
    }
    printf("%s: all %d checks passed\n", name, check_count);
    return 0;
}

#endif
