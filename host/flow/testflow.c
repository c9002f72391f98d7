/* `gust test-flow SCRIPT CASE.json...`: golden tests for a flow without a bus.
 * Each case runs on a fresh flow, so cases do not see each other's state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "flow.h"

#define WHY_MAX 1024

struct json_case {
    yajl_val root;
    yajl_val input;
    yajl_val expect_emits; /* an array, or NULL when an error is expected */
    const char *expect_error;
    long timeout_ms;
};

static char *read_file(const char *path, char *why)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        snprintf(why, WHY_MAX, "cannot open %s", path);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            char *p = realloc(text, cap);
            if (p == NULL) {
                free(text);
                fclose(fp);
                snprintf(why, WHY_MAX, "out of memory reading %s", path);
                return NULL;
            }
            text = p;
        }
        n = fread(text + len, 1, cap - len - 1, fp);
        len += n;
    } while (n > 0);
    text[len] = '\0';
    fclose(fp);
    return text;
}

/* Parses and checks the shape of a case file; unknown keys are refused so a typo
 * cannot turn a case into one that checks nothing. */
static int load_case(const char *path, struct json_case *c, char *why)
{
    char *text = read_file(path, why);
    if (text == NULL) {
        return -1;
    }
    char perr[256];
    c->root = yajl_tree_parse(text, perr, sizeof(perr));
    free(text);
    if (c->root == NULL) {
        snprintf(why, WHY_MAX, "%s: %s", path, strtok(perr, "\n"));
        return -1;
    }
    if (!YAJL_IS_OBJECT(c->root)) {
        snprintf(why, WHY_MAX, "%s: a case is a JSON object", path);
        return -1;
    }
    for (size_t i = 0; i < c->root->u.object.len; i++) {
        const char *k = c->root->u.object.keys[i];
        yajl_val v = c->root->u.object.values[i];
        if (strcmp(k, "input") == 0 && YAJL_IS_OBJECT(v)) {
            c->input = v;
        } else if (strcmp(k, "expect_emits") == 0 && YAJL_IS_ARRAY(v)) {
            c->expect_emits = v;
        } else if (strcmp(k, "expect_error") == 0 && YAJL_IS_STRING(v)) {
            c->expect_error = v->u.string;
        } else if (strcmp(k, "timeout_ms") == 0 && YAJL_IS_INTEGER(v) && v->u.number.i > 0) {
            c->timeout_ms = (long)v->u.number.i;
        } else if (strcmp(k, "description") != 0) {
            snprintf(why, WHY_MAX, "%s: unexpected key or type: \"%s\"", path, k);
            return -1;
        }
    }
    if (c->input == NULL || (c->expect_emits == NULL) == (c->expect_error == NULL)) {
        snprintf(why, WHY_MAX,
                 "%s: a case needs an \"input\" object and either \"expect_emits\" (an array) "
                 "or \"expect_error\" (a string)",
                 path);
        return -1;
    }
    return 0;
}

/* yajl_gen keeps the raw text of numbers, so big integers and fractions reach the
 * flow exactly as written in the case. */
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
        yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
    } else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        yajl_gen_bool(g, YAJL_IS_TRUE(v));
    } else {
        yajl_gen_null(g);
    }
}

static int is_integer_text(const char *s)
{
    return strpbrk(s, ".eE") == NULL;
}

/* Numbers compare by value: integers by their digits (so big ones are exact), any
 * other pair as doubles (347 equals 347.0). */
static int numbers_equal(const char *a, const char *b)
{
    if (is_integer_text(a) && is_integer_text(b)) {
        return strcmp(a, b) == 0;
    }
    return strtod(a, NULL) == strtod(b, NULL);
}

/* Compares two JSON values; on a difference writes its path into `path`. */
static int json_equal(yajl_val want, yajl_val got, char *path, size_t cap)
{
    size_t used = strlen(path);
    if (want->type != got->type) {
        return 0;
    }
    switch (want->type) {
    case yajl_t_string:
        return strcmp(want->u.string, got->u.string) == 0;
    case yajl_t_number:
        return numbers_equal(want->u.number.r, got->u.number.r);
    case yajl_t_object:
        if (want->u.object.len != got->u.object.len) {
            return 0;
        }
        for (size_t i = 0; i < want->u.object.len; i++) {
            const char *k = want->u.object.keys[i];
            snprintf(path + used, cap - used, ".%s", k);
            const char *key_path[] = {k, NULL};
            yajl_val g = yajl_tree_get(got, key_path, yajl_t_any);
            if (g == NULL || !json_equal(want->u.object.values[i], g, path, cap)) {
                return 0;
            }
        }
        break;
    case yajl_t_array:
        if (want->u.array.len != got->u.array.len) {
            return 0;
        }
        for (size_t i = 0; i < want->u.array.len; i++) {
            snprintf(path + used, cap - used, "[%zu]", i);
            if (!json_equal(want->u.array.values[i], got->u.array.values[i], path, cap)) {
                return 0;
            }
        }
        break;
    default: /* true, false, null: the type says it all */
        break;
    }
    path[used] = '\0';
    return 1;
}

