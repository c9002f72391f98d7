/* gust_jtree_*: JSON text to a tree through yajl's callbacks, and back. */
#include "jtree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "../common/json_out.h"
#include "../common/mem.h"
#include "gust/err.h"

#define MAX_DEPTH 200

struct parse {
    yajl_handle h;
    struct gust_jnode *root;
    struct gust_jnode *open[MAX_DEPTH]; /* the containers being filled */
    int depth;
    char *key; /* an object's member name waiting for its value */
    size_t key_len;
    const char *fail;
};

void gust_jtree_free(struct gust_jnode *n)
{
    if (n == NULL) {
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        gust_jtree_free(n->items[i]);
        if (n->keys != NULL) {
            free(n->keys[i]);
        }
    }
    free(n->items);
    free(n->keys);
    free(n->key_lens);
    free(n->s);
    free(n);
}

/* Appends n to the open container (or makes it the root). Returns 1, or 0 to stop. */
static int add(struct parse *p, struct gust_jnode *n)
{
    n->end = yajl_get_bytes_consumed(p->h);
    if (p->depth == 0) {
        p->root = n;
        return 1;
    }
    struct gust_jnode *c = p->open[p->depth - 1];
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4;
        struct gust_jnode **items = realloc(c->items, cap * sizeof(*items));
        if (items == NULL) {
            gust_jtree_free(n);
            p->fail = "out of memory";
            return 0;
        }
        c->items = items;
        if (c->type == GUST_J_OBJECT) {
            char **keys = realloc(c->keys, cap * sizeof(*keys));
            size_t *lens = keys != NULL ? realloc(c->key_lens, cap * sizeof(*lens)) : NULL;
            if (keys != NULL) {
                c->keys = keys;
            }
            if (lens == NULL) {
                gust_jtree_free(n);
                p->fail = "out of memory";
                return 0;
            }
            c->key_lens = lens;
        }
        c->cap = cap;
    }
    if (c->type == GUST_J_OBJECT) {
        c->keys[c->n] = p->key;
        c->key_lens[c->n] = p->key_len;
        p->key = NULL;
    }
    c->items[c->n++] = n;
    return 1;
}

static struct gust_jnode *node(struct parse *p, enum gust_jtype type, const char *s, size_t len)
{
    struct gust_jnode *n = calloc(1, sizeof(*n));
    if (n != NULL && s != NULL && (n->s = gust_memdup(s, len)) == NULL) {
        free(n);
        n = NULL;
    }
    if (n == NULL) {
        p->fail = "out of memory";
        return NULL;
    }
    n->type = type;
    n->len = len;
    return n;
}

static int scalar(struct parse *p, enum gust_jtype type, const char *s, size_t len)
{
    struct gust_jnode *n = node(p, type, s, len);
    return n != NULL && add(p, n);
}

static int on_null(void *ctx)
{
    return scalar(ctx, GUST_J_NULL, NULL, 0);
}

static int on_boolean(void *ctx, int v)
{
    return scalar(ctx, v ? GUST_J_TRUE : GUST_J_FALSE, NULL, 0);
}

static int on_number(void *ctx, const char *s, size_t len)
{
    return scalar(ctx, GUST_J_NUMBER, s, len);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    return scalar(ctx, GUST_J_STRING, (const char *)s, len);
}

static int open_container(struct parse *p, enum gust_jtype type)
{
    if (p->depth == MAX_DEPTH) {
        p->fail = "nested too deeply";
        return 0;
    }
    struct gust_jnode *n = node(p, type, NULL, 0);
    if (n == NULL) {
        return 0;
    }
    n->start = yajl_get_bytes_consumed(p->h) - 1;
    /* It joins its parent now (so that a failure frees it with the tree) and is
     * filled from the stack. */
    if (!add(p, n)) {
        return 0;
    }
    p->open[p->depth++] = n;
    return 1;
}

static int close_container(struct parse *p)
{
    p->open[--p->depth]->end = yajl_get_bytes_consumed(p->h);
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, GUST_J_OBJECT);
}

static int on_map_key(void *ctx, const unsigned char *s, size_t len)
{
    struct parse *p = ctx;
    free(p->key);
    p->key = gust_memdup((const char *)s, len);
    p->key_len = len;
    if (p->key == NULL) {
        p->fail = "out of memory";
        return 0;
    }
    return 1;
}

static int on_end(void *ctx)
{
    return close_container(ctx);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, GUST_J_ARRAY);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

int gust_jtree_parse(const char *text, size_t len, struct gust_jnode **out, char *why, size_t why_size,
                     size_t *at)
{
    struct parse p = {0};
    *out = NULL;
    *at = 0;
    p.h = yajl_alloc(&callbacks, NULL, &p);
    if (p.h == NULL) {
        snprintf(why, why_size, "out of memory");
        return GUST_ENOMEM;
    }
    yajl_status st = yajl_parse(p.h, (const unsigned char *)text, len);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(p.h);
    }
    int rc = 0;
    if (st != yajl_status_ok) {
        *at = yajl_get_bytes_consumed(p.h);
        if (p.fail != NULL) {
            snprintf(why, why_size, "%s", p.fail);
            rc = strcmp(p.fail, "out of memory") == 0 ? GUST_ENOMEM : GUST_EINVAL;
        } else {
            unsigned char *msg = yajl_get_error(p.h, 0, NULL, 0);
            snprintf(why, why_size, "%s", msg != NULL ? (const char *)msg : "invalid JSON");
            /* yajl's message ends with a newline. */
            why[strcspn(why, "\n")] = '\0';
            yajl_free_error(p.h, msg);
            rc = GUST_EINVAL;
        }
        gust_jtree_free(p.root);
    } else {
        *out = p.root;
    }
    free(p.key);
    yajl_free(p.h);
    return rc;
}

