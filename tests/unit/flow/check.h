/* String checks for the flow unit tests, on the one harness (tests/check.h). */
#ifndef GUST_TEST_FLOW_CHECK_H
#define GUST_TEST_FLOW_CHECK_H

#include "../../check.h"

#include <stdio.h>
#include <string.h>

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

#endif
