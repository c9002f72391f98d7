/* Table-driven checks for the config tests, on the one harness (tests/check.h): each
 * names its row, so a failure says which broke and what it saw. */
#ifndef GUST_TEST_CONF_CHECK_H
#define GUST_TEST_CONF_CHECK_H

#include "../../check.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

#endif
