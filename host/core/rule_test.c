#define _DEFAULT_SOURCE /* DT_DIR */
#include "rule_test.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "../common/file.h"
#include "../vpl/vpl.h"
#include "gust/sdk.h"

/* What one case feeds and expects: event texts as the engine takes them, and the
 * expected alerts as parsed trees. */
struct rule_case {
    char **events;
    size_t nevents;
    yajl_val *expected;
    size_t nexpected;
    yajl_val doc; /* a JSON-file case's whole document (owns what expected points into) */
};

/* The alerts the engine made, as parsed trees. */
struct alerts {
    yajl_val *v;
    size_t n;
    int oom;
};

static void case_free(struct rule_case *c)
{
    for (size_t i = 0; i < c->nevents; i++) {
        free(c->events[i]);
    }
    free(c->events);
    if (c->doc == NULL) {
        for (size_t i = 0; i < c->nexpected; i++) {
            yajl_tree_free(c->expected[i]);
        }
    }
    free(c->expected);
    yajl_tree_free(c->doc);
}

static int push(void *arrayp, size_t *n, size_t size, const void *item)
{
    char **array = arrayp;
    char *grown = realloc(*array, (*n + 1) * size);
    if (grown == NULL) {
        return -1;
    }
    memcpy(grown + *n * size, item, size);
    *array = grown;
    (*n)++;
    return 0;
}

/* ---- writing values, for events and for messages ---- */

static void gen_value(yajl_gen g, yajl_val v)
{
    if (YAJL_IS_OBJECT(v)) {
        yajl_gen_map_open(g);
        for (size_t i = 0; i < v->u.object.len; i++) {
            const char *k = v->u.object.keys[i];
            yajl_gen_string(g, (const unsigned char *)k, strlen(k));
            gen_value(g, v->u.object.values[i]);
        }
        yajl_gen_map_close(g);
    } else if (YAJL_IS_ARRAY(v)) {
        yajl_gen_array_open(g);
        for (size_t i = 0; i < v->u.array.len; i++) {
            gen_value(g, v->u.array.values[i]);
        }
        yajl_gen_array_close(g);
    } else if (YAJL_IS_STRING(v)) {
        yajl_gen_string(g, (const unsigned char *)v->u.string, strlen(v->u.string));
    } else if (YAJL_IS_NUMBER(v)) {
        /* The number as it was written: an integer beyond 2^53 keeps its digits. */
        yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
    } else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        yajl_gen_bool(g, YAJL_IS_TRUE(v));
    } else {
        yajl_gen_null(g);
    }
}

/* v as compact JSON in a malloc'd string, or NULL. */
static char *value_text(yajl_val v)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g == NULL) {
        return NULL;
    }
    gen_value(g, v);
    const unsigned char *out;
    size_t len;
    char *text = NULL;
    if (yajl_gen_get_buf(g, &out, &len) == yajl_gen_status_ok && (text = malloc(len + 1)) != NULL) {
        memcpy(text, out, len);
        text[len] = '\0';
    }
    yajl_gen_free(g);
    return text;
}

/* ---- reading a case ---- */

static int report_error(FILE *report, const char *path, const char *fmt, const char *arg)
{
    fprintf(report, "%s: ", path);
    fprintf(report, fmt, arg);
    fputc('\n', report);
    return GUST_RULE_TEST_ERROR;
}

/* {"events": [...], "expect_alerts": [...]} */
static int read_json_case(const char *path, struct rule_case *c, FILE *report)
{
    struct gust_buf text = {0};
    char why[256] = "";
    if (gust_file_read(path, &text) != 0 || gust_buf_append(&text, "", 1) != 0) {
        gust_buf_free(&text);
        return report_error(report, path, "cannot read: %s", strerror(errno));
    }
    c->doc = yajl_tree_parse((const char *)text.data, why, sizeof(why));
    gust_buf_free(&text);
    if (c->doc == NULL) {
        return report_error(report, path, "not JSON: %s", why);
    }
    const char *events_path[] = {"events", NULL};
    const char *expect_path[] = {"expect_alerts", NULL};
    yajl_val events = yajl_tree_get(c->doc, events_path, yajl_t_array);
    yajl_val expect = yajl_tree_get(c->doc, expect_path, yajl_t_array);
    if (!YAJL_IS_OBJECT(c->doc) || events == NULL || expect == NULL) {
        return report_error(report, path, "%s", "a case is {\"events\": [...], \"expect_alerts\": [...]}");
    }
    for (size_t i = 0; i < events->u.array.len; i++) {
        char *ev = value_text(events->u.array.values[i]);
        if (ev == NULL || push(&c->events, &c->nevents, sizeof(ev), &ev) != 0) {
            free(ev);
            return report_error(report, path, "%s", "out of memory");
        }
    }
    for (size_t i = 0; i < expect->u.array.len; i++) {
        yajl_val a = expect->u.array.values[i];
        if (!YAJL_IS_OBJECT(a)) {
            return report_error(report, path, "%s", "every expected alert is an object");
        }
        if (push(&c->expected, &c->nexpected, sizeof(a), &a) != 0) {
            return report_error(report, path, "%s", "out of memory");
        }
    }
    return GUST_RULE_TEST_PASS;
}

