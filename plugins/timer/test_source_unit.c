/* Unit tests of the sources' pure parts: the JSON check (kinds, errors, key clashes),
 * array splitting into exact element bytes, string quoting, RFC 3339 time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source_core.h"

static int failed, passed;

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (cond) {                                                                                          \
            passed++;                                                                                        \
        } else {                                                                                             \
            failed++;                                                                                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                      \
            printf(__VA_ARGS__);                                                                             \
            printf("\n");                                                                                    \
        }                                                                                                    \
    } while (0)

static int check(const char *s, const char *const *keys, const char **clash, char *why)
{
    return source_json_check(s, strlen(s), keys, clash, why, 160);
}

static void test_check(void)
{
    static const char *const keys[] = {"ts", "tick", NULL};
    const char *clash;
    char why[160];

    CHECK(check(" {\"a\":1} ", NULL, NULL, why) == SJ_OBJECT, "object");
    CHECK(check("[1,2]", NULL, NULL, why) == SJ_ARRAY, "array");
    CHECK(check("42", NULL, NULL, why) == SJ_SCALAR, "number");
    CHECK(check("\"x\"", NULL, NULL, why) == SJ_SCALAR, "string");
    CHECK(check("", NULL, NULL, why) == 0 && strcmp(why, "empty") == 0, "empty: %s", why);
    CHECK(check("  \n", NULL, NULL, why) == 0, "white space only");
    CHECK(check("{\"a\":", NULL, NULL, why) == 0 && strstr(why, "premature EOF"), "truncated: %s", why);
    CHECK(check("{\"a\":1} x", NULL, NULL, why) == 0 && !strchr(why, '\n'), "trailing garbage: %s", why);
    CHECK(check("{} {}", NULL, NULL, why) == 0, "two values");
    CHECK(check("<html>", NULL, NULL, why) == 0, "html");
    CHECK(check("{\"a\":\"\xff\"}", NULL, NULL, why) == 0, "invalid UTF-8");
    /* What yajl takes and no flow decodes (found by tests/fuzz/fuzz_http_poll.c). */
    CHECK(check("\f1 ", NULL, NULL, why) == 0 && strstr(why, "form feed"), "form feed: %s", why);
    CHECK(check("[1,\v2]", NULL, NULL, why) == 0, "vertical tab");
    CHECK(check("{\"a\":\"\xed\xa0\x80\"}", NULL, NULL, why) == 0, "an encoded surrogate");
    CHECK(check("{\"a\":1} \"x", NULL, NULL, why) == 0 && strstr(why, "not closed"), "open string: %s", why);
    CHECK(check("{\"ts\":1}", keys, &clash, why) == SJ_OBJECT && clash && strcmp(clash, "ts") == 0,
          "clash ts");
    CHECK(check("{\"x\":{\"ts\":1},\"tsx\":2}", keys, &clash, why) == SJ_OBJECT && !clash,
          "nested ts is no clash");
    CHECK(check("{\"a\":[{\"tick\":1}],\"tick\":2}", keys, &clash, why) == SJ_OBJECT && clash &&
              strcmp(clash, "tick") == 0,
          "clash after nesting");
}

struct collect {
    char out[10][64];
    size_t n;
};

static int collect(void *ud, const char *e, size_t len)
{
    struct collect *c = ud;
    snprintf(c->out[c->n++], sizeof(c->out[0]), "%.*s", (int)len, e);
    return c->n == 10 ? 7 : 0;
}

static void test_each(void)
{
    struct collect c = {0};
    const char *a = " [ {\"a\":\"x,]}\\\"\"} , [1,[2]] ,3,\"s\\\\\" ,null,{} ]";

    CHECK(source_json_each(a, strlen(a), collect, &c) == 0, "split");
    CHECK(c.n == 6, "6 elements, got %zu", c.n);
    CHECK(strcmp(c.out[0], "{\"a\":\"x,]}\\\"\"}") == 0, "element 0: %s", c.out[0]);
    CHECK(strcmp(c.out[1], "[1,[2]]") == 0, "element 1: %s", c.out[1]);
    CHECK(strcmp(c.out[2], "3") == 0, "element 2: %s", c.out[2]);
    CHECK(strcmp(c.out[3], "\"s\\\\\"") == 0, "element 3: %s", c.out[3]);
    CHECK(strcmp(c.out[4], "null") == 0, "element 4: %s", c.out[4]);
    CHECK(strcmp(c.out[5], "{}") == 0, "element 5: %s", c.out[5]);
    memset(&c, 0, sizeof(c));
    CHECK(source_json_each("[]", 2, collect, &c) == 0 && c.n == 0, "empty array");
    CHECK(source_json_each(" [ ] ", 5, collect, &c) == 0 && c.n == 0, "empty array with spaces");
    CHECK(source_json_each("{}", 2, collect, &c) == -1, "not an array");
    memset(&c, 0, sizeof(c));
    CHECK(source_json_each("[1,2,3,4,5,6,7,8,9,10,11]", 25, collect, &c) == 7 && c.n == 10,
          "stops when fn says so");
}

static void test_quote(void)
{
    char out[128];
    size_t n = source_json_quote(out, "a\"b\\c\n\x01/");

    CHECK(strcmp(out, "\"a\\\"b\\\\c\\u000a\\u0001/\"") == 0 && n == strlen(out), "quote: %s", out);
}

static void test_rfc3339(void)
{
    char buf[40];

    source_rfc3339(buf, sizeof(buf), 0);
    CHECK(strcmp(buf, "1970-01-01T00:00:00.000Z") == 0, "epoch: %s", buf);
    source_rfc3339(buf, sizeof(buf), 1795996143123LL);
    CHECK(strcmp(buf, "2026-11-29T23:49:03.123Z") == 0, "2026: %s", buf);
}

int main(void)
{
    test_check();
    test_each();
    test_quote();
    test_rfc3339();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