/* Errors carry a traceback over several lines; the report keeps one line a case:
 * "\n\t" becomes "; " and a lone newline a space, so the text never grows. */
static void one_line(char *s)
{
    char *w = s;
    for (char *r = s; *r != '\0'; r++) {
        if (r[0] == '\n' && r[1] == '\t') {
            *w++ = ';';
            *w++ = ' ';
            r++;
        } else {
            *w++ = (*r == '\n' || *r == '\t') ? ' ' : *r;
        }
    }
    *w = '\0';
}

static int check_emits(const struct json_case *c, const struct gust_emits *out, char *why)
{
    const yajl_val want = c->expect_emits;
    if (out->n != want->u.array.len) {
        snprintf(why, WHY_MAX, "expected %zu emits, got %zu", want->u.array.len, out->n);
        return -1;
    }
    for (size_t i = 0; i < out->n; i++) {
        yajl_val w = want->u.array.values[i];
        const char *sub_path[] = {"subject", NULL};
        const char *pay_path[] = {"payload", NULL};
        yajl_val subject = yajl_tree_get(w, sub_path, yajl_t_string);
        yajl_val payload = yajl_tree_get(w, pay_path, yajl_t_any);
        if (subject == NULL || payload == NULL) {
            snprintf(why, WHY_MAX, "expect_emits[%zu] needs \"subject\" and \"payload\"", i);
            return -1;
        }
        if (strcmp(subject->u.string, out->v[i].subject) != 0) {
            snprintf(why, WHY_MAX, "emit %zu: expected subject %s, got %s", i + 1, subject->u.string,
                     out->v[i].subject);
            return -1;
        }
        yajl_val got = yajl_tree_parse(out->v[i].payload, NULL, 0);
        char path[256] = "";
        int same = got != NULL && json_equal(payload, got, path, sizeof(path));
        yajl_tree_free(got);
        if (!same) {
            snprintf(why, WHY_MAX, "emit %zu: payload differs at %s: got %s", i + 1,
                     path[0] ? path : "the top", out->v[i].payload);
            return -1;
        }
    }
    return 0;
}

static int run_case(const char *script, const char *case_path, char *why)
{
    struct json_case c = {0};
    struct gust_flow *flow = NULL;
    struct gust_emits out = {0};
    struct gust_err err = {{0}};
    yajl_gen g = NULL;
    int rc = -1;

    if (load_case(case_path, &c, why) != 0) {
        goto done;
    }
    g = yajl_gen_alloc(NULL);
    if (g == NULL) {
        snprintf(why, WHY_MAX, "out of memory");
        goto done;
    }
    gen_value(g, c.input);
    const unsigned char *input;
    size_t input_len;
    yajl_gen_get_buf(g, &input, &input_len);

    struct gust_flow_opts opts = {.script_path = script, .timeout_ms = c.timeout_ms};
    int status = gust_flow_create(&opts, &flow, &err);
    if (status == 0) {
        status = gust_flow_run(flow, (const char *)input, input_len, &out, &err);
    }
    one_line(err.msg);
    if (c.expect_error != NULL) {
        if (status == 0) {
            snprintf(why, WHY_MAX, "expected an error containing \"%s\", got %zu emits", c.expect_error,
                     out.n);
        } else if (strstr(err.msg, c.expect_error) == NULL) {
            snprintf(why, WHY_MAX, "expected an error containing \"%s\", got: %s", c.expect_error, err.msg);
        } else {
            rc = 0;
        }
    } else if (status != 0) {
        snprintf(why, WHY_MAX, "%s", err.msg);
    } else {
        rc = check_emits(&c, &out, why);
    }
done:
    gust_emits_free(&out);
    gust_flow_destroy(flow);
    yajl_gen_free(g);
    yajl_tree_free(c.root);
    return rc;
}

/* The case name: the file name without directory and .json. */
static void case_name(const char *path, char *name, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0) {
        n -= 5;
    }
    snprintf(name, cap, "%.*s", (int)n, base);
}

int gust_flow_test_main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SCRIPT CASE.json...\n", argc > 0 ? argv[0] : "test-flow");
        return 2;
    }
    int passed = 0, failed = 0;
    for (int i = 2; i < argc; i++) {
        char why[WHY_MAX] = "";
        char name[256];
        case_name(argv[i], name, sizeof(name));
        if (run_case(argv[1], argv[i], why) == 0) {
            printf("PASS %s\n", name);
            passed++;
        } else {
            printf("FAIL %s: %s\n", name, why);
            failed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed > 0 ? 1 : 0;
}
