/* gust_cfg_check: every type with good and bad values, defaults, the structural errors
 * (unknown, duplicate, arity, blocks, missing), the accessors and the help table. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../check.h"
#include "conf.h"
#include "conf_schema.h"

/* Every key bound into a struct, so the binder is tested on every type. */
struct keys {
    const char *name;
    int64_t count;
    int enabled;
    int64_t max_body;
    int64_t timeout;
    const char *script;
    const char *subject;
    const char *source;
    struct gust_list urls;
    const char *listen;
    const char *token;
};

#define KEY(f, T, def, flags, help) GUST_KEY(struct keys, f, T, def, flags, help)
static const struct gust_schema_key schema[] = {
    KEY(name, STR, NULL, GUST_K_REQUIRED, "what the flow is called"),
    KEY(count, INT, "3", 0, "how many"),
    KEY(enabled, BOOL, "off", GUST_K_RELOADABLE, "on or off"),
    KEY(max_body, SIZE, "1m", GUST_K_RELOADABLE, "largest body"),
    KEY(timeout, DURATION, "5s", 0, "how long to wait"),
    KEY(script, PATH, NULL, 0, "the Lua file"),
    KEY(subject, SUBJECT, NULL, 0, "where to publish"),
    KEY(source, FILTER, "ev.>", 0, "what to read"),
    KEY(urls, LIST, "nats://a:4222 nats://b:4222", 0, "servers"),
    KEY(listen, ADDR, "127.0.0.1:8787", 0, "address to bind"),
    KEY(token, STR, "s3cret", GUST_K_SECRET, "bearer token"),
    GUST_KEY_END,
};

static const char *const ignore[] = {"use", "route", NULL};

/* Parses text (named "conf/t.conf") and checks its first statement, a block. Returns the
 * check's code; *cfg and *conf are set on success and must be freed by the caller. */
static int check_text(const char *text, const struct gust_schema_key *keys, struct gust_conf **conf,
                      struct gust_cfg **cfg, struct gust_err *err)
{
    int rc = gust_conf_parse_string(text, strlen(text), "conf/t.conf", conf, err);
    *cfg = NULL;
    if (rc != 0) {
        return rc;
    }
    rc = gust_cfg_check(&(*conf)->root.children[0], "flow 'orders'", keys, ignore, cfg, err);
    gust_conf_destroy(*conf);
    *conf = NULL;
    return rc;
}

