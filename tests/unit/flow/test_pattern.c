/* Gust's matcher (host/flow/flow_pattern.c) against LuaJIT's own string library: a
 * corpus of cases (captures, position captures, %b, %f, anchors, sets, back
 * references, gsub's replacements and max-n, errors), then seeded random patterns
 * over small subjects; and the step budget: a pattern that backtracks for ever ends
 * in the flow's timeout. */
#include <stdlib.h>
#include <time.h>

#include "../../check.h"
#include "pattern_diff.h"

struct pcase {
    const char *op, *s, *p, *a;
    int n;
};

#define NONE INT32_MIN

static const struct pcase corpus[] = {
    {"find", "hello world", "o w", "", NONE},
    {"find", "hello world", "o", "", 6},
    {"find", "hello world", "l+", "", -3},
    {"find", "hello", "", "", 10},
    {"find", "hello", "", "", -10},
    {"find", "hello", "", "", 6},
    {"find", "a.b", ".", "", NONE},
    {"find_plain", "a.b", ".", "", 1},
    {"find_plain", "a.b", "", "", 4},
    {"find", "abc", "^b", "", NONE},
    {"find", "abc", "^b", "", 2},
    {"find", "abc", "c$", "", NONE},
    {"find", "abc$", "c$", "", NONE},
    {"find", "a$c", "$c", "", NONE},
    {"find", "key = value", "(%w+)%s*=%s*(%w+)", "", NONE},
    {"find", "abc", "()b()", "", NONE},
    {"match", "hello world", "(h)(e)(l)(l)(o)", "", NONE},
    {"match", "  trim  ", "^%s*(.-)%s*$", "", NONE},
    {"match", "2024-01-15", "(%d+)-(%d+)-(%d+)", "", NONE},
    {"match", "THE (quick) fox", "%((%a+)%)", "", NONE},
    {"match", "f(a(b)c)d", "%b()", "", NONE},
    {"match", "f(a(b)c", "%b()", "", NONE},
    {"match", "[[x]]", "%b[]", "", NONE},
    {"match", "THE (quick) fox", "%f[%a]%a+", "", NONE},
    {"match", "hello", "%f[%l]", "", NONE},
    {"match", "hello", "%f[%z]", "", NONE},
    {"match", "hello", "()%f[%Z]", "", NONE},
    {"match", "abcabc", "(abc)%1", "", NONE},
    {"match", "abab", "(a)(b)%2", "", NONE},
    {"match", "x = 'y'", "(['\"])(.-)%1", "", NONE},
    {"match", "aaa", "a-b", "", NONE},
    {"match", "aaab", "a-b", "", NONE},
    {"match", "aaab", "a*", "", NONE},
    {"match", "aaab", "a+", "", NONE},
    {"match", "aaab", "a?a?a?a?b", "", NONE},
    {"match", "]", "[]]", "", NONE},
    {"match", "a-z", "[a%-z]+", "", NONE},
    {"match", "a-z", "[z-a]", "", NONE},
    {"match", "^caret", "[%^^]+", "", NONE},
    {"match", "^caret", "[^^]+", "", NONE},
    {"match", "x1_y", "[%w_]+", "", NONE},
    {"match", "\t\v\f\r\n x", "%s+", "", NONE},
    {"match", "\x01\x7f\x80\xff", "%c+", "", NONE},
    {"match", "\x80\xff", "[\x80-\xff]+", "", NONE},
    {"match", "aBc", "%u", "", NONE},
    {"match", "aBc", "%U+", "", NONE},
    {"match", "0x1F!", "%x+", "", NONE},
    {"match", "a.b,c;", "%p+", "", NONE},
    {"match", "a.b,c;", "%P+", "", NONE},
    {"match", "hello", "%g+", "", NONE},
    {"match", "hello", "%e", "", NONE},
    {"match", "a%b", "%%", "", NONE},
    {"match", "abc", "(a)(b)(c)(", "", NONE},
    {"match", "abc", "a)", "", NONE},
    {"match", "abc", "%", "", NONE},
    {"match", "abc", "[a", "", NONE},
    {"match", "abc", "[a%", "", NONE},
    {"match", "abc", "[]", "", NONE},
    {"match", "abc", "[^]", "", NONE},
    {"match", "abc", "%b", "", NONE},
    {"match", "abc", "%ba", "", NONE},
    {"match", "abc", "%f", "", NONE},
    {"match", "abc", "%fa", "", NONE},
    {"match", "abc", "%1", "", NONE},
    {"match", "abc", "(a%1)", "", NONE},
    {"match", "abc", "%0", "", NONE},
    {"match", "abc", "(()", "", NONE},
    {"match", "abc", "((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))", "", NONE},
    {"match", "abc", "(((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))", "", NONE},
    {"match", "a\0b", "a%zb", "", NONE},
    {"match", "abc", "^", "", NONE},
    {"match", "abc", "$", "", NONE},
    {"match", "", "", "", NONE},
    {"match", "abc", "b", "", 3},
    {"match", "abc", "()", "", 3},
    {"match", "abc", "()", "", 4},
    {"match", "abc", "()", "", 9},
    {"gmatch", "one two  three", "%a+", "", NONE},
    {"gmatch", "k1=v1, k2=v2", "(%w+)=(%w+)", "", NONE},
    {"gmatch", "abc", "", "", NONE},
    {"gmatch", "abc", "()", "", NONE},
    {"gmatch", "abc", "b*", "", NONE},
    {"gmatch", "^a^a", "^a", "", NONE},
    {"gmatch", "abc", "(", "", NONE},
    {"gsub", "hello world", "o", "0", NONE},
    {"gsub", "hello world", "o", "0", 1},
    {"gsub", "hello world", "o", "0", 0},
    {"gsub", "hello world", "o", "0", -1},
    {"gsub", "hello world", "(%w+)", "<%1>", NONE},
    {"gsub", "hello world", "%w+", "%0 %0", NONE},
    {"gsub", "hello world", "(%w+) (%w+)", "%2 %1", NONE},
    {"gsub", "hello", "", "-", NONE},
    {"gsub", "hello", "x*", "-", NONE},
    {"gsub", "hello", "^h", "H", NONE},
    {"gsub", "hello", "^", ">", NONE},
    {"gsub", "hello", "$", "<", NONE},
    {"gsub", "hello", "l", "%", NONE},
    {"gsub", "hello", "l", "%%", NONE},
    {"gsub", "hello", "l", "%a", NONE},
    {"gsub", "hello", "l", "%2", NONE},
    {"gsub", "hello", "(l)", "%2", NONE},
    {"gsub", "hello", "()l", "%1", NONE},
    {"gsub", "hello world from lua", "%w+", "f", NONE},
    {"gsub", "hello world from lua", "(%w)(%w*)", "f", NONE},
    {"gsub", "hello world from lua", "%w+", "t", NONE},
    {"gsub", "hello world from lua", "(%w+)", "t", 2},
    {"gsub", "abc", "(", "x", NONE},
    {"gsub", "abc", "%b", "x", NONE},
};