/* Calls line(ud, text, lineno) for every line of path that is not blank. */
static int each_line(const char *path, int (*line)(void *, char *, int), void *ud, FILE *report)
{
    struct gust_buf text = {0};
    if (gust_file_read(path, &text) != 0 || gust_buf_append(&text, "", 1) != 0) {
        gust_buf_free(&text);
        return report_error(report, path, "cannot read: %s", strerror(errno));
    }
    int rc = 0, lineno = 0;
    char *save = NULL;
    for (char *l = strtok_r((char *)text.data, "\n", &save); l != NULL && rc == 0; l = strtok_r(NULL, "\n", &save)) {
        lineno++;
        if (strspn(l, " \t\r") != strlen(l)) {
            rc = line(ud, l, lineno);
        }
    }
    gust_buf_free(&text);
    return rc;
}

struct line_ctx {
    struct rule_case *c;
    const char *path;
    FILE *report;
};

static int event_line(void *ud, char *text, int lineno)
{
    struct line_ctx *x = ud;
    (void)lineno;
    char *ev = strdup(text);
    if (ev == NULL || push(&x->c->events, &x->c->nevents, sizeof(ev), &ev) != 0) {
        free(ev);
        return report_error(x->report, x->path, "%s", "out of memory");
    }
    return 0;
}

static int expected_line(void *ud, char *text, int lineno)
{
    struct line_ctx *x = ud;
    char why[256] = "";
    yajl_val a = yajl_tree_parse(text, why, sizeof(why));
    if (!YAJL_IS_OBJECT(a)) {
        yajl_tree_free(a);
        fprintf(x->report, "%s:%d: an expected alert must be a JSON object%s%s\n", x->path, lineno,
                why[0] ? ": " : "", why);
        return GUST_RULE_TEST_ERROR;
    }
    if (push(&x->c->expected, &x->c->nexpected, sizeof(a), &a) != 0) {
        yajl_tree_free(a);
        return report_error(x->report, x->path, "%s", "out of memory");
    }
    return 0;
}

static int read_folder_case(const char *dir, struct rule_case *c, FILE *report)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/events.jsonl", dir);
    struct line_ctx x = {c, path, report};
    int rc = each_line(path, event_line, &x, report);
    if (rc == 0) {
        char exp[4096];
        snprintf(exp, sizeof(exp), "%s/expected.jsonl", dir);
        x.path = exp;
        rc = each_line(exp, expected_line, &x, report);
    }
    return rc;
}

/* ---- running and comparing ---- */

static void collect(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    struct alerts *a = ud;
    (void)stream;
    (void)topic;
    (void)len;
    yajl_val v = yajl_tree_parse(json, NULL, 0); /* the engine writes valid JSON: NULL is out of memory */
    if (v == NULL || push(&a->v, &a->n, sizeof(v), &v) != 0) {
        yajl_tree_free(v);
        a->oom = 1;
    }
}

/* 1 when a and b are the same JSON value; numbers by value. */
static int same_value(yajl_val a, yajl_val b)
{
    if (YAJL_IS_NUMBER(a) && YAJL_IS_NUMBER(b)) {
        if (YAJL_IS_INTEGER(a) && YAJL_IS_INTEGER(b)) {
            return a->u.number.i == b->u.number.i;
        }
        return YAJL_GET_DOUBLE(a) == YAJL_GET_DOUBLE(b);
    }
    if (a == NULL || b == NULL || a->type != b->type) {
        return a == b;
    }
    switch (a->type) {
    case yajl_t_string:
        return strcmp(a->u.string, b->u.string) == 0;
    case yajl_t_object:
        if (a->u.object.len != b->u.object.len) {
            return 0;
        }
        for (size_t i = 0; i < a->u.object.len; i++) {
            const char *path[] = {a->u.object.keys[i], NULL};
            yajl_val other = yajl_tree_get(b, path, yajl_t_any);
            if (other == NULL || !same_value(a->u.object.values[i], other)) {
                return 0;
            }
        }
        return 1;
    case yajl_t_array:
        if (a->u.array.len != b->u.array.len) {
            return 0;
        }
        for (size_t i = 0; i < a->u.array.len; i++) {
            if (!same_value(a->u.array.values[i], b->u.array.values[i])) {
                return 0;
            }
        }
        return 1;
    default: /* true, false, null: the type says it all */
        return 1;
    }
}