static void test_values(void)
{
    static const char text[] = "flow orders {\n"
                               "    name orders;\n"
                               "    count -42;\n"
                               "    enabled yes;\n"
                               "    max_body 64k;\n"
                               "    timeout 250ms;\n"
                               "    script scripts/orders.lua;\n"
                               "    subject ev.orders.out;\n"
                               "    source ev.*.in;\n"
                               "    urls x y;\n"
                               "    urls z;\n"
                               "    listen [::1]:9000;\n"
                               "    use http_out;\n"
                               "    route a { b c; }\n"
                               "}\n";
    struct gust_conf *conf;
    struct gust_cfg *cfg;
    struct gust_err err = {""};
    int rc = check_text(text, schema, &conf, &cfg, &err);

    CHECK_INT(rc, 0, "%s", err.msg);
    CHECK_STR(gust_cfg_str(cfg, "name"), "orders", "str");
    CHECK_INT(gust_cfg_int(cfg, "count"), -42, "int");
    CHECK_STR(gust_cfg_str(cfg, "count"), "-42", "int text");
    CHECK_INT(gust_cfg_int(cfg, "enabled"), 1, "bool");
    CHECK_INT(gust_cfg_int(cfg, "max_body"), 65536, "size");
    CHECK_STR(gust_cfg_str(cfg, "max_body"), "64k", "size text");
    CHECK_INT(gust_cfg_int(cfg, "timeout"), 250, "duration");
    CHECK_STR(gust_cfg_str(cfg, "script"), "conf/scripts/orders.lua", "path relative to the file");
    CHECK_STR(gust_cfg_str(cfg, "subject"), "ev.orders.out", "subject");
    CHECK_STR(gust_cfg_str(cfg, "source"), "ev.*.in", "filter");
    CHECK_INT(gust_cfg_count(cfg, "urls"), 3, "list accumulates, default replaced");
    CHECK_STR(gust_cfg_item(cfg, "urls", 0), "x", "list item 0");
    CHECK_STR(gust_cfg_item(cfg, "urls", 2), "z", "list item 2");
    CHECK_STR(gust_cfg_item(cfg, "urls", 3), NULL, "list item out of range");
    CHECK_STR(gust_cfg_str(cfg, "urls"), "x", "list str is the first item");
    CHECK_STR(gust_cfg_str(cfg, "listen"), "[::1]:9000", "addr");
    CHECK_INT(gust_cfg_count(cfg, "name"), 1, "single-valued count");
    CHECK_STR(gust_cfg_item(cfg, "name", 0), "orders", "single-valued item");
    CHECK_STR(gust_cfg_where(cfg, "count"), "conf/t.conf:3", "where of a key");
    CHECK_STR(gust_cfg_where(cfg, "urls"), "conf/t.conf:10", "where of a repeated list");
    CHECK_STR(gust_cfg_where(cfg, "token"), "conf/t.conf:1", "where of a defaulted key");
    CHECK_STR(gust_cfg_str(cfg, "token"), "s3cret", "default still there");
    CHECK_STR(gust_cfg_str(NULL, "nope"), NULL, "no block reads NULL");
    CHECK_INT(gust_cfg_count(NULL, "nope"), 0, "no block counts 0");

    /* The same values bound into the struct, field by field. */
    struct keys k;
    memset(&k, 0xAB, sizeof(k));
    CHECK_INT(gust_cfg_bind(cfg, schema, sizeof(schema[0]), &k, &err), 0, "%s", err.msg);
    CHECK_STR(k.name, "orders", "bound str");
    CHECK_INT(k.count, -42, "bound int");
    CHECK_INT(k.enabled, 1, "bound bool");
    CHECK_INT(k.max_body, 65536, "bound size");
    CHECK_INT(k.timeout, 250, "bound duration");
    CHECK_STR(k.script, "conf/scripts/orders.lua", "bound path");
    CHECK_STR(k.subject, "ev.orders.out", "bound subject");
    CHECK_STR(k.source, "ev.*.in", "bound filter");
    CHECK_INT(k.urls.n, 3, "bound list");
    CHECK_STR(k.urls.items[2], "z", "bound list item");
    CHECK_STR(k.listen, "[::1]:9000", "bound addr");
    CHECK_STR(k.token, "s3cret", "bound default");
    gust_cfg_destroy(cfg);
}

/* Reads key through `accessor` (0 str, 1 int, 2 count, 3 item, 4 where) in a child
 * process; returns what it wrote on stderr, or "" when it exited normally. */
static const char *read_in_child(const struct gust_cfg *cfg, int accessor, const char *key)
{
    static char out[512];
    int fd[2];
    out[0] = '\0';
    if (pipe(fd) != 0) {
        return "pipe failed";
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], STDERR_FILENO);
        switch (accessor) {
        case 0: (void)gust_cfg_str(cfg, key); break;
        case 1: (void)gust_cfg_int(cfg, key); break;
        case 2: (void)gust_cfg_count(cfg, key); break;
        case 3: (void)gust_cfg_item(cfg, key, 0); break;
        default: (void)gust_cfg_where(cfg, key); break;
        }
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd[0], out + n, sizeof(out) - 1 - n)) > 0) {
        n += (size_t)r;
    }
    out[n] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
        return "";
    }
    return out;
}

/* The schema is the only place a key is declared: reading one it does not declare is a
 * bug that must fail whatever test reaches it, not read as "not set". */
