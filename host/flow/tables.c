/* Lookup tables (tables.h): loaded from CSV or JSON into one arena per table holding
 * each row's key and compact JSON text, with a hash index over the keys. */
#include "tables.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/buf.h"
#include "../common/json_out.h"
#include "csv.h"
#include "jtree.h"
#include "keyidx.h"

struct trow {
    struct gust_key key; /* first, for the index; set once the arena stops moving */
    size_t key_off, json_off, json_len;
    int line; /* where the row is in its file, for duplicate-key errors */
};

struct gust_table {
    char *name;
    struct trow *rows;
    size_t n, cap;
    struct gust_buf arena; /* each row's key, NUL, JSON text, NUL */
    struct gust_keyidx index;
};

struct gust_tables {
    atomic_int refs;
    struct gust_table **v;
    size_t n;
};

static void table_free(struct gust_table *tb)
{
    if (tb == NULL) {
        return;
    }
    free(tb->name);
    free(tb->rows);
    gust_buf_free(&tb->arena);
    gust_keyidx_free(&tb->index);
    free(tb);
}

int gust_tables_create(struct gust_tables **out, struct gust_err *err)
{
    *out = calloc(1, sizeof(**out));
    if (*out == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    atomic_init(&(*out)->refs, 1);
    return 0;
}

struct gust_tables *gust_tables_ref(struct gust_tables *t)
{
    if (t != NULL) {
        atomic_fetch_add(&t->refs, 1);
    }
    return t;
}

void gust_tables_unref(struct gust_tables *t)
{
    if (t == NULL || atomic_fetch_sub(&t->refs, 1) != 1) {
        return;
    }
    for (size_t i = 0; i < t->n; i++) {
        table_free(t->v[i]);
    }
    free(t->v);
    free(t);
}

static int name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64) {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '-')) {
            return 0;
        }
    }
    return 1;
}

int gust_tables_has(const struct gust_tables *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->v[i]->name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

static int add_row(struct gust_table *tb, const char *key, size_t key_len, const char *json, size_t json_len,
                   int line)
{
    if (tb->n == tb->cap) {
        size_t cap = tb->cap ? tb->cap * 2 : 64;
        struct trow *rows = realloc(tb->rows, cap * sizeof(*rows));
        if (rows == NULL) {
            return GUST_ENOMEM;
        }
        tb->rows = rows;
        tb->cap = cap;
    }
    struct trow *r = &tb->rows[tb->n];
    r->key_off = tb->arena.len;
    r->json_off = r->key_off + key_len + 1;
    r->json_len = json_len;
    r->line = line;
    if (gust_buf_reserve(&tb->arena, key_len + json_len + 2) != 0) {
        return GUST_ENOMEM;
    }
    gust_buf_append(&tb->arena, key, key_len);
    gust_buf_append(&tb->arena, "", 1);
    gust_buf_append(&tb->arena, json, json_len);
    gust_buf_append(&tb->arena, "", 1);
    tb->n++;
    return 0;
}

/* The arena is complete: point the keys into it and index them, refusing a key given
 * twice. `file` names the source in errors (lines are known for files only). */
static int finish(struct gust_table *tb, const char *file, int has_lines, struct gust_err *err)
{
    for (size_t i = 0; i < tb->n; i++) {
        struct trow *r = &tb->rows[i];
        r->key.s = tb->arena.data + r->key_off;
        r->key.len = r->json_off - r->key_off - 1;
        r->key.hash = gust_key_hash(r->key.s, r->key.len);
        size_t j =
            gust_keyidx_find(&tb->index, tb->rows, sizeof(*tb->rows), r->key.s, r->key.len, r->key.hash);
        if (j != SIZE_MAX) {
            if (has_lines) {
                return gust_err_set(err, GUST_ECONFIG, "%s:%d: duplicate key '%.100s' (first at line %d)",
                                    file, r->line, r->key.s, tb->rows[j].line);
            }
            return gust_err_set(err, GUST_ECONFIG, "%s: duplicate key '%.100s'", file, r->key.s);
        }
        if (gust_keyidx_add(&tb->index, tb->rows, sizeof(*tb->rows), i + 1, i) != 0) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    return 0;
}

/* ---- CSV ---- */

struct csv_load {
    struct gust_table *tb;
    const char *file;
    const char *key;
    char **columns; /* the header, once read */
    size_t *column_lens;
    size_t ncolumns;
    size_t key_column;
    struct gust_buf json;
    char why[300];
};

static int csv_header(struct csv_load *c, const char *const *fields, const size_t *lens, size_t n)
{
    c->columns = calloc(n, sizeof(*c->columns));
    c->column_lens = calloc(n, sizeof(*c->column_lens));
    if (c->columns == NULL || c->column_lens == NULL) {
        return GUST_ENOMEM;
    }
    c->ncolumns = n;
    c->key_column = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] == 0) {
            snprintf(c->why, sizeof(c->why), "column %zu of the header has no name", i + 1);
            return GUST_ECONFIG;
        }
        for (size_t j = 0; j < i; j++) {
            if (lens[j] == lens[i] && memcmp(fields[j], fields[i], lens[i]) == 0) {
                snprintf(c->why, sizeof(c->why), "column '%.100s' is named twice in the header", fields[i]);
                return GUST_ECONFIG;
            }
        }
        if ((c->columns[i] = malloc(lens[i] + 1)) == NULL) {
            return GUST_ENOMEM;
        }
        memcpy(c->columns[i], fields[i], lens[i] + 1);
        c->column_lens[i] = lens[i];
        if (strcmp(fields[i], c->key) == 0) { /* fields hold no NUL (csv.h) */
            c->key_column = i;
        }
    }
    if (c->key_column == SIZE_MAX) {
        snprintf(c->why, sizeof(c->why), "the header has no column '%.100s' (the table's key)", c->key);
        return GUST_ECONFIG;
    }
    return 0;
}

