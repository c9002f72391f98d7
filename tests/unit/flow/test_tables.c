/* Lookup tables: loading CSV and JSON (and every error naming file:line), lookups from
 * Lua (fresh rows, number keys, read-only), and one set shared by flows on several
 * threads. */
#include <pthread.h>
#include <stdint.h>

#include "../../../host/common/buf.h"
#include "../../check.h"
#include "scripts.h"
#include "tables.h"

static char dir[256];

static const char *file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || fwrite(text, 1, strlen(text), fp) != strlen(text)) {
        perror(path);
        exit(2);
    }
    fclose(fp);
    return path;
}

static const char *row(const struct gust_tables *t, size_t i, const char *key)
{
    static char out[512];
    size_t len;
    const char *json = gust_table_find(gust_tables_at(t, i), key, strlen(key), &len);
    if (json == NULL) {
        return "(none)";
    }
    snprintf(out, sizeof(out), "%.*s", (int)len, json);
    return out;
}

/* Loads one file into a fresh set; returns the code and leaves the message in err. */
static int load(const char *name, const char *text, const char *key, struct gust_err *err)
{
    struct gust_tables *t;
    CHECK(gust_tables_create(&t, err) == 0);
    int rc = gust_tables_load_file(t, "t", file(name, text), key, NULL, err);
    gust_tables_unref(t);
    return rc;
}