static void test_undeclared(void)
{
    struct gust_conf *conf;
    struct gust_cfg *cfg;
    struct gust_err err = {""};
    CHECK_INT(check_text("f {\n name orders;\n}", schema, &conf, &cfg, &err), 0, "%s", err.msg);
    for (int a = 0; a < 5; a++) {
        CHECK_STR(read_in_child(cfg, a, "nmae"),
                  "gust: bug: key 'nmae' read from conf/t.conf:1, whose schema does not declare it\n",
                  "accessor %d aborts on an undeclared key", a);
        CHECK_STR(read_in_child(cfg, a, "timeout"), "", "accessor %d reads a declared key", a);
    }
    gust_cfg_destroy(cfg);
}

/* A bound key missing from the checked values is a bug (another schema): an error. An
 * absent key without a default binds NULL; a table with unbound keys skips them. */
static void test_bind(void)
{
    static const struct gust_schema_key other[] = {
        GUST_KEY(struct keys, name, STR, NULL, 0, "x"),
        GUST_KEY_AS(struct keys, script, "not_in_cfg", PATH, NULL, 0, "x"),
        GUST_KEY_END,
    };
    static const struct gust_schema_key unbound[] = {
        {"name", GUST_T_STR, NULL, 0, "read by name only", 0, 0, 0, NULL},
        GUST_KEY_END,
    };
    struct gust_conf *conf;
    struct gust_cfg *cfg;
    struct gust_err err = {""};
    struct keys k = {0};

    CHECK_INT(check_text("flow orders { name a; }", schema, &conf, &cfg, &err), 0, "%s", err.msg);
    CHECK_INT(gust_cfg_bind(cfg, other, sizeof(other[0]), &k, &err), GUST_EINVAL, "wrong schema");
    CHECK_STR(err.msg, "binding key 'not_in_cfg': not in the checked configuration", "wrong schema");
    k.name = "untouched";
    CHECK_INT(gust_cfg_bind(cfg, unbound, sizeof(unbound[0]), &k, &err), 0, "unbound");
    CHECK_STR(k.name, "untouched", "unbound keys are not written");
    CHECK_INT(gust_cfg_bind(cfg, schema, sizeof(schema[0]), &k, &err), 0, "bind");
    CHECK_STR(k.script, NULL, "absent without default");
    CHECK_INT(k.urls.n, 2, "absent list"); /* the default's two items */
    gust_cfg_destroy(cfg);
}

/* A prefix key: `lib.NAME VALUE;` lines append NAME, VALUE pairs in order; the bare key,
 * a line without exactly one value and `lib.` alone are refused with file:line. */
