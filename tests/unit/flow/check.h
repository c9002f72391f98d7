/* A tiny assert harness for the flow unit tests: CHECK records a failure and goes on,
 * check_report() prints the count and gives the exit status. */
#ifndef GUST_TEST_CHECK_H
#define GUST_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        check_count++;                                                                                       \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                         \
            check_failures++;                                                                                \
        }                                                                                                    \
    } while (0)

#define CHECK_STR(got, want)                                                                                 \
    do {                                                                                                     \
        const char *got_ = (got), *want_ = (want);                                                           \
        check_count++;                                                                                       \
        if (got_ == NULL || strcmp(got_, want_) != 0) {                                                      \
            fprintf(stderr, "%s:%d: got %s\n%*swant %s\n", __FILE__, __LINE__, got_ ? got_ : "(null)",       \
                    (int)strlen(__FILE__) + 8, "", want_);                                                   \
            check_failures++;                                                                                \
        }                                                                                                    \
    } while (0)

#define CHECK_CONTAINS(text, part)                                                                           \
    do {                                                                                                     \
        const char *text_ = (text), *part_ = (part);                                                         \
        check_count++;                                                                                       \
        if (text_ == NULL || strstr(text_, part_) == NULL) {                                                 \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,                   \
                    text_ ? text_ : "(null)", part_);                                                        \
            check_failures++;                                                                                \
        }                                                                                                    \
    } while (0)

static inline int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures > 0 ? 1 : 0;
}

#endif
