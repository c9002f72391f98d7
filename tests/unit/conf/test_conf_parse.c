/* host.conf syntax: a file using every feature, and a table of broken inputs with the
 * exact file:line message each must produce. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../check.h"
#include "conf.h"

#ifndef GUST_CONF_TEST_DATA
#error "GUST_CONF_TEST_DATA must name tests/unit/conf/data"
#endif
#define DATA GUST_CONF_TEST_DATA

/* Checks node's name, args (joined with '|') and line. */
static void check_node(const char *label, const struct gust_conf_node *n, const char *name,
                       const char *args, int line)
{
    char joined[512] = "";
    for (size_t i = 0; i < n->nargs; i++) {
        size_t used = strlen(joined);
        snprintf(joined + used, sizeof(joined) - used, "%s%s", i ? "|" : "", n->args[i]);
    }
    CHECK_STR(n->name, name, "%s", label);
    CHECK_STR(joined, args, "%s", label);
    CHECK_INT(n->line, line, "%s", label);
}

static void test_good_file(void)
{
    struct gust_conf *c = NULL;
    struct gust_err err = {""};
    int rc = gust_conf_parse_file(DATA "/good.conf", &c, &err);

    CHECK_INT(rc, 0, "%s", err.msg);
    if (rc != 0) {
        return;
    }
    const struct gust_conf_node *top = c->root.children;
    CHECK_INT(c->root.nchildren, 11, "top-level count");
    CHECK_STR(c->root.file, DATA "/good.conf", "root file");
    CHECK_STR(c->dir, DATA, "dir");
    if (c->root.nchildren != 11) {
        gust_conf_destroy(c);
        return;
    }
    check_node("state_dir", &top[0], "state_dir", "var", 2);
    CHECK(!top[0].is_block);

    const struct gust_conf_node *http = &top[1];
    check_node("http", http, "http", "", 3);
    CHECK(http->is_block);
    CHECK_INT(http->nchildren, 8, "http children");
    if (http->nchildren == 8) {
        const struct gust_conf_node *h = http->children;
        check_node("listen", &h[0], "listen", "127.0.0.1:8787", 4);
        check_node("double quotes", &h[1], "base_path", "/gust", 5);
        check_node("escapes", &h[2], "greeting", "say \"hi\"\tnow\\n", 6);
        check_node("single quotes", &h[3], "single", "no ${expansion} 'here'", 7);
        check_node("env in bare word", &h[4], "env_bare", "10.1.2.3:8787", 8);
        check_node("env in double quotes", &h[5], "env_quoted", "10.1.2.3 and $ alone", 9);
        check_node("lone dollars", &h[6], "dollar", "$5|a$b|${X}", 10);
        check_node("empty strings", &h[7], "empty", "|", 11);
        CHECK_INT(h[7].nargs, 2, "empty strings count");
    }
    check_node("# inside a word", &top[2], "topic", "sensors/#", 13);

    const struct gust_conf_node *nested = &top[3];
    check_node("nested", nested, "nested", "a", 14);
    CHECK(nested->nchildren == 1 && nested->children[0].nchildren == 1);
    if (nested->nchildren == 1 && nested->children[0].nchildren == 1) {
        check_node("nested b", &nested->children[0], "b", "c", 14);
        check_node("nested d", &nested->children[0].children[0], "d", "e", 14);
    }

    /* Included statements keep their own file:line. */
    check_node("include", &top[4], "from_one", "1", 1);
    CHECK_STR(top[4].file, DATA "/inc/one.conf", "include file");
    check_node("glob a", &top[5], "glob_a", "1", 1);
    CHECK_STR(top[5].file, DATA "/inc/glob/a.conf", "glob a file");
    check_node("glob b", &top[6], "glob_b", "2", 2);
    check_node("relative to includer", &top[7], "from_one", "1", 1);
    CHECK_STR(top[7].file, DATA "/inc/glob/../one.conf", "relative to includer file");

    /* inc/nothing/ matches nothing, which is fine; include works inside blocks. */
    check_node("include in a block", &top[8], "block_inc", "", 18);
    CHECK(top[8].nchildren == 1 && strcmp(top[8].children[0].name, "from_one") == 0);
    check_node("backslash kept", &top[9], "regex", "^a\\d+$", 19);
    check_node("statement across lines", &top[10], "multi", "line|statement", 20);
    CHECK_STR(top[10].file, DATA "/good.conf", "back in good.conf");
    gust_conf_destroy(c);
}

