/* gust_cfg_check and the gust_cfg accessors of gust/schema.h. */
#define _GNU_SOURCE /* explicit_bzero */
#include "conf_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/sdk.h" /* gust_rate_parse */
#include "subject.h"
#include "value.h"

/* One schema key and what the block (or the default) gave it. */
struct cfg_val {
    char *key;
    enum gust_type type;
    char **items; /* the text of each value; PATH resolved */
    size_t nitems;
    int64_t num; /* INT, BOOL 0/1, SIZE bytes, DURATION ms */
    char *where; /* "file:line" of the user's statement; NULL when defaulted or absent */
};

struct gust_cfg {
    struct cfg_val *vals; /* one per schema key, in schema order */
    size_t n;
    char *where; /* of the block */
};

/* How a bad value of each type is described: "invalid <noun> 'x' for 'key' (<hint>)". */
static int describe(enum gust_type type, const char **noun, const char **hint)
{
    switch (type) {
    case GUST_T_STR:
    case GUST_T_LIST:
        *noun = "string";
        *hint = "any text";
        return 0;
    case GUST_T_INT:
        *noun = "integer";
        *hint = "e.g. 10, -3";
        return 0;
    case GUST_T_BOOL:
        *noun = "boolean";
        *hint = "on, off, true, false, yes, no";
        return 0;
    case GUST_T_SIZE:
        *noun = "size";
        *hint = "e.g. 512k, 1m";
        return 0;
    case GUST_T_DURATION:
        *noun = "duration";
        *hint = "e.g. 250ms, 5s, 2m, 1h";
        return 0;
    case GUST_T_PATH:
        *noun = "path";
        *hint = "a file name, relative to this file's directory";
        return 0;
    case GUST_T_SUBJECT:
        *noun = "subject";
        *hint = "dot-separated tokens without spaces or wildcards, e.g. ev.orders";
        return 0;
    case GUST_T_FILTER:
        *noun = "subject filter";
        *hint = "e.g. ev.orders, ev.*.in, ev.>";
        return 0;
    case GUST_T_ADDR:
        *noun = "address";
        *hint = "host:port, e.g. 127.0.0.1:8787 or [::1]:8787";
        return 0;
    case GUST_T_NAME:
        *noun = "name";
        *hint = "1 to 64 letters, digits, '_' and '-': NATS takes it as it is";
        return 0;
    case GUST_T_RATE:
        *noun = "rate";
        *hint = "N/s, N/m or N/h with N > 0, e.g. 200/s, 0.5/s, 10/m";
        return 0;
    case GUST_T_URL:
        *noun = "URL";
        *hint = "scheme://[user[:password]@]host[:port][/path]";
        return 0;
    case GUST_T_RATIO:
        *noun = "ratio";
        *hint = "a decimal from 0 to 1, e.g. 1.0, 0.01";
        return 0;
    }
    return GUST_EINVAL;
}

static char *fmt_where(const char *file, int line)
{
    size_t n = strlen(file) + 16;
    char *s = malloc(n);
    if (s != NULL) {
        /* The root of a tree has line 0: name the file alone. */
        if (line > 0) {
            snprintf(s, n, "%s:%d", file, line);
        } else {
            snprintf(s, n, "%s", file);
        }
    }
    return s;
}

/* text relative to the directory of `file`, unless absolute or `file` has no directory. */
static char *resolve_path(const char *file, const char *text)
{
    const char *slash = strrchr(file, '/');
    if (text[0] == '/' || slash == NULL) {
        return strdup(text);
    }
    size_t dirlen = (size_t)(slash - file);
    size_t n = dirlen + 1 + strlen(text) + 1;
    char *s = malloc(n);
    if (s != NULL) {
        snprintf(s, n, "%.*s/%s", (int)dirlen, file, text);
    }
    return s;
}

/* Parses one value of `type`; `file` is where it was written (for PATH). Returns 0 with
 * *item owned by the caller, GUST_ECONFIG when the text is not a valid value, or
 * GUST_ENOMEM. */