/* Random patterns from the pieces that matter, over subjects of a few letters. */
static void random_case(unsigned *seed, char *s, size_t *slen, char *p, size_t *plen, char *a, size_t *alen)
{
    static const char *const pieces[] = {
        "a",     "b",      "c",      ".", "%a", "%d", "%s", "%w", "%A", "[ab]", "[^a]",
        "[a-c]", "*",      "+",      "-", "?",  "(",  ")",  "()", "%1", "%2",   "%b()",
        "%bab",  "%f[%w]", "%f[%W]", "^", "$",  "%",  "[",  "]",  "%z", "%.",   " "};
    static const char letters[] = "abc ()1.\0";
    size_t np = 1 + (size_t)(rand_r(seed) % 8);
    *plen = 0;
    for (size_t i = 0; i < np; i++) {
        const char *x = pieces[rand_r(seed) % (sizeof(pieces) / sizeof(pieces[0]))];
        memcpy(p + *plen, x, strlen(x));
        *plen += strlen(x);
    }
    *slen = (size_t)(rand_r(seed) % 12);
    for (size_t i = 0; i < *slen; i++) {
        s[i] = letters[rand_r(seed) % (sizeof(letters) - 1)];
    }
    static const char *const repl[] = {"x", "%0", "%1", "[%1%2]", "%", "%%", "f", "t", ""};
    const char *r = repl[rand_r(seed) % (sizeof(repl) / sizeof(repl[0]))];
    *alen = strlen(r);
    memcpy(a, r, *alen);
}

