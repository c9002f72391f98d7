/* host.conf parser: statements and blocks over the tokens of conf_lex.c, with include
 * expanded in place. Syntax only; keys are checked later against schemas. */
#include "conf.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_lex.h"

struct node_vec {
    struct gust_conf_node *v;
    size_t n, cap;
};

struct str_vec {
    char **v;
    size_t n, cap;
};

struct parser {
    struct gust_conf *conf;
    struct gust_err *err;
    /* Canonical paths of the files being read, outermost first, to catch include cycles
     * with a clear message rather than at the depth limit. */
    char *stack[GUST_CONF_MAX_INCLUDE_DEPTH + 1];
    int nstack;
    int includes; /* how deep in includes the current file is; 0 for the top file */
};

static int parse_body(struct parser *ps, struct conf_lexer *lx, struct node_vec *out, int depth,
                      const struct gust_conf_node *open);

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) {
        return 0;
    }
    size_t cap2 = *cap ? *cap * 2 : 4;
    void *p = realloc(*v, cap2 * size);
    if (p == NULL) {
        return GUST_ENOMEM;
    }
    *v = p;
    *cap = cap2;
    return 0;
}

static void node_free(struct gust_conf_node *n)
{
    free(n->name);
    for (size_t i = 0; i < n->nargs; i++) {
        free(n->args[i]);
    }
    free(n->args);
    for (size_t i = 0; i < n->nchildren; i++) {
        node_free(&n->children[i]);
    }
    free(n->children);
}

static void node_vec_free(struct node_vec *nv)
{
    for (size_t i = 0; i < nv->n; i++) {
        node_free(&nv->v[i]);
    }
    free(nv->v);
}

/* Directory part of path, "." when it has none. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        return strdup(".");
    }
    return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* Keeps a copy of a file name for the nodes read from it; returns NULL on ENOMEM. */
static const char *add_file(struct gust_conf *c, const char *path)
{
    char *copy = strdup(path);
    char **files = realloc(c->files, (c->nfiles + 1) * sizeof(*files));
    if (copy == NULL || files == NULL) {
        free(copy);
        if (files != NULL) {
            c->files = files;
        }
        return NULL;
    }
    c->files = files;
    c->files[c->nfiles++] = copy;
    return copy;
}

/* Reads a whole regular file; *why says what failed. Devices such as /dev/zero would
 * never end and /proc files report size 0, so only regular files are read, until EOF,
 * up to GUST_CONF_MAX_FILE. */
static int read_file(const char *path, char **text, size_t *len, const char **why)
{
    struct stat st;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        *why = strerror(errno);
        return GUST_ECONFIG;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *why = "not a regular file";
        goto fail;
    }
    for (;;) {
        if (n == cap) {
            /* One byte past the cap tells a file of exactly the cap from a larger one. */
            size_t cap2 = cap ? cap * 2 : (size_t)st.st_size + 1;
            if (cap2 > GUST_CONF_MAX_FILE + 1) {
                cap2 = GUST_CONF_MAX_FILE + 1;
            }
            if (cap2 == cap) {
                *why = "file larger than 16 MiB";
                goto fail;
            }
            char *p = realloc(buf, cap2);
            if (p == NULL) {
                *why = strerror(ENOMEM);
                goto fail;
            }
            buf = p;
            cap = cap2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            *why = strerror(errno);
            goto fail;
        }
        if (r == 0) {
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    *text = buf;
    *len = n;
    return 0;
fail:
    free(buf);
    close(fd);
    return GUST_ECONFIG;
}

/* Parses text as the statements of one file, appending them to out. */
static int parse_text(struct parser *ps, const char *text, size_t len, const char *file,
                      struct node_vec *out, int depth)
{
    struct conf_lexer lx;
    int rc = gust_conf__lex_init(&lx, text, len, file, ps->err);
    if (rc != 0) {
        return rc;
    }
    return parse_body(ps, &lx, out, depth, NULL);
}

/* Reads one included file into out; from is the include statement, for messages. */
static int include_file(struct parser *ps, const char *path, const struct gust_conf_node *from,
                        struct node_vec *out, int depth)
{
    char *text = NULL;
    size_t len = 0;
    const char *why;
    char real[PATH_MAX];
    int rc;

    if (ps->includes >= GUST_CONF_MAX_INCLUDE_DEPTH) {
        return gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: includes nested too deeply (max %d)",
                            from->file, from->line, GUST_CONF_MAX_INCLUDE_DEPTH);
    }
    if (read_file(path, &text, &len, &why) != 0) {
        return gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: cannot include '%s': %s", from->file,
                            from->line, path, why);
    }
    if (realpath(path, real) == NULL) {
        free(text);
        return gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: cannot include '%s': %s", from->file,
                            from->line, path, strerror(errno));
    }
    for (int i = 0; i < ps->nstack; i++) {
        if (strcmp(ps->stack[i], real) == 0) {
            free(text);
            return gust_err_set(ps->err, GUST_ECONFIG,
                                "%s:%d: include cycle: '%s' is already being read", from->file,
                                from->line, path);
        }
    }
    const char *file = add_file(ps->conf, path);
    ps->stack[ps->nstack] = strdup(real);
    if (file == NULL || ps->stack[ps->nstack] == NULL) {
        free(ps->stack[ps->nstack]);
        free(text);
        return gust_err_set(ps->err, GUST_ENOMEM, "out of memory");
    }
    ps->nstack++;
    ps->includes++;
    rc = parse_text(ps, text, len, file, out, depth);
    ps->includes--;
    free(ps->stack[--ps->nstack]);
    free(text);
    return rc;
}