static void test_prefix(void)
{
    static const struct gust_schema_key prefixed[] = {
        GUST_KEY(struct keys, name, STR, NULL, 0, "x"),
        GUST_KEY_AS(struct keys, urls, "lib", LIST, NULL, GUST_K_PREFIX, "the library's own settings"),
        GUST_KEY_END,
    };
    struct gust_conf *conf;
    struct gust_cfg *cfg;
    struct gust_err err = {""};
    struct keys k = {0};

    CHECK_INT(check_text("flow orders { lib.linger.ms 20; name a; lib.acks all; }", prefixed, &conf, &cfg, &err),
              0, "%s", err.msg);
    CHECK_INT(gust_cfg_bind(cfg, prefixed, sizeof(prefixed[0]), &k, &err), 0, "bind");
    CHECK_INT(k.urls.n, 4, "pairs");
    if (k.urls.n == 4) {
        CHECK_STR(k.urls.items[0], "linger.ms", "first name");
        CHECK_STR(k.urls.items[1], "20", "first value");
        CHECK_STR(k.urls.items[2], "acks", "second name");
        CHECK_STR(k.urls.items[3], "all", "second value");
    }
    gust_cfg_destroy(cfg);
    static const char *const bad[][2] = {
        {"flow orders {\n lib linger.ms 20;\n}", "conf/t.conf:2: 'lib' in flow 'orders' is written lib.NAME VALUE"},
        {"flow orders {\n lib.linger.ms 20 30;\n}", "conf/t.conf:2: 'lib.linger.ms' in flow 'orders' takes one value"},
        {"flow orders {\n lib. 20;\n}", "conf/t.conf:2: unknown key 'lib.' in flow 'orders'"},
        {"flow orders {\n libx.a 20;\n}", "conf/t.conf:2: unknown key 'libx.a' in flow 'orders'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_INT(check_text(bad[i][0], prefixed, &conf, &cfg, &err), GUST_ECONFIG, "%s", bad[i][0]);
        CHECK_CONTAINS(err.msg, bad[i][1], "%s", bad[i][0]);
    }
}

/* The reload diff compares values as written after defaults. */
static void test_same(void)
{
    struct gust_conf *conf;
    struct gust_cfg *a, *b, *c;
    struct gust_err err = {""};

    CHECK_INT(check_text("f { name x; urls p q; }", schema, &conf, &a, &err), 0, "%s", err.msg);
    CHECK_INT(check_text("f { name x; urls p;\n urls q; count 3; }", schema, &conf, &b, &err), 0, "%s",
              err.msg);
    CHECK_INT(check_text("f { name y; urls q p; }", schema, &conf, &c, &err), 0, "%s", err.msg);
    CHECK_INT(gust_cfg_same(a, b, "urls"), 1, "same list, written twice");
    CHECK_INT(gust_cfg_same(a, b, "count"), 1, "a default and the same value written");
    CHECK_INT(!gust_cfg_same(a, c, "name"), 1, "changed str");
    CHECK_INT(!gust_cfg_same(a, c, "urls"), 1, "reordered list");
    CHECK_INT(gust_cfg_same(a, c, "timeout"), 1, "both defaulted");
    gust_cfg_destroy(a);
    gust_cfg_destroy(b);
    gust_cfg_destroy(c);
}

static void test_defaults(void)
{
    static const char text[] = "flow orders { name n; script /abs/x.lua; }";
    struct gust_conf *conf;
    struct gust_cfg *cfg;
    struct gust_err err = {""};
    int rc = check_text(text, schema, &conf, &cfg, &err);

    CHECK_INT(rc, 0, "%s", err.msg);
    CHECK_INT(gust_cfg_int(cfg, "count"), 3, "int default");
    CHECK_INT(gust_cfg_int(cfg, "enabled"), 0, "bool default");
    CHECK_INT(gust_cfg_int(cfg, "max_body"), 1 << 20, "size default");
    CHECK_INT(gust_cfg_int(cfg, "timeout"), 5000, "duration default");
    CHECK_STR(gust_cfg_str(cfg, "script"), "/abs/x.lua", "absolute path kept");
    CHECK_STR(gust_cfg_str(cfg, "subject"), NULL, "no default");
    CHECK_INT(gust_cfg_count(cfg, "subject"), 0, "no default count");
    CHECK_INT(gust_cfg_count(cfg, "urls"), 2, "list default split");
    CHECK_STR(gust_cfg_item(cfg, "urls", 1), "nats://b:4222", "list default item");
    CHECK_STR(gust_cfg_str(cfg, "source"), "ev.>", "filter default");
    gust_cfg_destroy(cfg);
    gust_cfg_destroy(NULL);
}

struct bad_case {
    const char *line; /* statement on line 3, after `name n;` */
    const char *msg;  /* the whole message */
};

static const struct bad_case bad_cases[] = {
    {"count 1x;", "conf/t.conf:3: invalid integer '1x' for 'count' (e.g. 10, -3)"},
    {"count 99999999999999999999;",
     "conf/t.conf:3: invalid integer '99999999999999999999' for 'count' (e.g. 10, -3)"},
    {"enabled maybe;",
     "conf/t.conf:3: invalid boolean 'maybe' for 'enabled' (on, off, true, false, yes, no)"},
    {"max_body 12q;", "conf/t.conf:3: invalid size '12q' for 'max_body' (e.g. 512k, 1m)"},
    {"timeout 5x;", "conf/t.conf:3: invalid duration '5x' for 'timeout' (e.g. 250ms, 5s, 2m, 1h)"},
    {"script \"\";",
     "conf/t.conf:3: invalid path '' for 'script' (a file name, relative to this file's "
     "directory)"},
    {"subject ev.*;",
     "conf/t.conf:3: invalid subject 'ev.*' for 'subject' (dot-separated tokens without spaces "
     "or wildcards, e.g. ev.orders)"},
    {"subject ev..x;",
     "conf/t.conf:3: invalid subject 'ev..x' for 'subject' (dot-separated tokens without spaces "
     "or wildcards, e.g. ev.orders)"},
    {"source ev.>.x;",
     "conf/t.conf:3: invalid subject filter 'ev.>.x' for 'source' (e.g. ev.orders, ev.*.in, "
     "ev.>)"},
    {"listen localhost;",
     "conf/t.conf:3: invalid address 'localhost' for 'listen' (host:port, e.g. 127.0.0.1:8787 "
     "or [::1]:8787)"},
    {"listen 1.2.3.4:70000;",
     "conf/t.conf:3: invalid address '1.2.3.4:70000' for 'listen' (host:port, e.g. "
     "127.0.0.1:8787 or [::1]:8787)"},
    {"nope 1;",
     "conf/t.conf:3: unknown key 'nope' in flow 'orders' (expected one of: name, count, "
     "enabled, max_body, timeout, script, subject, source, urls, listen, token, use, route)"},
    {"count 1;\ncount 2;",
     "conf/t.conf:4: duplicate key 'count' in flow 'orders' (first set at conf/t.conf:3)"},
    {"count 1 2;",
     "conf/t.conf:3: 'count' in flow 'orders' takes one value, not 2 (quote a value with "
     "spaces)"},
    {"count;", "conf/t.conf:3: 'count' in flow 'orders' needs a value"},
    {"urls;", "conf/t.conf:3: 'urls' in flow 'orders' needs a value"},
    {"count { x 1; }", "conf/t.conf:3: 'count' in flow 'orders' takes a value, not a block"},
};

static void test_bad_values(void)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        char text[512];
        struct gust_conf *conf;
        struct gust_cfg *cfg = (struct gust_cfg *)1;
        struct gust_err err = {""};
        snprintf(text, sizeof(text), "flow orders {\n    name n;\n    %s\n}\n", bad_cases[i].line);
        CHECK_INT(check_text(text, schema, &conf, &cfg, &err), GUST_ECONFIG, "%s", bad_cases[i].line);
        CHECK_STR(err.msg, bad_cases[i].msg, "%s", bad_cases[i].line);
        CHECK(cfg == NULL);
    }
}