static void test_csv(void)
{
    struct gust_tables *t;
    struct gust_err err;
    CHECK(gust_tables_create(&t, &err) == 0);
    const char *csv = "\xEF\xBB\xBF"
                      "code,name,note\r\n"
                      "FR,France,\"says \"\"bonjour\"\", eats\"\r\n"
                      "\r\n"
                      "DE,Deutschland,\"two\nlines\"\n"
                      "IT,Italia,\n"
                      "PT,\"\",\"\"";
    CHECK(gust_tables_load_file(t, "countries", file("c.csv", csv), "code", NULL, &err) == 0);
    CHECK(gust_tables_count(t) == 1 && gust_table_rows(gust_tables_at(t, 0)) == 4);
    CHECK_STR(gust_table_name(gust_tables_at(t, 0)), "countries");
    CHECK_STR(row(t, 0, "FR"),
              "{\"code\":\"FR\",\"name\":\"France\",\"note\":\"says \\\"bonjour\\\", eats\"}");
    CHECK_STR(row(t, 0, "DE"), "{\"code\":\"DE\",\"name\":\"Deutschland\",\"note\":\"two\\nlines\"}");
    CHECK_STR(row(t, 0, "IT"), "{\"code\":\"IT\",\"name\":\"Italia\",\"note\":\"\"}");
    CHECK_STR(row(t, 0, "PT"), "{\"code\":\"PT\",\"name\":\"\",\"note\":\"\"}");
    CHECK_STR(row(t, 0, "ES"), "(none)");
    CHECK(gust_tables_has(t, "countries") && !gust_tables_has(t, "cities"));
    CHECK(gust_tables_load_file(t, "countries", file("d.csv", "a\n1\n"), "a", "host.conf:9", &err) ==
          GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "table 'countries' is defined twice (table 'countries' at host.conf:9)");
    gust_tables_unref(t);

    static const struct {
        const char *text, *key, *error;
    } bad[] = {
        {"a,b\n1,2\n", NULL, "c.csv: a CSV table needs `key COLUMN;`"},
        {"", "a", "c.csv: the file is empty (a CSV table starts with a header row)"},
        {"a,b\n1,2\n", "c", "c.csv:1: the header has no column 'c' (the table's key)"},
        {"a,a\n1,2\n", "a", "c.csv:1: column 'a' is named twice in the header"},
        {"a,,b\n", "a", "c.csv:1: column 2 of the header has no name"},
        {"a,b\n1,2\n3\n", "a", "c.csv:3: 1 fields, but the header has 2 columns"},
        {"a,b\n1,2\n\n1,3\n", "a", "c.csv:4: duplicate key '1' (first at line 2)"},
        {"a,b\n,2\n", "a", "c.csv:2: the key 'a' is empty"},
        {"a,b\n1,x\"y\n", "a", "c.csv:2: a quote inside a field that does not start with one"},
        {"a,b\n1,\"x\"y\n", "a", "c.csv:2: text after a closing quote"},
        {"a,b\n1,\"x\n\n", "a", "c.csv:2: a quoted field is not closed"},
        {"a,b\r1,2\n", "a", "c.csv:1: a CR that is not followed by LF"},
        {"a,b\n1,\xC0\xAF\n", "a", "c.csv:2: field 2 is not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(load("c.csv", bad[i].text, bad[i].key, &err) == GUST_ECONFIG);
        CHECK_CONTAINS(err.msg, bad[i].error);
    }
}

static void test_json(void)
{
    struct gust_tables *t;
    struct gust_err err;
    CHECK(gust_tables_create(&t, &err) == 0);
    CHECK(gust_tables_load_file(t, "o",
                                file("o.json", "{\"FR\": {\"name\": \"France\", \"eu\": true},\n"
                                               " \"n\": 12.50, \"nul\\u0000l\": [null]}"),
                                NULL, NULL, &err) == 0);
    CHECK(gust_tables_load_file(t, "a",
                                file("a.json", "[{\"id\": 7, \"v\": 1e2},\n {\"id\": \"x\", \"v\": \"s\"}]"),
                                "id", NULL, &err) == 0);
    CHECK_STR(row(t, 0, "FR"), "{\"name\":\"France\",\"eu\":true}");
    CHECK_STR(row(t, 0, "n"), "12.50"); /* numbers as written */
    size_t len;
    CHECK(gust_table_find(gust_tables_at(t, 0), "nul\0l", 5, &len) != NULL && len == 6);
    CHECK_STR(row(t, 1, "7"), "{\"id\":7,\"v\":1e2}");
    CHECK_STR(row(t, 1, "x"), "{\"id\":\"x\",\"v\":\"s\"}");
    gust_tables_unref(t);

    static const struct {
        const char *name, *text, *key, *error;
    } bad[] = {
        {"j.json", "{\"a\": 1}", "id", "j.json: the file is a JSON object, whose member names are the keys"},
        {"j.json", "[{\"id\": 1}]", NULL, "j.json: an array of objects needs `key FIELD;`"},
        {"j.json", "[{\"id\": 1},\n 2]", "id", "j.json:2: element 2 is not an object"},
        {"j.json", "[{\"id\": 1},\n\n {\"di\": 2}]", "id", "j.json:3: element 2 has no 'id'"},
        {"j.json", "[{\"id\": 1},\n {\"id\": true}]", "id",
         "j.json:2: element 2 has no 'id' (a string or a number"},
        {"j.json", "[{\"id\": 1},\n {\"id\": 1}]", "id", "j.json:2: duplicate key '1' (first at line 1)"},
        {"j.json", "{\"a\": 1,\n\"a\": 2}", NULL, "j.json:2: duplicate key 'a' (first at line 1)"},
        {"j.json", "{\"\": 1}", NULL, "j.json:1: a member with an empty name"},
        {"j.json", "{\"a\": 1,\n \"b\": }", NULL, "j.json:2: "},
        {"j.json", "\"text\"", NULL, "j.json: a table is a JSON object or an array of objects"},
        {"j.txt", "{}", NULL, "j.txt: a table file ends with .csv or .json"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(load(bad[i].name, bad[i].text, bad[i].key, &err) == GUST_ECONFIG);
        CHECK_CONTAINS(err.msg, bad[i].error);
    }
    CHECK(gust_tables_create(&t, &err) == 0);
    CHECK(gust_tables_load_file(t, "t", "/nonexistent/x.csv", "a", "host.conf:3", &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg,
                   "/nonexistent/x.csv: cannot read: No such file or directory (table 't' at host.conf:3)");
    CHECK(gust_tables_load_file(t, "bad name", file("x.json", "{}"), NULL, NULL, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "invalid table name 'bad name'");
    CHECK(gust_tables_add_json(t, "inline", "[1]", 3, "k", "case.json: tables.inline", &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, "case.json: tables.inline: element 1 is not an object");
    gust_tables_unref(t);
}

static void test_lua(void)
{
    struct gust_tables *t;
    struct gust_err err;
    struct gust_emits out = {0};
    CHECK(gust_tables_create(&t, &err) == 0);
    CHECK(gust_tables_load_file(t, "countries", file("c.csv", "code,name\nFR,France\n42,Answer\n"), "code",
                                NULL, &err) == 0);
    const char *big = "{\"12345678901234567890\": \"big\"}";
    CHECK(gust_tables_add_json(t, "big", big, strlen(big), NULL, "inline", &err) == 0);
    struct gust_flow *f;
    struct gust_flow_opts opts = {.tables = t};
    CHECK(flow_from_text_opts("return { on_event = function(ev) EV = ev load(ev.code)() end }", opts, &f,
                              &err) == 0);
    gust_tables_unref(t); /* the flow keeps its own reference */
    const char *json = "{\"code\": \"local r = tables.countries[EV.k] r.name = 'changed' "
                       "emit('ev.x', {name = tables.countries.FR.name, n = #tables.countries, "
                       "  answer = tables.countries[42].name, none = tables.countries.ES == nil, "
                       "  big = tables.big[EV.big], s = tostring(tables.countries)})\", \"k\": \"FR\","
                       "\"big\": 12345678901234567890}";
    CHECK(gust_flow_run(f, json, strlen(json), NULL, &out, &err) == 0);
    static const char *const fields[] = {
        "\"name\":\"France\"", "\"n\":2",         "\"answer\":\"Answer\"",
        "\"none\":true",       "\"big\":\"big\"", "\"s\":\"lookup table 'countries' (2 rows)\""};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        CHECK_CONTAINS(out.n == 1 ? out.v[0].payload : "", fields[i]);
    }
    static const struct {
        const char *code, *error;
    } bad[] = {
        {"local x = tables.cities", "tables: no lookup table 'cities' (tables: countries, big)"},
        {"tables.countries.FR = {}", "tables.countries is read-only"},
        {"tables.extra = {}", "tables is read-only"},
        {"setmetatable(tables, nil)", "cannot change a protected metatable"},
        {"getmetatable(tables.countries).__index = nil", "attempt to index a boolean value"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char code[512];
        snprintf(code, sizeof(code), "{\"code\": \"%s\"}", bad[i].code);
        CHECK(gust_flow_run(f, code, strlen(code), NULL, &out, &err) == GUST_ECONFIG);
        CHECK_CONTAINS(err.msg, bad[i].error);
    }
    gust_flow_destroy(f);
    gust_emits_free(&out);

    CHECK(flow_from_text("local x = tables.any\nreturn { on_event = print }", 0, &f, &err) == GUST_ECONFIG);
    CHECK_CONTAINS(err.msg, ".lua:1: tables: no lookup table 'any' (tables: none are configured)");
}

/* Four flows on four threads read one set at once; the set is freed with the last. */
struct reader {
    struct gust_flow *flow;
    int bad;
};

static void *read_many(void *arg)
{
    struct reader *r = arg;
    struct gust_emits out = {0};
    struct gust_err err;
    for (int i = 0; i < 2000 && !r->bad; i++) {
        char json[64];
        int n = snprintf(json, sizeof(json), "{\"k\": \"k%d\", \"want\": %d}", i % 500, i % 500);
        r->bad |= gust_flow_run(r->flow, json, (size_t)n, NULL, &out, &err) != 0;
        gust_emits_clear(&out);
    }
    gust_emits_free(&out);
    gust_flow_destroy(r->flow);
    return NULL;
}

static void test_shared(void)
{
    struct gust_tables *t;
    struct gust_err err;
    CHECK(gust_tables_create(&t, &err) == 0);
    struct gust_buf json = {0};
    gust_buf_append(&json, "{", 1);
    for (int i = 0; i < 500; i++) {
        gust_buf_printf(&json, "%s\"k%d\": {\"v\": %d}", i > 0 ? "," : "", i, i);
    }
    gust_buf_append(&json, "}", 1);
    CHECK(gust_tables_add_json(t, "t", json.data, json.len, NULL, "inline", &err) == 0);
    gust_buf_free(&json);
    struct reader r[4] = {{0}};
    pthread_t th[4];
    struct gust_flow_opts opts = {.tables = t};
    for (int i = 0; i < 4; i++) {
        CHECK(flow_from_text_opts("return { on_event = function(ev)\n"
                                  "  if tables.t[ev.k].v ~= ev.want then error('wrong row') end end }",
                                  opts, &r[i].flow, &err) == 0);
    }
    gust_tables_unref(t);
    for (int i = 0; i < 4; i++) {
        CHECK(pthread_create(&th[i], NULL, read_many, &r[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(!r[i].bad);
    }
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gust-tables-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    test_csv();
    test_json();
    test_lua();
    test_shared();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_result("test_tables");
}