/* A name without '/' makes includes relative to the working directory. */
static void test_string_includes_from_cwd(void)
{
    static const char text[] = "include inc/one.conf;\n";
    struct gust_conf *c = NULL;
    struct gust_err err = {""};
    char cwd[PATH_MAX];

    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    CHECK(chdir(DATA) == 0);
    int rc = gust_conf_parse_string(text, strlen(text), "<test>", &c, &err);
    CHECK_INT(rc, 0, "%s", err.msg);
    if (rc == 0) {
        CHECK_INT(c->root.nchildren, 1, "one statement");
        CHECK_STR(c->root.children[0].file, "inc/one.conf", "its file");
        CHECK_STR(c->root.file, "<test>", "root file");
        CHECK_INT(c->root.line, 0, "root line");
    }
    gust_conf_destroy(c);
    CHECK(chdir(cwd) == 0);
}

struct bad_case {
    const char *text;
    const char *msg; /* the whole message must be exactly this */
};

static const struct bad_case bad_cases[] = {
    {"a b", "t.conf:1: expected ';' or '{' after 'a'"},
    {"}", "t.conf:1: unexpected '}'"},
    {"a;\n}\n", "t.conf:2: unexpected '}'"},
    {";", "t.conf:1: unexpected ';'"},
    {"{ a; }", "t.conf:1: unexpected '{' (a block needs a name)"},
    {"http {\n    listen 1.2.3.4\n}\n", "t.conf:2: expected ';' or '{' after 'listen'"},
    {"http {\n    listen 1.2.3.4;\n",
     "t.conf:3: unexpected end of file, expecting '}' to close 'http' opened at t.conf:1"},
    {"a {\n b {\n c;\n }\n",
     "t.conf:5: unexpected end of file, expecting '}' to close 'a' opened at t.conf:1"},
    {"a;\nb \"abc;\nc;\n", "t.conf:2: unterminated string"},
    {"a 'abc;", "t.conf:1: unterminated string"},
    {"a \"abc\\", "t.conf:1: unterminated string"},
    {"a \"x\ny\";", "t.conf:1: unterminated string"},
    {"a\"b\";", "t.conf:1: unexpected quote inside a word"},
    {"a \"b\"c;", "t.conf:1: unexpected 'c' after a quoted string"},
    {"\n\na ${GUST_TEST_UNSET_VAR};",
     "t.conf:3: environment variable 'GUST_TEST_UNSET_VAR' is not set"},
    {"a \"${GUST_TEST_UNSET_VAR}\";",
     "t.conf:1: environment variable 'GUST_TEST_UNSET_VAR' is not set"},
    {"a ${;", "t.conf:1: bad '${': expected a variable name (letters, digits, '_') and '}'"},
    {"a ${}x;", "t.conf:1: bad '${': expected a variable name (letters, digits, '_') and '}'"},
    {"a ${A-B};", "t.conf:1: bad '${': expected a variable name (letters, digits, '_') and '}'"},
    {"a ${1A};", "t.conf:1: bad '${': expected a variable name (letters, digits, '_') and '}'"},
    {"include;", "t.conf:1: 'include' takes exactly one path"},
    {"include a b;", "t.conf:1: 'include' takes exactly one path"},
    {"include a { }", "t.conf:1: 'include' cannot open a block"},
    {"\ninclude /nonexistent/x.conf;",
     "t.conf:2: cannot include '/nonexistent/x.conf': No such file or directory"},
    {"include " DATA ";", "t.conf:1: cannot include '" DATA "': not a regular file"},
    {"include /dev/zero;", "t.conf:1: cannot include '/dev/zero': not a regular file"},
    {"include " DATA "/bad_include.conf;",
     DATA "/broken/broken.conf:3: expected ';' or '{' after 'listen'"},
    {"include " DATA "/cycle_a.conf;",
     DATA "/cycle_b.conf:1: include cycle: '" DATA "/cycle_a.conf' is already being read"},
};

static void test_bad_inputs(void)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        struct gust_conf *c = (struct gust_conf *)1;
        struct gust_err err = {""};
        const char *text = bad_cases[i].text;
        int rc = gust_conf_parse_string(text, strlen(text), "t.conf", &c, &err);
        CHECK_INT(rc, GUST_ECONFIG, "%s", text);
        CHECK_STR(err.msg, bad_cases[i].msg, "%s", text);
        CHECK(c == NULL);
    }
}