static void test_missing_required(void)
{
    struct gust_conf *conf;
    struct gust_cfg *cfg;
    struct gust_err err = {""};

    CHECK_INT(check_text("\nflow orders {\n count 1;\n}", schema, &conf, &cfg, &err), GUST_ECONFIG,
              "missing");
    CHECK_STR(err.msg, "conf/t.conf:2: missing required key 'name' in flow 'orders'", "missing");
}

/* A default its own type rejects is a bug in the table, reported even when the user sets
 * the key. */
static void test_bad_default(void)
{
    static const struct gust_schema_key bad[] = {
        {"max_body", GUST_T_SIZE, "12q", 0, "largest body", 0, 0, 0, NULL},
        GUST_KEY_END,
    };
    static const struct gust_schema_key bad_type[] = {
        {"x", (enum gust_type)99, NULL, 0, "", 0, 0, 0, NULL},
        GUST_KEY_END,
    };
    struct gust_conf *conf;
    struct gust_cfg *cfg;
    struct gust_err err = {""};

    CHECK_INT(check_text("b { max_body 1m; }", bad, &conf, &cfg, &err), GUST_EINVAL, "bad default");
    CHECK_STR(err.msg, "schema of flow 'orders': default '12q' of key 'max_body' is not a valid size",
              "bad default");
    CHECK_INT(check_text("b { }", bad_type, &conf, &cfg, &err), GUST_EINVAL, "bad type");
    CHECK_STR(err.msg, "schema of flow 'orders': key 'x' has unknown type 99", "bad type");
}