static int has_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

/* `include PATH;`: the statements of PATH (or of each file matching it) go into out in
 * place of the include statement. */
static int do_include(struct parser *ps, const struct gust_conf_node *inc, struct node_vec *out,
                      int depth)
{
    const char *arg;
    char *path;
    int rc = 0;

    if (inc->nargs != 1) {
        return gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: 'include' takes exactly one path",
                            inc->file, inc->line);
    }
    arg = inc->args[0];
    if (arg[0] == '/') {
        path = strdup(arg);
    } else {
        char *dir = dir_of(inc->file);
        size_t n = dir ? strlen(dir) + strlen(arg) + 2 : 0;
        path = dir ? malloc(n) : NULL;
        if (path != NULL) {
            /* "./x" would show up in every message about x; keep the name as written. */
            if (strcmp(dir, ".") == 0) {
                snprintf(path, n, "%s", arg);
            } else {
                snprintf(path, n, "%s/%s", dir, arg);
            }
        }
        free(dir);
    }
    if (path == NULL) {
        return gust_err_set(ps->err, GUST_ENOMEM, "out of memory");
    }
    /* Decide on the argument alone: a '[' in the includer's directory must not turn a
     * plain include into a pattern. */
    if (!has_glob(arg)) {
        rc = include_file(ps, path, inc, out, depth);
    } else {
        glob_t g = {0};
        int grc = glob(path, 0, NULL, &g);
        if (grc == 0) {
            for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
                rc = include_file(ps, g.gl_pathv[i], inc, out, depth);
            }
        } else if (grc != GLOB_NOMATCH) {
            /* An empty conf.d/ is normal; only a failed directory read is an error. */
            rc = gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: cannot expand include '%s'", inc->file,
                              inc->line, path);
        }
        globfree(&g);
    }
    free(path);
    return rc;
}

/* After the name of a statement: its arguments, then ';' or a block. *node owns name. */
static int parse_statement(struct parser *ps, struct conf_lexer *lx, struct gust_conf_node *node,
                           struct node_vec *out, int depth)
{
    struct str_vec args = {0};
    struct node_vec children = {0};
    enum conf_tok tok;
    char *word;
    int line;
    int rc;

    for (;;) {
        rc = gust_conf__lex_next(lx, &tok, &word, &line, ps->err);
        if (rc != 0) {
            goto fail;
        }
        if (tok != CONF_TOK_WORD) {
            break;
        }
        rc = grow((void **)&args.v, &args.cap, args.n + 1, sizeof(*args.v));
        if (rc != 0) {
            free(word);
            goto fail;
        }
        args.v[args.n++] = word;
    }
    node->args = args.v;
    node->nargs = args.n;
    args.v = NULL;
    args.n = 0;
    if (tok != CONF_TOK_SEMI && tok != CONF_TOK_LBRACE) {
        /* Reported where the statement began: that is where the ';' is missing. */
        rc = gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: expected ';' or '{' after '%s'",
                          node->file, node->line, node->name);
        goto fail;
    }
    if (strcmp(node->name, "include") == 0) {
        if (tok == CONF_TOK_LBRACE) {
            rc = gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: 'include' cannot open a block",
                              node->file, node->line);
            goto fail;
        }
        rc = do_include(ps, node, out, depth);
        node_free(node);
        return rc;
    }
    if (tok == CONF_TOK_LBRACE) {
        if (depth >= GUST_CONF_MAX_DEPTH) {
            rc = gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: blocks nested too deeply (max %d)",
                              node->file, node->line, GUST_CONF_MAX_DEPTH);
            goto fail;
        }
        node->is_block = 1;
        rc = parse_body(ps, lx, &children, depth + 1, node);
        node->children = children.v;
        node->nchildren = children.n;
        if (rc != 0) {
            goto fail;
        }
    }
    rc = grow((void **)&out->v, &out->cap, out->n + 1, sizeof(*out->v));
    if (rc != 0) {
        goto fail;
    }
    out->v[out->n++] = *node;
    return 0;
