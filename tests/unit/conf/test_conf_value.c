/* Value syntaxes: subjects and filters, int, bool, size, duration, addr, ratio. */
#include <stdlib.h>
#include <string.h>

#include "../../check.h"
#include "gust/err.h"
#include "subject.h"
#include "value.h"

struct subject_case {
    const char *s;
    int plain;    /* valid as a subject */
    int wildcard; /* valid as a filter */
};

static const struct subject_case subject_cases[] = {
    {"a", 1, 1},
    {"ev.orders", 1, 1},
    {"ev.orders-1_x.Y", 1, 1},
    {"$JS.API.STREAM", 1, 1},
    {"a/b#c", 1, 1},
    {"", 0, 0},
    {".", 0, 0},
    {".a", 0, 0},
    {"a.", 0, 0},
    {"a..b", 0, 0},
    {"a b", 0, 0},
    {" a", 0, 0},
    {"a\tb", 0, 0},
    {"a\nb", 0, 0},
    {"a\x01", 0, 0},
    {"a\x7f", 0, 0},
    {"caf\xc3\xa9", 0, 0}, /* UTF-8 is refused: printable ASCII only */
    {"*", 0, 1},
    {">", 0, 1},
    {"a.*", 0, 1},
    {"*.b", 0, 1},
    {"a.*.c", 0, 1},
    {"a.>", 0, 1},
    {"*.*.>", 0, 1},
    {"a*", 0, 0},
    {"*a", 0, 0},
    {"a.b*", 0, 0},
    {"a.**", 0, 0},
    {"a.>.c", 0, 0},
    {">.a", 0, 0},
    {">a", 0, 0},
    {"a.>b", 0, 0},
    {"a.*.", 0, 0},
    {"a.>.", 0, 0},
};

static void test_subjects(void)
{
    for (size_t i = 0; i < sizeof(subject_cases) / sizeof(subject_cases[0]); i++) {
        const struct subject_case *c = &subject_cases[i];
        char label[64];
        snprintf(label, sizeof(label), "subject '%s'", c->s);
        CHECK_INT(gust_subject_valid(c->s, strlen(c->s), 0), c->plain, "%s", label);
        snprintf(label, sizeof(label), "filter '%s'", c->s);
        CHECK_INT(gust_subject_valid(c->s, strlen(c->s), 1), c->wildcard, "%s", label);
    }
    /* Only len bytes count: the ingest path passes slices of a URL. */
    CHECK_INT(gust_subject_valid("ev.orders/x", 9, 0), 1, "slice");
    CHECK_INT(gust_subject_valid("ev.orders", 3, 0), 0, "slice ending in a dot");
    CHECK_INT(gust_subject_valid("a.*b", 3, 1), 1, "slice with '*' after it");
    CHECK_INT(gust_subject_valid(NULL, 0, 1), 0, "NULL");
}

struct num_case {
    const char *s;
    int ok;
    int64_t want;
};

static void run_num(const char *what, int (*parse)(const char *, int64_t *),
                    const struct num_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char label[96];
        int64_t v = -12345;
        int rc = parse(cases[i].s, &v);
        snprintf(label, sizeof(label), "%s '%s'", what, cases[i].s);
        CHECK_INT(rc, cases[i].ok ? 0 : GUST_EINVAL, "%s", label);
        CHECK_INT(v, cases[i].ok ? cases[i].want : -12345, "%s", label); /* untouched on failure */
    }
}

#define RUN_NUM(what, parse, cases) run_num(what, parse, cases, sizeof(cases) / sizeof(cases[0]))

static const struct num_case int_cases[] = {
    {"0", 1, 0},
    {"42", 1, 42},
    {"-42", 1, -42},
    {"-0", 1, 0},
    {"9223372036854775807", 1, INT64_MAX},
    {"-9223372036854775808", 1, INT64_MIN},
    {"9223372036854775808", 0, 0},
    {"-9223372036854775809", 0, 0},
    {"", 0, 0},
    {"-", 0, 0},
    {"+1", 0, 0},
    {" 1", 0, 0},
    {"1 ", 0, 0},
    {"1e3", 0, 0},
    {"0x10", 0, 0},
    {"1.5", 0, 0},
};