/* The top level is checked through the root; its blocks belong to the caller. */
static void test_top_level(void)
{
    static const struct gust_schema_key top[] = {
        {"state_dir", GUST_T_PATH, NULL, GUST_K_REQUIRED, "runtime files", 0, 0, 0, NULL},
        GUST_KEY_END,
    };
    static const char *const blocks[] = {"http", "flow", NULL};
    static const char text[] = "http { listen x; }\nflow a { }\n";
    struct gust_conf *conf = NULL;
    struct gust_cfg *cfg = NULL;
    struct gust_err err = {""};

    CHECK_INT(gust_conf_parse_string(text, strlen(text), "etc/host.conf", &conf, &err), 0, "%s", err.msg);
    if (conf == NULL) {
        return;
    }
    CHECK_INT(gust_cfg_check(&conf->root, "host.conf", top, blocks, &cfg, &err), GUST_ECONFIG, "top missing");
    CHECK_STR(err.msg, "etc/host.conf: missing required key 'state_dir' in host.conf", "top missing");
    gust_conf_destroy(conf);

    static const char good[] = "state_dir var;\nhttp { }\n";
    CHECK_INT(gust_conf_parse_string(good, strlen(good), "etc/host.conf", &conf, &err), 0, "%s", err.msg);
    CHECK_INT(gust_cfg_check(&conf->root, "host.conf", top, blocks, &cfg, &err), 0, "%s", err.msg);
    CHECK_STR(gust_cfg_str(cfg, "state_dir"), "etc/var", "top path");
    CHECK_STR(gust_cfg_where(cfg, "state_dir"), "etc/host.conf:1", "top where");
    gust_cfg_destroy(cfg);
    gust_conf_destroy(conf);
}

/* Bounds and choices declared in the table: checked with file:line, a default outside
 * them is a bug in the table, and the help shows them. */
struct bounded {
    int64_t slices;
    int64_t wait;
    int64_t cache;
    const char *format;
    const char *node;
    double rate;
    const char *endpoint;
    double share;
};

#define BKEY_RANGE(f, T, def, flags, lo, hi) GUST_KEY_RANGE(struct bounded, f, T, def, flags, lo, hi, #f)
static const struct gust_schema_key bounded_schema[] = {
    BKEY_RANGE(slices, INT, "1", 0, 1, 1024),
    BKEY_RANGE(wait, DURATION, "250ms", 0, 10, INT64_MAX),
    BKEY_RANGE(cache, SIZE, "8m", GUST_K_ZERO_OFF, 64 * 1024, 1 << 30),
    GUST_KEY_ENUM(struct bounded, format, "text", 0, "text|json", "how lines look"),
    GUST_KEY(struct bounded, node, NAME, NULL, 0, "a NATS name"),
    GUST_KEY(struct bounded, rate, RATE, NULL, 0, "how often"),
    GUST_KEY_URL(struct bounded, endpoint, "http://127.0.0.1:4318/v1/traces", 0, "http|https", "where to"),
    GUST_KEY(struct bounded, share, RATIO, "1.0", 0, "how much"),
    GUST_KEY_END,
};