static int csv_row(void *ud, int line, const char *const *fields, const size_t *lens, size_t n)
{
    struct csv_load *c = ud;
    if (c->columns == NULL) {
        return csv_header(c, fields, lens, n);
    }
    if (n != c->ncolumns) {
        snprintf(c->why, sizeof(c->why), "%zu fields, but the header has %zu columns", n, c->ncolumns);
        return GUST_ECONFIG;
    }
    if (lens[c->key_column] == 0) {
        snprintf(c->why, sizeof(c->why), "the key '%.100s' is empty", c->key);
        return GUST_ECONFIG;
    }
    c->json.len = 0;
    int rc = gust_buf_append(&c->json, "{", 1);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = i > 0 ? gust_buf_append(&c->json, ",", 1) : 0;
        rc = rc ? rc : gust_json_append_string(&c->json, c->columns[i], c->column_lens[i]);
        rc = rc ? rc : gust_buf_append(&c->json, ":", 1);
        rc = rc ? rc : gust_json_append_string(&c->json, fields[i], lens[i]);
    }
    rc = rc ? rc : gust_buf_append(&c->json, "}", 1);
    rc =
        rc ? rc : add_row(c->tb, fields[c->key_column], lens[c->key_column], c->json.data, c->json.len, line);
    return rc;
}

static int load_csv(struct gust_table *tb, const char *file, const char *text, size_t len, const char *key,
                    struct gust_err *err)
{
    if (key == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: a CSV table needs `key COLUMN;`", file);
    }
    struct csv_load c = {.tb = tb, .file = file, .key = key};
    int line = 0;
    int rc = gust_csv_parse(text, len, csv_row, &c, c.why, sizeof(c.why), &line);
    if (rc == 0 && c.columns == NULL) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: the file is empty (a CSV table starts with a header row)",
                          file);
    } else if (rc == GUST_ENOMEM) {
        rc = gust_err_set(err, rc, "out of memory");
    } else if (rc != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s:%d: %s", file, line, c.why);
    }
    for (size_t i = 0; c.columns != NULL && i < c.ncolumns; i++) {
        free(c.columns[i]);
    }
    free(c.columns);
    free(c.column_lens);
    gust_buf_free(&c.json);
    return rc != 0 ? rc : finish(tb, file, 1, err);
}

/* ---- JSON ---- */

static int line_of(const char *text, size_t len, const struct gust_jnode *n)
{
    return gust_jtree_line(text, len,
                           n->type == GUST_J_OBJECT || n->type == GUST_J_ARRAY ? n->start : n->end);
}

static int load_json(struct gust_table *tb, const char *file, int has_lines, const char *text, size_t len,
                     const char *key, struct gust_err *err)
{
    struct gust_jnode *root = NULL;
    char why[200];
    size_t at = 0;
    int rc = gust_jtree_parse(text, len, &root, why, sizeof(why), &at);
    if (rc != 0) {
        rc = rc == GUST_ENOMEM ? rc : GUST_ECONFIG;
        if (has_lines) {
            return gust_err_set(err, rc, "%s:%d: %s", file, gust_jtree_line(text, len, at), why);
        }
        return gust_err_set(err, rc, "%s: %s", file, why);
    }
    struct gust_buf json = {0};
    char where[64] = "";
    if (root->type == GUST_J_OBJECT) {
        if (key != NULL) {
            rc = gust_err_set(err, GUST_ECONFIG,
                              "%s: the file is a JSON object, whose member names are the keys: "
                              "`key` is for CSV files and arrays of objects",
                              file);
        }
        for (size_t i = 0; i < root->n && rc == 0; i++) {
            int line = line_of(text, len, root->items[i]);
            if (has_lines) {
                snprintf(where, sizeof(where), ":%d", line);
            }
            json.len = 0;
            if (root->key_lens[i] == 0) {
                rc = gust_err_set(err, GUST_ECONFIG, "%s%s: a member with an empty name (keys are not empty)",
                                  file, where);
            } else if ((rc = gust_jtree_write(root->items[i], &json)) == 0) {
                rc = add_row(tb, root->keys[i], root->key_lens[i], json.data, json.len, line);
            }
        }
    } else if (root->type == GUST_J_ARRAY) {
        if (key == NULL) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: an array of objects needs `key FIELD;`", file);
        }
        for (size_t i = 0; i < root->n && rc == 0; i++) {
            const struct gust_jnode *row = root->items[i];
            int line = line_of(text, len, row);
            if (has_lines) {
                snprintf(where, sizeof(where), ":%d", line);
            }
            const struct gust_jnode *k = gust_jtree_get(row, key);
            json.len = 0;
            if (row->type != GUST_J_OBJECT) {
                rc =
                    gust_err_set(err, GUST_ECONFIG, "%s%s: element %zu is not an object", file, where, i + 1);
            } else if (k == NULL || (k->type != GUST_J_STRING && k->type != GUST_J_NUMBER) || k->len == 0) {
                rc = gust_err_set(err, GUST_ECONFIG,
                                  "%s%s: element %zu has no '%s' (a string or a number: the key)", file,
                                  where, i + 1, key);
            } else if ((rc = gust_jtree_write(row, &json)) == 0) {
                rc = add_row(tb, k->s, k->len, json.data, json.len, line);
            }
        }
    } else {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: a table is a JSON object or an array of objects", file);
    }
    if (rc == GUST_ENOMEM) {
        gust_err_set(err, rc, "out of memory");
    }
    gust_buf_free(&json);
    gust_jtree_free(root);
    return rc != 0 ? rc : finish(tb, file, has_lines, err);
}