static const struct num_case bool_cases[] = {
    {"on", 1, 1}, {"off", 1, 0}, {"true", 1, 1},  {"false", 1, 0}, {"yes", 1, 1},
    {"no", 1, 0}, {"ON", 1, 1},  {"False", 1, 0}, {"1", 0, 0},     {"0", 0, 0},
    {"", 0, 0},   {"y", 0, 0},   {"onn", 0, 0},
};

static const struct num_case size_cases[] = {
    {"0", 1, 0},
    {"512", 1, 512},
    {"64k", 1, 64 << 10},
    {"64K", 1, 64 << 10},
    {"64kb", 1, 64 << 10},
    {"1m", 1, 1 << 20},
    {"3MB", 1, 3 << 20},
    {"2g", 1, (int64_t)2 << 30},
    {"2Gb", 1, (int64_t)2 << 30},
    {"9223372036854775807", 1, INT64_MAX},
    {"8589934591g", 1, (int64_t)8589934591 << 30},
    {"8589934592g", 0, 0}, /* overflows int64 */
    {"", 0, 0},
    {"k", 0, 0},
    {"12q", 0, 0},
    {"-1", 0, 0},
    {"1.5m", 0, 0},
    {"1 m", 0, 0},
    {"1t", 0, 0},
    {"1kk", 0, 0},
    {"99999999999999999999", 0, 0},
};

static const struct num_case duration_cases[] = {
    {"0", 1, 0},       {"100", 1, 100},
    {"250ms", 1, 250}, {"5s", 1, 5000},
    {"2m", 1, 120000}, {"1h", 1, 3600000},
    {"", 0, 0},        {"ms", 0, 0},
    {"5S", 0, 0},      {"1d", 0, 0},
    {"-5s", 0, 0},     {"1.5s", 0, 0},
    {"5 s", 0, 0},     {"2562047788015216h", 0, 0}, /* overflows int64 ms */
};

static void test_addr(void)
{
    static const struct {
        const char *s;
        int port; /* 0: invalid */
    } cases[] = {
        {"127.0.0.1:8787", 8787},
        {"localhost:1", 1},
        {"[::1]:65535", 65535},
        {"[fe80::1]:80", 80},
        {"0.0.0.0:80", 80},
        {"127.0.0.1", 0},
        {":80", 0},
        {"host:0", 0},
        {"host:65536", 0},
        {"host:", 0},
        {"host:80x", 0},
        {"host:-1", 0},
        {"host:+80", 0},
        {"::1:80", 0},
        {"[::1]", 0},
        {"[::1]80", 0},
        {"[]:80", 0},
        {"[::g]:80", 0},
        {"a b:80", 0},
        {"a/b:80", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int port = -1;
        int rc = gust_parse_addr(cases[i].s, &port);
        CHECK_INT(rc, cases[i].port ? 0 : GUST_EINVAL, "%s", cases[i].s);
        CHECK_INT(port, cases[i].port ? cases[i].port : -1, "%s", cases[i].s);
    }
}

static void test_ratio(void)
{
    double v = -1;
    CHECK(gust_parse_ratio("1.0", &v) == 0 && v == 1.0);
    CHECK(gust_parse_ratio("0.01", &v) == 0 && v > 0.0099 && v < 0.0101);
    CHECK(gust_parse_ratio("0", &v) == 0 && v == 0.0);
    CHECK(gust_parse_ratio("1.5", &v) != 0);
    CHECK(gust_parse_ratio("-0.1", &v) != 0);
    CHECK(gust_parse_ratio("1e-2", &v) != 0);
    CHECK(gust_parse_ratio(".", &v) != 0);
    CHECK(gust_parse_ratio("", &v) != 0);
}

int main(void)
{
    test_subjects();
    RUN_NUM("int", gust_parse_int, int_cases);
    RUN_NUM("bool", gust_parse_bool, bool_cases);
    RUN_NUM("size", gust_parse_size, size_cases);
    RUN_NUM("duration", gust_parse_duration, duration_cases);
    test_addr();
    test_ratio();
    return check_result("test_conf_value");
}