fail:
    for (size_t i = 0; i < args.n; i++) {
        free(args.v[i]);
    }
    free(args.v);
    node_free(node);
    return rc == GUST_ENOMEM ? gust_err_set(ps->err, rc, "out of memory") : rc;
}

/* Statements until '}' closes `open`, or until end of file at the top of a file
 * (open == NULL): a block never spans files. */
static int parse_body(struct parser *ps, struct conf_lexer *lx, struct node_vec *out, int depth,
                      const struct gust_conf_node *open)
{
    for (;;) {
        enum conf_tok tok;
        char *word;
        int line;
        int rc = gust_conf__lex_next(lx, &tok, &word, &line, ps->err);
        if (rc != 0) {
            return rc == GUST_ENOMEM ? gust_err_set(ps->err, rc, "out of memory") : rc;
        }
        switch (tok) {
        case CONF_TOK_WORD: {
            struct gust_conf_node node = {.name = word, .file = lx->file, .line = line};
            rc = parse_statement(ps, lx, &node, out, depth);
            if (rc != 0) {
                return rc;
            }
            break;
        }
        case CONF_TOK_EOF:
            if (open == NULL) {
                return 0;
            }
            return gust_err_set(ps->err, GUST_ECONFIG,
                                "%s:%d: unexpected end of file, expecting '}' to close '%s' "
                                "opened at %s:%d",
                                lx->file, line, open->name, open->file, open->line);
        case CONF_TOK_RBRACE:
            if (open != NULL) {
                return 0;
            }
            return gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: unexpected '}'", lx->file, line);
        case CONF_TOK_LBRACE:
            return gust_err_set(ps->err, GUST_ECONFIG,
                                "%s:%d: unexpected '{' (a block needs a name)", lx->file, line);
        case CONF_TOK_SEMI:
            return gust_err_set(ps->err, GUST_ECONFIG, "%s:%d: unexpected ';'", lx->file, line);
        }
    }
}

/* Parses the top file; text is its content, real its canonical path or NULL. */
static int parse_top(const char *text, size_t len, const char *name, const char *real,
                     struct gust_conf **out, struct gust_err *err)
{
    struct gust_conf *c = calloc(1, sizeof(*c));
    struct parser ps = {.conf = c, .err = err};
    struct node_vec top = {0};
    const char *file = NULL;
    int rc = 0;

    *out = NULL;
    if (c == NULL || (c->path = strdup(name)) == NULL || (c->dir = dir_of(name)) == NULL ||
        (file = add_file(c, name)) == NULL ||
        (real != NULL && (ps.stack[ps.nstack++] = strdup(real)) == NULL)) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    if (rc == 0) {
        rc = parse_text(&ps, text, len, file, &top, 0);
    }
    if (ps.nstack > 0) {
        free(ps.stack[0]);
    }
    if (rc != 0) {
        node_vec_free(&top);
        gust_conf_destroy(c);
        return rc;
    }
    c->root.children = top.v;
    c->root.nchildren = top.n;
    c->root.is_block = 1;
    c->root.file = file;
    *out = c;
    return 0;
}

int gust_conf_parse_string(const char *text, size_t len, const char *name, struct gust_conf **out,
                           struct gust_err *err)
{
    return parse_top(text, len, name, NULL, out, err);
}

int gust_conf_parse_file(const char *path, struct gust_conf **out, struct gust_err *err)
{
    char *text;
    size_t len;
    const char *why;
    char real[PATH_MAX];
    int rc;

    *out = NULL;
    if (read_file(path, &text, &len, &why) != 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: cannot read: %s", path, why);
    }
    if (realpath(path, real) == NULL) {
        free(text);
        return gust_err_set(err, GUST_ECONFIG, "%s: cannot read: %s", path, strerror(errno));
    }
    rc = parse_top(text, len, path, real, out, err);
    free(text);
    return rc;
}

void gust_conf_destroy(struct gust_conf *c)
{
    if (c == NULL) {
        return;
    }
    node_free(&c->root);
    for (size_t i = 0; i < c->nfiles; i++) {
        free(c->files[i]);
    }
    free(c->files);
    free(c->path);
    free(c->dir);
    free(c);
}