int gust_jtree_line(const char *text, size_t len, size_t at)
{
    int line = 1;
    for (size_t i = 0; i < at && i < len; i++) {
        line += text[i] == '\n';
    }
    return line;
}

const struct gust_jnode *gust_jtree_get(const struct gust_jnode *obj, const char *key)
{
    if (obj == NULL || obj->type != GUST_J_OBJECT) {
        return NULL;
    }
    size_t len = strlen(key);
    for (size_t i = 0; i < obj->n; i++) {
        if (obj->key_lens[i] == len && memcmp(obj->keys[i], key, len) == 0) {
            return obj->items[i];
        }
    }
    return NULL;
}

int gust_jtree_write(const struct gust_jnode *n, struct gust_buf *out)
{
    int rc = 0;
    switch (n->type) {
    case GUST_J_NULL:
        return gust_buf_append(out, "null", 4);
    case GUST_J_FALSE:
        return gust_buf_append(out, "false", 5);
    case GUST_J_TRUE:
        return gust_buf_append(out, "true", 4);
    case GUST_J_NUMBER:
        return gust_buf_append(out, n->s, n->len);
    case GUST_J_STRING:
        return gust_json_append_string(out, n->s, n->len);
    case GUST_J_ARRAY:
    case GUST_J_OBJECT:
        rc = gust_buf_append(out, n->type == GUST_J_ARRAY ? "[" : "{", 1);
        for (size_t i = 0; i < n->n && rc == 0; i++) {
            if (i > 0) {
                rc = gust_buf_append(out, ",", 1);
            }
            if (rc == 0 && n->type == GUST_J_OBJECT) {
                rc = gust_json_append_string(out, n->keys[i], n->key_lens[i]);
                rc = rc ? rc : gust_buf_append(out, ":", 1);
            }
            rc = rc ? rc : gust_jtree_write(n->items[i], out);
        }
        return rc ? rc : gust_buf_append(out, n->type == GUST_J_ARRAY ? "]" : "}", 1);
    }
    return GUST_EINVAL;
}

/* Appends a step to path: .name (its bytes, a NUL shown as \0) or [i]. */
static void path_step(char *path, size_t cap, const char *key, size_t key_len, size_t index)
{
    size_t used = strlen(path);
    if (key == NULL) {
        snprintf(path + used, cap - used, "[%zu]", index);
        return;
    }
    if (used + 1 < cap) {
        path[used++] = '.';
    }
    for (size_t i = 0; i < key_len && used + 3 < cap; i++) {
        if (key[i] == '\0') {
            path[used++] = '\\';
            path[used++] = '0';
        } else {
            path[used++] = key[i];
        }
    }
    path[used < cap ? used : cap - 1] = '\0';
}

static long find_key(const struct gust_jnode *obj, const char *key, size_t len, long skip)
{
    for (size_t i = 0; i < obj->n; i++) {
        if ((long)i != skip && obj->key_lens[i] == len && memcmp(obj->keys[i], key, len) == 0) {
            return (long)i;
        }
    }
    return -1;
}

int gust_jtree_equal(const struct gust_jnode *want, const struct gust_jnode *got, char *path, size_t cap)
{
    if (want->type != got->type) {
        return 0;
    }
    size_t used = strlen(path);
    switch (want->type) {
    case GUST_J_NUMBER:
    case GUST_J_STRING:
        return want->len == got->len && memcmp(want->s, got->s, want->len) == 0;
    case GUST_J_ARRAY:
        if (want->n != got->n) {
            return 0;
        }
        for (size_t i = 0; i < want->n; i++) {
            path_step(path, cap, NULL, 0, i);
            if (!gust_jtree_equal(want->items[i], got->items[i], path, cap)) {
                return 0;
            }
            path[used] = '\0';
        }
        return 1;
    case GUST_J_OBJECT:
        for (size_t i = 0; i < want->n; i++) {
            path_step(path, cap, want->keys[i], want->key_lens[i], 0);
            long j = find_key(got, want->keys[i], want->key_lens[i], -1);
            if (j < 0 || find_key(want, want->keys[i], want->key_lens[i], (long)i) >= 0 ||
                find_key(got, want->keys[i], want->key_lens[i], j) >= 0 ||
                !gust_jtree_equal(want->items[i], got->items[(size_t)j], path, cap)) {
                return 0;
            }
            path[used] = '\0';
        }
        if (want->n != got->n) { /* got has a member want does not name */
            for (size_t j = 0; j < got->n; j++) {
                if (find_key(want, got->keys[j], got->key_lens[j], -1) < 0) {
                    path_step(path, cap, got->keys[j], got->key_lens[j], 0);
                    break;
                }
            }
            return 0;
        }
        return 1;
    default: /* null, true, false: the type says it all */
        return 1;
    }
}