static void test_bounds(void)
{
    static const struct bad_case bad[] = {
        {"slices 0;", "conf/t.conf:3: slices must be within 1..1024 in flow 'orders', not '0'"},
        {"slices 1025;", "conf/t.conf:3: slices must be within 1..1024 in flow 'orders', not '1025'"},
        {"wait 5ms;", "conf/t.conf:3: wait must be at least 10ms in flow 'orders', not '5ms'"},
        {"cache 1k;", "conf/t.conf:3: cache must be 0 (off) or within 64k..1g in flow 'orders', not '1k'"},
        {"format yaml;", "conf/t.conf:3: format must be one of text|json in flow 'orders', not 'yaml'"},
        {"format tex;", "conf/t.conf:3: format must be one of text|json in flow 'orders', not 'tex'"},
        {"node 'a\"b';", "conf/t.conf:3: invalid name 'a\"b' for 'node' (1 to 64 letters, digits, '_' and '-': NATS "
                          "takes it as it is)"},
        {"node a.b;", "conf/t.conf:3: invalid name 'a.b' for 'node' (1 to 64 letters, digits, '_' and '-': NATS takes "
                      "it as it is)"},
        {"rate 200;", "conf/t.conf:3: invalid rate '200' for 'rate' (N/s, N/m or N/h with N > 0, e.g. 200/s, 0.5/s, "
                      "10/m)"},
        {"rate 0/s;", "conf/t.conf:3: invalid rate '0/s' for 'rate' (N/s, N/m or N/h with N > 0, e.g. 200/s, 0.5/s, "
                      "10/m)"},
        {"rate 5/d;", "conf/t.conf:3: invalid rate '5/d' for 'rate' (N/s, N/m or N/h with N > 0, e.g. 200/s, 0.5/s, "
                      "10/m)"},
        {"share 1.5;", "conf/t.conf:3: invalid ratio '1.5' for 'share' (a decimal from 0 to 1, e.g. 1.0, 0.01)"},
        {"share 1e-2;", "conf/t.conf:3: invalid ratio '1e-2' for 'share' (a decimal from 0 to 1, e.g. 1.0, 0.01)"},
        /* A URL is never repeated: it may hold a password. */
        {"endpoint ftp://u:secret@h/x;", "conf/t.conf:3: endpoint must be a URL of scheme http|https in flow 'orders'"},
        {"endpoint HTTP://h/x;", "conf/t.conf:3: endpoint must be a URL of scheme http|https in flow 'orders'"},
        {"endpoint h:4318/x;", "conf/t.conf:3: invalid URL for 'endpoint' (scheme://[user[:password]@]host[:port][/path])"},
        {"endpoint http:///x;", "conf/t.conf:3: invalid URL for 'endpoint' (scheme://[user[:password]@]host[:port][/path])"},
        {"endpoint http://h:0/;", "conf/t.conf:3: invalid URL for 'endpoint' (scheme://[user[:password]@]host[:port][/path])"},
        {"endpoint http://h:65536/;", "conf/t.conf:3: invalid URL for 'endpoint' (scheme://[user[:password]@]host[:port][/path])"},
        {"endpoint http://h:/;", "conf/t.conf:3: invalid URL for 'endpoint' (scheme://[user[:password]@]host[:port][/path])"},
        {"endpoint http://[::1/;", "conf/t.conf:3: invalid URL for 'endpoint' (scheme://[user[:password]@]host[:port][/path])"},
        {"endpoint 'http://h/a b';", "conf/t.conf:3: invalid URL for 'endpoint' (scheme://[user[:password]@]host[:port][/path])"},
        {"endpoint http://u:p@:80/;", "conf/t.conf:3: invalid URL for 'endpoint' (scheme://[user[:password]@]host[:port][/path])"},
    };
    static const char *const good[] = {"slices 1;", "slices 1024;", "wait 10ms;", "wait 2h;", "cache 0;",
                                       "cache 64k;", "cache 1g;", "format json;", "format text;", "node gust-1_a;",
                                       "rate 200/s;", "rate 0.5/s;", "rate 10/h;", "endpoint https://h/x;",
                                       "endpoint 'http://u:p@[::1]:8443/v1/{payload.x}?a=b#f';", "endpoint http://h:1;", "share 0;", "share 0.25;"};
    struct gust_conf *conf;
    struct gust_cfg *cfg;
    struct gust_err err = {""};
    char text[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "flow orders {\n\n    %s\n}\n", bad[i].line);
        CHECK_INT(check_text(text, bounded_schema, &conf, &cfg, &err), GUST_ECONFIG, "%s", bad[i].line);
        CHECK_STR(err.msg, bad[i].msg, "%s", bad[i].line);
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        snprintf(text, sizeof(text), "flow orders {\n    %s\n}\n", good[i]);
        CHECK_INT(check_text(text, bounded_schema, &conf, &cfg, &err), 0, "%s", good[i]);
        gust_cfg_destroy(cfg);
    }

    static const struct gust_schema_key bad_default[] = {
        GUST_KEY_RANGE(struct bounded, slices, INT, "0", 0, 1, 1024, "slices"),
        GUST_KEY_END,
    };
    CHECK_INT(check_text("b { slices 2; }", bad_default, &conf, &cfg, &err), GUST_EINVAL,
              "default out of bounds");
    CHECK_STR(err.msg, "schema of flow 'orders': default '0' of key 'slices' is not a valid integer",
              "default out of bounds");

    struct bounded b;
    CHECK_INT(check_text("b {\n rate 10/m;\n}", bounded_schema, &conf, &cfg, &err), 0, "%s", err.msg);
    CHECK_INT(gust_cfg_bind(cfg, bounded_schema, sizeof(bounded_schema[0]), &b, &err), 0, "%s", err.msg);
    CHECK(b.rate > 0.16666 && b.rate < 0.16667, "a rate binds per second: %g", b.rate);
    CHECK_STR(b.endpoint, "http://127.0.0.1:4318/v1/traces", "a URL binds as written");
    CHECK(b.share == 1.0, "a ratio binds as a double: %g", b.share);
    gust_cfg_destroy(cfg);
    CHECK_INT(check_text("b { }", bounded_schema, &conf, &cfg, &err), 0, "%s", err.msg);
    CHECK_INT(gust_cfg_bind(cfg, bounded_schema, sizeof(bounded_schema[0]), &b, &err), 0, "%s", err.msg);
    CHECK(b.rate == 0, "no rate binds as 0: %g", b.rate);
    gust_cfg_destroy(cfg);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    if (f == NULL) {
        return;
    }
    gust_schema_print_help(f, "b:", bounded_schema);
    fclose(f);
    CHECK_CONTAINS(buf, "slices (within 1..1024)", "help range");
    CHECK_CONTAINS(buf, "wait (at least 10ms)", "help at least");
    CHECK_CONTAINS(buf, "cache (0 (off) or within 64k..1g)", "help zero off");
    CHECK_CONTAINS(buf, "how lines look (one of text|json)", "help choices");
    CHECK_CONTAINS(buf, "where to (a URL of scheme http|https)", "help schemes");
    free(buf);
}

static void test_help(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    CHECK(f != NULL);
    if (f == NULL) {
        return;
    }
    gust_schema_print_help(f, "flow:", schema);
    fclose(f);
    CHECK_CONTAINS(buf, "flow:\n  KEY ", "title");
    CHECK_CONTAINS(buf, "  max_body  size      1m ", "size row");
    CHECK_CONTAINS(buf, "required ", "flags");
    CHECK_CONTAINS(buf, "largest body", "help text");
    CHECK_CONTAINS(buf, "(hidden)", "secret default hidden");
    CHECK(strstr(buf, "s3cret") == NULL);
    free(buf);
}

int main(void)
{
    test_values();
    test_bind();
    test_same();
    test_defaults();
    test_bad_values();
    test_missing_required();
    test_bad_default();
    test_top_level();
    test_help();
    test_bounds();
    test_prefix();
    test_undeclared();
    return check_result("test_conf_schema");
}
