/* A tiny assertion harness: each CHECK prints where it failed and what it saw, counts the
 * failure and carries on, so one run shows every broken case; main returns
 * check_result(), non-zero when anything failed. */
#ifndef GUST_TEST_CHECK_H
#define GUST_TEST_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

static inline void check_fail(const char *file, int line, const char *label)
{
    fprintf(stderr, "%s:%d: FAIL %s\n", file, line, label);
    check_failures++;
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_fail(__FILE__, __LINE__, #cond);                                                 \
        }                                                                                          \
    } while (0)

/* label names the case in a table so that a failure says which row broke. */
#define CHECK_STR(label, got, want) check_str(__FILE__, __LINE__, label, got, want)
#define CHECK_INT(label, got, want) check_int(__FILE__, __LINE__, label, got, want)
#define CHECK_CONTAINS(label, hay, needle) check_contains(__FILE__, __LINE__, label, hay, needle)

static inline void check_str(const char *file, int line, const char *label, const char *got,
                             const char *want)
{
    check_count++;
    if (got == want || (got != NULL && want != NULL && strcmp(got, want) == 0)) {
        return;
    }
    check_fail(file, line, label);
    fprintf(stderr, "    got:  %s%s%s\n    want: %s%s%s\n", got ? "\"" : "", got ? got : "NULL",
            got ? "\"" : "", want ? "\"" : "", want ? want : "NULL", want ? "\"" : "");
}

static inline void check_int(const char *file, int line, const char *label, int64_t got,
                             int64_t want)
{
    check_count++;
    if (got != want) {
        check_fail(file, line, label);
        fprintf(stderr, "    got:  %" PRId64 "\n    want: %" PRId64 "\n", got, want);
    }
}

static inline void check_contains(const char *file, int line, const char *label, const char *hay,
                                  const char *needle)
{
    check_count++;
    if (hay == NULL || strstr(hay, needle) == NULL) {
        check_fail(file, line, label);
        fprintf(stderr, "    got:  \"%s\"\n    want: a string containing \"%s\"\n",
                hay ? hay : "NULL", needle);
    }
}

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