/* Inputs built in code: too long, too deep, binary. */
static void test_limits(void)
{
    struct gust_conf *c = NULL;
    struct gust_err err = {""};
    char buf[GUST_CONF_MAX_LINE + 64];
    size_t n = 0;

    n = (size_t)snprintf(buf, sizeof(buf), "a;\nb ");
    memset(buf + n, 'x', GUST_CONF_MAX_LINE);
    n += GUST_CONF_MAX_LINE;
    buf[n++] = ';';
    CHECK_INT(gust_conf_parse_string(buf, n, "t.conf", &c, &err), GUST_ECONFIG, "long line");
    CHECK_STR(err.msg, "t.conf:2: line longer than 8192 bytes", "long line");

    /* Exactly the limit is fine. */
    memset(buf, 'x', GUST_CONF_MAX_LINE - 1);
    buf[GUST_CONF_MAX_LINE - 1] = ';';
    CHECK_INT(gust_conf_parse_string(buf, GUST_CONF_MAX_LINE, "t", &c, &err), 0, "line at the limit");
    gust_conf_destroy(c);

    CHECK_INT(gust_conf_parse_string("a;\nb\0c;", 7, "t.conf", &c, &err), GUST_ECONFIG, "NUL byte");
    CHECK_STR(err.msg, "t.conf:2: NUL byte in file", "NUL byte");

    /* Text need not be NUL-terminated: only len bytes are read. */
    CHECK_INT(gust_conf_parse_string("a;b c", 2, "t", &c, &err), 0, "length bounded");
    CHECK_INT(c ? (int64_t)c->root.nchildren : -1, 1, "length bounded count");
    gust_conf_destroy(c);

    n = 0;
    for (int i = 0; i < GUST_CONF_MAX_DEPTH; i++) {
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "b%d {\n", i);
    }
    size_t open_only = n;
    for (int i = 0; i < GUST_CONF_MAX_DEPTH; i++) {
        buf[n++] = '}';
    }
    CHECK_INT(gust_conf_parse_string(buf, n, "t", &c, &err), 0, "depth at the limit");
    gust_conf_destroy(c);
    n = open_only + (size_t)snprintf(buf + open_only, sizeof(buf) - open_only, "deep { }");
    CHECK_INT(gust_conf_parse_string(buf, n, "t.conf", &c, &err), GUST_ECONFIG, "too deep");
    CHECK_STR(err.msg, "t.conf:33: blocks nested too deeply (max 32)", "too deep");

    CHECK_INT(gust_conf_parse_string("", 0, "t", &c, &err), 0, "empty input");
    CHECK_INT(c ? (int64_t)c->root.nchildren : -1, 0, "empty input count");
    gust_conf_destroy(c);
    gust_conf_destroy(NULL);
}

/* A chain of includes one longer than the limit, built in a temporary directory. */
static void test_include_depth(void)
{
    char dir[] = "/tmp/gust-conf-test-XXXXXX";
    char path[PATH_MAX];
    struct gust_conf *c = NULL;
    struct gust_err err = {""};

    CHECK(mkdtemp(dir) != NULL);
    for (int i = 0; i <= GUST_CONF_MAX_INCLUDE_DEPTH + 1; i++) {
        snprintf(path, sizeof(path), "%s/d%d.conf", dir, i);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f != NULL) {
            fprintf(f, "level %d;\ninclude d%d.conf;\n", i, i + 1);
            fclose(f);
        }
    }
    /* d0 includes d1 ... d16 includes d17: 16 nested includes are allowed, the 17th not. */
    snprintf(path, sizeof(path), "%s/d0.conf", dir);
    CHECK_INT(gust_conf_parse_file(path, &c, &err), GUST_ECONFIG, "include depth");
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "%s/d16.conf:2: includes nested too deeply (max 16)", dir);
    CHECK_STR(err.msg, want, "include depth");

    for (int i = 0; i <= GUST_CONF_MAX_INCLUDE_DEPTH + 1; i++) {
        snprintf(path, sizeof(path), "%s/d%d.conf", dir, i);
        unlink(path);
    }
    rmdir(dir);
}

static void test_missing_file(void)
{
    struct gust_conf *c = (struct gust_conf *)1;
    struct gust_err err = {""};
    CHECK_INT(gust_conf_parse_file(DATA "/missing.conf", &c, &err), GUST_ECONFIG, "missing");
    CHECK_STR(err.msg, DATA "/missing.conf: cannot read: No such file or directory", "missing");
    CHECK(c == NULL);
}

int main(void)
{
    setenv("GUST_TEST_HOST", "10.1.2.3", 1);
    unsetenv("GUST_TEST_UNSET_VAR");
    test_good_file();
    test_string_includes_from_cwd();
    test_bad_inputs();
    test_limits();
    test_include_depth();
    test_missing_file();
    return check_result("test_conf_parse");
}