static void test_corpus(struct pattern_diff *d)
{
    for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
        const struct pcase *c = &corpus[i];
        size_t slen = strlen(c->s);
        if (strcmp(c->p, "a%zb") == 0) {
            slen = 3; /* "a\0b" */
        }
        int same = pd_same(d, c->op, c->s, slen, c->p, strlen(c->p), c->a, strlen(c->a), c->n);
        if (!same) {
            fprintf(stderr, "case %zu: %s(%s, %s, %s, %d)\n  LuaJIT: %s\n  Gust:   %s\n", i, c->op, c->s,
                    c->p, c->a, c->n, d->got_ref, d->got_own);
        }
        CHECK(same);
    }
}

static void test_random(struct pattern_diff *d, int rounds)
{
    static const char *const ops[] = {"find", "match", "gmatch", "gsub"};
    unsigned seed = 20261205;
    int reported = 0;
    for (int i = 0; i < rounds; i++) {
        char s[16], p[128], a[16];
        size_t slen, plen, alen;
        random_case(&seed, s, &slen, p, &plen, a, &alen);
        const char *op = ops[rand_r(&seed) % 4];
        int n = rand_r(&seed) % 3 == 0 ? (int)(rand_r(&seed) % 9) - 4 : NONE;
        int same = pd_same(d, op, s, slen, p, plen, a, alen, n);
        if (!same && reported++ < 10) {
            fprintf(stderr, "random %d: %s(%.*s, %.*s, %.*s, %d)\n  LuaJIT: %s\n  Gust:   %s\n", i, op,
                    (int)slen, s, (int)plen, p, (int)alen, a, n, d->got_ref, d->got_own);
        }
        CHECK(same);
    }
}

/* The pattern of issue 24 ends in the timeout, and quickly after it. */
static void test_budget(void)
{
    static const char script[] = "return { on_event = function(ev)\n"
                                 "  string.find(string.rep('a', 5000), '.-.-.-.-b')\n"
                                 "end }";
    struct gust_flow_opts o = {.script_path = "stuck.lua",
                               .script_text = script,
                               .script_len = sizeof(script) - 1,
                               .timeout_ms = 200};
    struct gust_flow *f = NULL;
    struct gust_err err = {{0}};
    CHECK(gust_flow_create(&o, &f, &err) == 0);
    if (f == NULL) {
        return;
    }
    struct gust_emits out = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = gust_flow_run(f, "{}", 2, NULL, &out, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    CHECK(rc == GUST_ETIMEOUT);
    CHECK_CONTAINS(err.msg, "stuck.lua:2: timeout: the script ran longer than 200 ms");
    CHECK(took >= 0.19 && took < 1.5);
    gust_emits_free(&out);
    gust_flow_destroy(f);
}

int main(int argc, char **argv)
{
    struct pattern_diff d;
    if (pd_open(&d) != 0) {
        return 1;
    }
    test_corpus(&d);
    test_random(&d, argc > 1 ? atoi(argv[1]) : 20000);
    pd_close(&d);
    test_budget();
    return check_result("test_pattern");
}