static yajl_val field(yajl_val obj, const char *key)
{
    const char *path[] = {key, NULL};
    return yajl_tree_get(obj, path, yajl_t_any);
}

static void report_value(FILE *report, const char *what, yajl_val v)
{
    char *text = value_text(v);
    fprintf(report, "%s%s", what, text != NULL ? text : "?");
    free(text);
}

/* Writes each difference between alert i as expected and as made; returns how many. */
static int compare_alert(const char *name, size_t i, yajl_val want, yajl_val got, FILE *report)
{
    int diffs = 0;
    for (size_t k = 0; k < want->u.object.len; k++) {
        const char *key = want->u.object.keys[k];
        yajl_val g = field(got, key);
        if (strcmp(key, "timestamp") == 0) {
            continue;
        }
        diffs++;
        if (g == NULL) {
            fprintf(report, "%s: alert %zu: missing field %s", name, i + 1, key);
            report_value(report, " (expected ", want->u.object.values[k]);
            fputs(")\n", report);
        } else if (!same_value(want->u.object.values[k], g)) {
            fprintf(report, "%s: alert %zu: %s:", name, i + 1, key);
            report_value(report, " expected ", want->u.object.values[k]);
            report_value(report, ", got ", g);
            fputc('\n', report);
        } else {
            diffs--;
        }
    }
    for (size_t k = 0; k < got->u.object.len; k++) {
        const char *key = got->u.object.keys[k];
        if (strcmp(key, "timestamp") != 0 && field(want, key) == NULL) {
            diffs++;
            fprintf(report, "%s: alert %zu: extra field %s", name, i + 1, key);
            report_value(report, " = ", got->u.object.values[k]);
            fputc('\n', report);
        }
    }
    return diffs;
}

