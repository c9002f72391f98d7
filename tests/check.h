/* The C tests' one assertion harness: each CHECK counts, and on failure prints where,
 * what failed and an optional printf-style note, then carries on, so one run shows
 * every broken case; main returns check_result(name), non-zero when anything failed.
 *
 *   CHECK(n == 3);
 *   CHECK(n == 3, "after the restart: %d", n);   (the note is a format string literal)
 *
 * Comparisons print both values when they differ, and take the same optional note (a
 * table's row, say):
 *
 *   CHECK_STR(got, "orders");                    (NULL equals only NULL)
 *   CHECK_STR(err.msg, cases[i].want, "case %zu", i);
 *   CHECK_INT(count, 3);                         (as int64_t)
 *   CHECK_CONTAINS(err.msg, "line 2");           (NULL contains nothing) */
#ifndef GUST_TEST_CHECK_H
#define GUST_TEST_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

/* Counts one check; on failure prints "file:line: FAIL what", then ": note" when fmt holds
 * more than the leading space the macros add (a format may not be empty). */
static inline int check_one(int ok, const char *file, int line, const char *what, const char *fmt, va_list ap)
{
    check_count++;
    if (ok) {
        return 1;
    }
    check_failures++;
    fprintf(stderr, "%s:%d: FAIL %s", file, line, what);
    if (fmt[1] != '\0') {
        fputc(':', stderr);
        vfprintf(stderr, fmt, ap);
    }
    fputc('\n', stderr);
    return 0;
}

static inline __attribute__((format(printf, 5, 6))) void check_at(int ok, const char *file, int line,
                                                                  const char *cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    check_one(ok, file, line, cond, fmt, ap);
    va_end(ap);
}

#define CHECK(cond, ...) check_at(!!(cond), __FILE__, __LINE__, #cond, " " __VA_ARGS__)

/* A string for the got/want lines: quoted, or NULL. */
static inline void check_show(const char *label, const char *s)
{
    if (s == NULL) {
        fprintf(stderr, "    %s NULL\n", label);
    } else {
        fprintf(stderr, "    %s \"%s\"\n", label, s);
    }
}

static inline __attribute__((format(printf, 6, 7))) void check_str(const char *file, int line, const char *expr,
                                                                   const char *got, const char *want,
                                                                   const char *fmt, ...)
{
    int ok = got == want || (got != NULL && want != NULL && strcmp(got, want) == 0);
    va_list ap;
    va_start(ap, fmt);
    if (!check_one(ok, file, line, expr, fmt, ap)) {
        check_show("got: ", got);
        check_show("want:", want);
    }
    va_end(ap);
}

static inline __attribute__((format(printf, 6, 7))) void check_int(const char *file, int line, const char *expr,
                                                                   int64_t got, int64_t want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (!check_one(got == want, file, line, expr, fmt, ap)) {
        fprintf(stderr, "    got:  %" PRId64 "\n    want: %" PRId64 "\n", got, want);
    }
    va_end(ap);
}

static inline __attribute__((format(printf, 6, 7))) void check_contains(const char *file, int line,
                                                                        const char *expr, const char *text,
                                                                        const char *part, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (!check_one(text != NULL && strstr(text, part) != NULL, file, line, expr, fmt, ap)) {
        check_show("got: ", text);
        check_show("want a string containing", part);
    }
    va_end(ap);
}

#define CHECK_STR(got, want, ...) check_str(__FILE__, __LINE__, #got, (got), (want), " " __VA_ARGS__)
#define CHECK_INT(got, want, ...)                                                                            \
    check_int(__FILE__, __LINE__, #got, (int64_t)(got), (int64_t)(want), " " __VA_ARGS__)
#define CHECK_CONTAINS(text, part, ...) check_contains(__FILE__, __LINE__, #text, (text), (part), " " __VA_ARGS__)

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