/* ---- the set ---- */

static int add_table(struct gust_tables *t, const char *name, struct gust_table **out, struct gust_err *err)
{
    if (!name_valid(name)) {
        return gust_err_set(err, GUST_ECONFIG, "invalid table name '%s': use letters, digits, '_' and '-'",
                            name);
    }
    if (gust_tables_has(t, name)) {
        return gust_err_set(err, GUST_ECONFIG, "table '%s' is defined twice", name);
    }
    struct gust_table **v = realloc(t->v, (t->n + 1) * sizeof(*v));
    struct gust_table *tb = calloc(1, sizeof(*tb));
    if (v != NULL) {
        t->v = v;
    }
    if (v == NULL || tb == NULL || (tb->name = strdup(name)) == NULL) {
        free(tb);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    *out = tb;
    return 0;
}

static int read_file(const char *path, struct gust_buf *out, struct gust_err *err)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        return gust_err_set(err, GUST_ECONFIG, "%s: cannot read: %s", path, strerror(errno));
    }
    char chunk[65536];
    size_t got;
    int rc = 0;
    while (rc == 0 && (got = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
        if (out->len + got > GUST_TABLE_MAX_FILE) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: larger than %u MiB", path, GUST_TABLE_MAX_FILE >> 20);
        } else if (gust_buf_append(out, chunk, got) != 0) {
            rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    if (rc == 0 && ferror(fp)) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: cannot read: %s", path, strerror(errno));
    }
    fclose(fp);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcasecmp(s + n - k, suffix) == 0;
}

int gust_tables_load_file(struct gust_tables *t, const char *name, const char *path, const char *key,
                          const char *where, struct gust_err *err)
{
    struct gust_table *tb = NULL;
    struct gust_buf text = {0};
    int rc = add_table(t, name, &tb, err);
    if (rc == 0 && !ends_with(path, ".csv") && !ends_with(path, ".json")) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: a table file ends with .csv or .json", path);
    }
    rc = rc ? rc : read_file(path, &text, err);
    if (rc == 0) {
        const char *data = text.data != NULL ? text.data : "";
        rc = ends_with(path, ".csv") ? load_csv(tb, path, data, text.len, key, err)
                                     : load_json(tb, path, 1, data, text.len, key, err);
    }
    gust_buf_free(&text);
    if (rc != 0) {
        table_free(tb);
        if (where != NULL) {
            struct gust_err inner = *err;
            gust_err_set(err, rc, "%s (table '%s' at %s)", inner.msg, name, where);
        }
        return rc;
    }
    t->v[t->n++] = tb;
    return 0;
}

int gust_tables_add_json(struct gust_tables *t, const char *name, const char *json, size_t len,
                         const char *key, const char *what, struct gust_err *err)
{
    struct gust_table *tb = NULL;
    int rc = add_table(t, name, &tb, err);
    rc = rc ? rc : load_json(tb, what, 0, json, len, key, err);
    if (rc != 0) {
        table_free(tb);
        return rc;
    }
    t->v[t->n++] = tb;
    return 0;
}

size_t gust_tables_count(const struct gust_tables *t)
{
    return t->n;
}

const struct gust_table *gust_tables_at(const struct gust_tables *t, size_t i)
{
    return t->v[i];
}

const char *gust_table_name(const struct gust_table *tb)
{
    return tb->name;
}

size_t gust_table_rows(const struct gust_table *tb)
{
    return tb->n;
}

const char *gust_table_find(const struct gust_table *tb, const char *key, size_t len, size_t *json_len)
{
    size_t i = gust_keyidx_find(&tb->index, tb->rows, sizeof(*tb->rows), key, len, gust_key_hash(key, len));
    if (i == SIZE_MAX) {
        return NULL;
    }
    *json_len = tb->rows[i].json_len;
    return tb->arena.data + tb->rows[i].json_off;
}