static int parse_value(enum gust_type type, const char *text, const char *file, char **item,
                       int64_t *num)
{
    int64_t v = 0;
    int port;
    int ok;
    double real;
    char scheme[32];

    switch (type) {
    case GUST_T_INT:
        ok = gust_parse_int(text, &v) == 0;
        break;
    case GUST_T_BOOL:
        ok = gust_parse_bool(text, &v) == 0;
        break;
    case GUST_T_SIZE:
        ok = gust_parse_size(text, &v) == 0;
        break;
    case GUST_T_DURATION:
        ok = gust_parse_duration(text, &v) == 0;
        break;
    case GUST_T_SUBJECT:
    case GUST_T_FILTER:
        ok = gust_subject_valid(text, strlen(text), type == GUST_T_FILTER);
        break;
    case GUST_T_ADDR:
        ok = gust_parse_addr(text, &port) == 0;
        break;
    case GUST_T_NAME:
        ok = gust_name_valid(text);
        break;
    case GUST_T_RATE:
        ok = gust_rate_parse(text, &real) == 0;
        break;
    case GUST_T_RATIO:
        ok = gust_parse_ratio(text, &real) == 0;
        break;
    case GUST_T_URL:
        ok = gust_parse_url(text, scheme, sizeof(scheme)) == 0;
        break;
    case GUST_T_PATH:
        if (text[0] == '\0') {
            return GUST_ECONFIG;
        }
        *item = resolve_path(file, text);
        *num = 0;
        return *item ? 0 : GUST_ENOMEM;
    default: /* STR, LIST: any text */
        ok = 1;
        break;
    }
    if (!ok) {
        return GUST_ECONFIG;
    }
    *item = strdup(text);
    *num = v;
    return *item ? 0 : GUST_ENOMEM;
}

/* 1 when word is one of the '|'-separated words of list. */
static int word_in(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p != '\0';) {
        const char *bar = strchr(p, '|');
        size_t len = bar != NULL ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, word, n) == 0) {
            return 1;
        }
        p += len + (bar != NULL);
    }
    return 0;
}

/* 1 when a parsed value keeps to its key's declared bounds or choices. */
static int within_bounds(const struct gust_schema_key *k, const char *text, int64_t num)
{
    int numeric = k->type == GUST_T_INT || k->type == GUST_T_SIZE || k->type == GUST_T_DURATION;
    if ((k->flags & GUST_K_RANGE) && numeric) {
        return (num == 0 && (k->flags & GUST_K_ZERO_OFF)) || (num >= k->min && num <= k->max);
    }
    if (k->choices != NULL && k->type == GUST_T_STR) {
        return word_in(k->choices, text);
    }
    if (k->choices != NULL && k->type == GUST_T_URL) {
        char scheme[32];
        return gust_parse_url(text, scheme, sizeof(scheme)) == 0 && word_in(k->choices, scheme);
    }
    return 1;
}

static void clear_items(struct cfg_val *v)
{
    for (size_t i = 0; i < v->nitems; i++) {
        free(v->items[i]);
    }
    free(v->items);
    v->items = NULL;
    v->nitems = 0;
    v->num = 0;
}

/* Parses text and appends it to v's values. */
static int add_value(struct cfg_val *v, const char *text, const char *file)
{
    char *item;
    int64_t num;
    int rc = parse_value(v->type, text, file, &item, &num);
    if (rc != 0) {
        return rc;
    }
    char **items = realloc(v->items, (v->nitems + 1) * sizeof(*items));
    if (items == NULL) {
        free(item);
        return GUST_ENOMEM;
    }
    v->items = items;
    v->items[v->nitems++] = item;
    v->num = num;
    return 0;
}

static struct cfg_val *find_val(const struct gust_cfg *cfg, const char *key)
{
    if (cfg == NULL || key == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < cfg->n; i++) {
        if (strcmp(cfg->vals[i].key, key) == 0) {
            return &cfg->vals[i];
        }
    }
    return NULL;
}