static enum gust_rule_test_result run_case(const char *name, const char *program_path, struct rule_case *c,
                                           FILE *report)
{
    struct gust_buf src = {0};
    if (gust_file_read(program_path, &src) != 0) {
        gust_buf_free(&src);
        return report_error(report, program_path, "cannot read: %s", strerror(errno));
    }
    struct vpl_program *prog = NULL;
    struct vpl_engine *eng = NULL;
    struct vpl_error err;
    struct alerts made = {0};
    int rc = vpl_program_compile(src.data != NULL ? (const char *)src.data : "", src.len, program_path, &prog, &err);
    gust_buf_free(&src);
    if (rc != 0) {
        fprintf(report, "%s:%s\n", program_path, err.msg);
        return GUST_RULE_TEST_ERROR;
    }
    if (vpl_engine_create(prog, NULL, &eng, &err) != 0) {
        fprintf(report, "%s: %s\n", program_path, err.msg);
        vpl_program_destroy(prog);
        return GUST_RULE_TEST_ERROR;
    }
    for (size_t i = 0; i < c->nevents && !made.oom; i++) {
        /* Arrival time only types an event without one; cases give theirs. */
        const char *ev = c->events[i];
        int64_t tick;
        int kind;
        int rc = vpl_tick_of(ev, strlen(ev), &kind, &tick)
                     ? vpl_engine_tick(eng, kind, tick, collect, &made)
                     : vpl_engine_feed_json(eng, ev, strlen(ev), NULL, gust_clock_wall_ms(), collect, &made);
        if (rc != 0) {
            fprintf(report, "%s: event %zu skipped: %s\n", name, i + 1, vpl_engine_last_error(eng));
        }
    }
    vpl_engine_destroy(eng);
    vpl_program_destroy(prog);

    int diffs = 0;
    size_t both = made.n < c->nexpected ? made.n : c->nexpected;
    for (size_t i = 0; i < both; i++) {
        diffs += compare_alert(name, i, c->expected[i], made.v[i], report);
    }
    for (size_t i = both; i < c->nexpected; i++, diffs++) {
        fprintf(report, "%s: alert %zu not made", name, i + 1);
        report_value(report, ": ", c->expected[i]);
        fputc('\n', report);
    }
    for (size_t i = both; i < made.n; i++, diffs++) {
        fprintf(report, "%s: alert %zu not expected", name, i + 1);
        report_value(report, ": ", made.v[i]);
        fputc('\n', report);
    }
    for (size_t i = 0; i < made.n; i++) {
        yajl_tree_free(made.v[i]);
    }
    free(made.v);
    if (made.oom) {
        fprintf(report, "%s: out of memory\n", name);
        return GUST_RULE_TEST_ERROR;
    }
    fprintf(report, "%s: %s (%zu events, %zu alerts expected)\n", name, diffs ? "FAILED" : "ok", c->nevents,
            c->nexpected);
    return diffs ? GUST_RULE_TEST_FAIL : GUST_RULE_TEST_PASS;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

enum gust_rule_test_result gust_rule_test_case(const char *program_path, const char *case_path, FILE *report)
{
    struct rule_case c = {0};
    char own[4096];
    int rc;
    if (is_dir(case_path)) {
        snprintf(own, sizeof(own), "%s/program.vpl", case_path);
        struct stat st;
        if (stat(own, &st) == 0) {
            program_path = own;
        }
        rc = read_folder_case(case_path, &c, report);
    } else {
        rc = read_json_case(case_path, &c, report);
    }
    if (rc == 0 && program_path == NULL) {
        rc = report_error(report, case_path, "%s", "no program: name one, or put program.vpl in the case's folder");
    }
    if (rc == 0) {
        rc = run_case(case_path, program_path, &c, report);
    }
    case_free(&c);
    return rc;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* A case in a folder of cases: a *.json file or a folder holding events.jsonl. */
static int is_case(const char *dir, const char *name)
{
    char path[4096];
    size_t n = strlen(name);
    if (name[0] == '.') {
        return 0;
    }
    if (n > 5 && strcmp(name + n - 5, ".json") == 0) {
        return 1;
    }
    snprintf(path, sizeof(path), "%s/%s/events.jsonl", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

enum gust_rule_test_result gust_rule_test_dir(const char *program_path, const char *dir, FILE *report, int *passed,
                                              int *failed)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, by_name);
    int worst = GUST_RULE_TEST_PASS, ncases = 0;
    if (n < 0) {
        (*failed)++;
        return report_error(report, dir, "cannot read: %s", strerror(errno));
    }
    for (int i = 0; i < n; i++) {
        if (is_case(dir, names[i]->d_name)) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
            int rc = gust_rule_test_case(program_path, path, report);
            worst = rc > worst ? rc : worst;
            *(rc == GUST_RULE_TEST_PASS ? passed : failed) += 1;
            ncases++;
        }
        free(names[i]);
    }
    free(names);
    if (ncases == 0) {
        (*failed)++;
        return report_error(report, dir, "%s", "holds no case (*.json files or folders with events.jsonl)");
    }
    return worst;
}

int gust_rule_test_main(int argc, char **argv)
{
    int first = 1;
    const char *program = NULL;
    /* The program is optional when every case is a folder with its own program.vpl. */
    if (argc >= 2 && !is_dir(argv[1])) {
        size_t n = strlen(argv[1]);
        if (n > 4 && strcmp(argv[1] + n - 4, ".vpl") == 0) {
            program = argv[1];
            first = 2;
        }
    }
    if (first >= argc) {
        fprintf(stderr, "usage: gust vpl-test PROGRAM.vpl CASE...\n"
                        "       a CASE is a JSON file {\"events\": [...], \"expect_alerts\": [...]}, a folder with\n"
                        "       events.jsonl and expected.jsonl (and its own program.vpl), or a folder of cases\n");
        return 2;
    }
    int worst = GUST_RULE_TEST_PASS, passed = 0, failed = 0;
    for (int i = first; i < argc; i++) {
        char events[4096];
        snprintf(events, sizeof(events), "%s/events.jsonl", argv[i]);
        struct stat st;
        int rc;
        if (is_dir(argv[i]) && stat(events, &st) != 0) {
            rc = gust_rule_test_dir(program, argv[i], stdout, &passed, &failed);
        } else {
            rc = gust_rule_test_case(program, argv[i], stdout);
            *(rc == GUST_RULE_TEST_PASS ? &passed : &failed) += 1;
        }
        worst = rc > worst ? rc : worst;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return worst;
}