static int in_list(const char *const *names, const char *name)
{
    for (size_t i = 0; names != NULL && names[i] != NULL; i++) {
        if (strcmp(names[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Applies the schema's defaults; a default the type rejects is a bug in the table, so it
 * is reported whether or not the user sets the key. A LIST default is split on spaces. */
static int apply_defaults(struct gust_cfg *cfg, const struct gust_schema_key *schema,
                          const struct gust_conf_node *block, const char *what,
                          struct gust_err *err)
{
    for (size_t i = 0; i < cfg->n; i++) {
        const char *noun = "value", *hint = "";
        struct cfg_val *v = &cfg->vals[i];
        const char *def = schema[i].def;
        int rc = 0;

        if (describe(v->type, &noun, &hint) != 0) {
            return gust_err_set(err, GUST_EINVAL, "schema of %s: key '%s' has unknown type %d",
                                what, v->key, (int)v->type);
        }
        if (def == NULL) {
            continue;
        }
        if (v->type != GUST_T_LIST) {
            rc = add_value(v, def, block->file);
        } else {
            char *copy = strdup(def);
            char *save = NULL;
            rc = copy ? 0 : GUST_ENOMEM;
            for (char *t = copy ? strtok_r(copy, " \t", &save) : NULL; t && rc == 0;
                 t = strtok_r(NULL, " \t", &save)) {
                rc = add_value(v, t, block->file);
            }
            free(copy);
        }
        if (rc == GUST_ECONFIG || (rc == 0 && !within_bounds(&schema[i], def, v->num))) {
            return gust_err_set(err, GUST_EINVAL,
                                "schema of %s: default '%s' of key '%s' is not a valid %s", what,
                                def, v->key, noun);
        }
        if (rc != 0) {
            return gust_err_set(err, rc, "out of memory");
        }
    }
    return 0;
}

/* Appends ", name" to list (or "name" when it is empty), stopping quietly when full:
 * the message is truncated at that length anyway. */
static void list_add(char *list, size_t size, const char *name)
{
    size_t used = strlen(list);
    snprintf(list + used, size - used, "%s%s", used ? ", " : "", name);
}

static int unknown_key(const struct gust_cfg *cfg, const struct gust_conf_node *st,
                       const char *what, const char *const *ignore, struct gust_err *err)
{
    char list[384] = "";

    for (size_t i = 0; i < cfg->n; i++) {
        list_add(list, sizeof(list), cfg->vals[i].key);
    }
    /* The caller's keys are valid too, so they belong in the list. */
    for (size_t i = 0; ignore != NULL && ignore[i] != NULL; i++) {
        list_add(list, sizeof(list), ignore[i]);
    }
    if (list[0] == '\0') {
        return gust_err_set(err, GUST_ECONFIG, "%s:%d: unknown key '%s' in %s (it takes no keys)",
                            st->file, st->line, st->name, what);
    }
    return gust_err_set(err, GUST_ECONFIG, "%s:%d: unknown key '%s' in %s (expected one of: %s)",
                        st->file, st->line, st->name, what, list);
}

/* The prefix key (GUST_K_PREFIX) that `name` is a `key.NAME` of, with *sub set to NAME;
 * NULL when there is none. */
static struct cfg_val *find_prefix_val(const struct gust_cfg *cfg, const struct gust_schema_key *schema,
                                       const char *name, const char **sub)
{
    for (size_t i = 0; i < cfg->n; i++) {
        size_t len = strlen(cfg->vals[i].key);
        if ((schema[i].flags & GUST_K_PREFIX) && strncmp(name, cfg->vals[i].key, len) == 0 && name[len] == '.' &&
            name[len + 1] != '\0') {
            *sub = name + len + 1;
            return &cfg->vals[i];
        }
    }
    return NULL;
}

/* `key.NAME VALUE;` of a prefix key: NAME and VALUE appended to its list. */
static int apply_prefixed(struct cfg_val *v, const char *sub, const struct gust_conf_node *st, const char *what,
                          struct gust_err *err)
{
    if (st->is_block || st->nargs != 1) {
        return gust_err_set(err, GUST_ECONFIG, "%s:%d: '%s' in %s takes one value", st->file, st->line, st->name,
                            what);
    }
    if (v->where == NULL) {
        clear_items(v);
        if ((v->where = fmt_where(st->file, st->line)) == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    if (add_value(v, sub, st->file) != 0 || add_value(v, st->args[0], st->file) != 0) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    return 0;
}

/* Takes one statement of the block. */
static int apply_statement(struct gust_cfg *cfg, const struct gust_schema_key *schema,
                           const struct gust_conf_node *st, const char *what, const char *const *ignore,
                           struct gust_err *err)
{
    struct cfg_val *v;
    const struct gust_schema_key *k;
    const char *noun = "value", *hint = "";

    if (in_list(ignore, st->name)) {
        return 0;
    }
    v = find_val(cfg, st->name);
    if (v == NULL) {
        const char *sub = NULL;
        v = find_prefix_val(cfg, schema, st->name, &sub);
        return v != NULL ? apply_prefixed(v, sub, st, what, err) : unknown_key(cfg, st, what, ignore, err);
    }
    if (schema[v - cfg->vals].flags & GUST_K_PREFIX) {
        return gust_err_set(err, GUST_ECONFIG, "%s:%d: '%s' in %s is written %s.NAME VALUE (one setting a line)",
                            st->file, st->line, st->name, what, st->name);
    }
    if (st->is_block) {
        return gust_err_set(err, GUST_ECONFIG, "%s:%d: '%s' in %s takes a value, not a block",
                            st->file, st->line, st->name, what);
    }
    if (v->where != NULL && v->type != GUST_T_LIST) {
        return gust_err_set(err, GUST_ECONFIG, "%s:%d: duplicate key '%s' in %s (first set at %s)",
                            st->file, st->line, st->name, what, v->where);
    }
    if (st->nargs == 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s:%d: '%s' in %s needs a value", st->file,
                            st->line, st->name, what);
    }
    if (st->nargs > 1 && v->type != GUST_T_LIST) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s:%d: '%s' in %s takes one value, not %zu (quote a value with "
                            "spaces)",
                            st->file, st->line, st->name, what, st->nargs);
    }
    if (v->where == NULL) {
        clear_items(v); /* the user's values replace the default */
        v->where = fmt_where(st->file, st->line);
        if (v->where == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < st->nargs; i++) {
        int rc = add_value(v, st->args[i], st->file);
        if (rc == GUST_ECONFIG) {
            describe(v->type, &noun, &hint);
            if (v->type == GUST_T_URL) { /* it may hold a password: not repeated */
                return gust_err_set(err, GUST_ECONFIG, "%s:%d: invalid %s for '%s' (%s)", st->file, st->line, noun,
                                    st->name, hint);
            }
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: invalid %s '%s' for '%s' (%s)", st->file,
                                st->line, noun, st->args[i], st->name, hint);
        }
        if (rc != 0) {
            return gust_err_set(err, rc, "out of memory");
        }
    }
    k = &schema[v - cfg->vals]; /* the values are in schema order */
    for (size_t i = 0; i < v->nitems; i++) {
        if (!within_bounds(k, v->items[i], v->num)) {
            char bounds[96];
            if (v->type == GUST_T_URL) {
                return gust_err_set(err, GUST_ECONFIG, "%s:%d: %s must be %s in %s", st->file, st->line, st->name,
                                    gust_schema_bounds_text(k, bounds, sizeof(bounds)), what);
            }
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: %s must be %s in %s, not '%s'", st->file, st->line,
                                st->name, gust_schema_bounds_text(k, bounds, sizeof(bounds)), what,
                                st->args[i < st->nargs ? i : 0]);
        }
    }
    return 0;
}

int gust_cfg_check(const struct gust_conf_node *block, const char *what,
                   const struct gust_schema_key *schema, const char *const *ignore,
                   struct gust_cfg **out, struct gust_err *err)
{
    struct gust_cfg *cfg;
    size_t n = 0;
    int rc;

    *out = NULL;
    while (schema[n].key != NULL) {
        n++;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL || (cfg->vals = calloc(n ? n : 1, sizeof(*cfg->vals))) == NULL ||
        (cfg->where = fmt_where(block->file, block->line)) == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto fail;
    }
    for (; cfg->n < n; cfg->n++) {
        struct cfg_val *v = &cfg->vals[cfg->n];
        v->type = schema[cfg->n].type;
        v->key = strdup(schema[cfg->n].key);
        if (v->key == NULL) {
            rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
            goto fail;
        }
    }
    rc = apply_defaults(cfg, schema, block, what, err);
    for (size_t i = 0; i < block->nchildren && rc == 0; i++) {
        rc = apply_statement(cfg, schema, &block->children[i], what, ignore, err);
    }
    if (rc != 0) {
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if ((schema[i].flags & GUST_K_REQUIRED) && cfg->vals[i].where == NULL) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: missing required key '%s' in %s", cfg->where,
                              schema[i].key, what);
            goto fail;
        }
    }
    *out = cfg;
    return 0;
fail:
    gust_cfg_destroy(cfg);
    return rc;
}

void gust_cfg_destroy(struct gust_cfg *cfg)
{
    if (cfg == NULL) {
        return;
    }
    for (size_t i = 0; i < cfg->n; i++) {
        clear_items(&cfg->vals[i]);
        free(cfg->vals[i].key);
        free(cfg->vals[i].where);
    }
    free(cfg->vals);
    free(cfg->where);
    free(cfg);
}

void gust_cfg_destroy_wiped(struct gust_cfg *cfg)
{
    for (size_t i = 0; cfg != NULL && i < cfg->n; i++) {
        for (size_t j = 0; j < cfg->vals[i].nitems; j++) {
            explicit_bzero(cfg->vals[i].items[j], strlen(cfg->vals[i].items[j]));
        }
    }
    gust_cfg_destroy(cfg);
}

static int copy_val(struct cfg_val *to, const struct cfg_val *from)
{
    *to = *from;
    to->items = NULL;
    to->nitems = 0;
    to->key = strdup(from->key);
    to->where = from->where != NULL ? strdup(from->where) : NULL;
    if (to->key == NULL || (from->where != NULL && to->where == NULL) ||
        (from->nitems > 0 && (to->items = calloc(from->nitems, sizeof(*to->items))) == NULL)) {
        return GUST_ENOMEM;
    }
    for (; to->nitems < from->nitems; to->nitems++) {
        if ((to->items[to->nitems] = strdup(from->items[to->nitems])) == NULL) {
            return GUST_ENOMEM;
        }
    }
    return 0;
}

int gust_cfg_rewrite(const struct gust_cfg *cfg, const struct gust_schema_key *schema, unsigned with,
                     unsigned without, int (*fn)(void *ud, const char *key, const char *value, char **repl),
                     void *ud, struct gust_cfg **out)
{
    struct gust_cfg *c = calloc(1, sizeof(*c));
    int rc = GUST_ENOMEM, changed = 0;
    *out = NULL;
    if (c == NULL || (c->vals = calloc(cfg->n + 1, sizeof(*c->vals))) == NULL ||
        (cfg->where != NULL && (c->where = strdup(cfg->where)) == NULL)) {
        goto fail;
    }
    for (; c->n < cfg->n; c->n++) {
        if ((rc = copy_val(&c->vals[c->n], &cfg->vals[c->n])) != 0) {
            c->n++;
            goto fail;
        }
    }
    for (const struct gust_schema_key *k = schema; k != NULL && k->key != NULL; k++) {
        struct cfg_val *v = find_val(c, k->key);
        if (v == NULL || (k->flags & with) != with || (k->flags & without) != 0 ||
            (k->type != GUST_T_STR && k->type != GUST_T_LIST)) {
            continue;
        }
        for (size_t i = 0; i < v->nitems; i++) {
            char *repl = NULL;
            if ((rc = fn(ud, k->key, v->items[i], &repl)) != 0) {
                goto fail;
            }
            if (repl != NULL) {
                explicit_bzero(v->items[i], strlen(v->items[i]));
                free(v->items[i]);
                v->items[i] = repl;
                changed = 1;
            }
        }
    }
    if (changed) {
        *out = c;
        return 0;
    }
    rc = 0;
fail:
    gust_cfg_destroy_wiped(c);
    return rc;
}

/* The value of a key the accessors read. A checked cfg holds every key its schema
 * declares, given or not, so a key missing from it is one no table declares: a bug in
 * the code reading it (a typo, or a key moved to another block), which would otherwise
 * read as "not set" for ever. It aborts so that any test reaching that read fails. */
static const struct cfg_val *declared_val(const struct gust_cfg *cfg, const char *key)
{
    const struct cfg_val *v = find_val(cfg, key);
    if (v == NULL && cfg != NULL) {
        fprintf(stderr, "gust: bug: key '%s' read from %s, whose schema does not declare it\n", key,
                cfg->where != NULL ? cfg->where : "a block");
        abort();
    }
    return v;
}

/* For a LIST this is the first item, handy for keys that are usually given once. */
const char *gust_cfg_str(const struct gust_cfg *cfg, const char *key)
{
    const struct cfg_val *v = declared_val(cfg, key);
    return v != NULL && v->nitems > 0 ? v->items[0] : NULL;
}

int64_t gust_cfg_int(const struct gust_cfg *cfg, const char *key)
{
    const struct cfg_val *v = declared_val(cfg, key);
    return v != NULL ? v->num : 0;
}

size_t gust_cfg_count(const struct gust_cfg *cfg, const char *key)
{
    const struct cfg_val *v = declared_val(cfg, key);
    return v != NULL ? v->nitems : 0;
}

const char *gust_cfg_item(const struct gust_cfg *cfg, const char *key, size_t i)
{
    const struct cfg_val *v = declared_val(cfg, key);
    return v != NULL && i < v->nitems ? v->items[i] : NULL;
}

const char *gust_cfg_where(const struct gust_cfg *cfg, const char *key)
{
    const struct cfg_val *v = declared_val(cfg, key);
    if (cfg == NULL) {
        return NULL;
    }
    return v != NULL && v->where != NULL ? v->where : cfg->where;
}

int gust_cfg_bind(const struct gust_cfg *cfg, const struct gust_schema_key *schema, size_t key_size, void *out,
                  struct gust_err *err)
{
    for (const char *p = (const char *)schema;; p += key_size) {
        const struct gust_schema_key *k = (const struct gust_schema_key *)p;
        if (k->key == NULL) {
            return 0;
        }
        if (!(k->flags & GUST_K_BOUND)) {
            continue;
        }
        const struct cfg_val *v = find_val(cfg, k->key);
        if (v == NULL) {
            return gust_err_set(err, GUST_EINVAL, "binding key '%s': not in the checked configuration", k->key);
        }
        char *field = (char *)out + k->offset;
        switch (k->type) {
        case GUST_T_INT:
        case GUST_T_SIZE:
        case GUST_T_DURATION: {
            int64_t n = v->num;
            memcpy(field, &n, sizeof(n));
            break;
        }
        case GUST_T_BOOL: {
            int b = v->num != 0;
            memcpy(field, &b, sizeof(b));
            break;
        }
        case GUST_T_RATE:
        case GUST_T_RATIO: {
            /* Parsed again from the text, which was checked with the block. */
            double real = 0;
            if (v->nitems > 0) {
                (void)(k->type == GUST_T_RATE ? gust_rate_parse(v->items[0], &real)
                                              : gust_parse_ratio(v->items[0], &real));
            }
            memcpy(field, &real, sizeof(real));
            break;
        }
        case GUST_T_LIST: {
            struct gust_list l = {(const char *const *)v->items, v->nitems};
            memcpy(field, &l, sizeof(l));
            break;
        }
        default: {
            const char *s = v->nitems > 0 ? v->items[0] : NULL;
            memcpy(field, &s, sizeof(s));
            break;
        }
        }
    }
}

int gust_cfg_same(const struct gust_cfg *a, const struct gust_cfg *b, const char *key)
{
    const struct cfg_val *va = find_val(a, key), *vb = find_val(b, key);
    if (va == NULL || vb == NULL) {
        return va == vb;
    }
    if (va->nitems != vb->nitems) {
        return 0;
    }
    for (size_t i = 0; i < va->nitems; i++) {
        if (strcmp(va->items[i], vb->items[i]) != 0) {
            return 0;
        }
    }
    return 1;
}
