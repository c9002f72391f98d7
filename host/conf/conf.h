/* host.conf syntax: a file and its includes parsed into a tree of statements.
 *
 * The parser knows no keys; it checks syntax only. Each node keeps the file:line it was
 * written at so that the schema check, plugins and reload errors can point the user at
 * the exact statement, even inside an included file. */
#ifndef GUST_CONF_H
#define GUST_CONF_H

#include <stddef.h>

#include "gust/err.h"

/* Limits that keep any input, broken or hostile, from exhausting the stack or memory. */
#define GUST_CONF_MAX_DEPTH 32         /* nested blocks */
#define GUST_CONF_MAX_INCLUDE_DEPTH 16 /* nested includes */
#define GUST_CONF_MAX_LINE 8192        /* bytes per line */
#define GUST_CONF_MAX_FILE (16 << 20)  /* bytes per file */

/* One statement: `name args...;` or a block `name args... { children }`. */
struct gust_conf_node {
    char *name;
    char **args; /* nargs words, quotes removed, escapes and ${ENV} expanded */
    size_t nargs;
    struct gust_conf_node *children; /* array of nchildren; include already expanded */
    size_t nchildren;
    int is_block;
    const char *file; /* borrowed from the owning struct gust_conf */
    int line;
};

struct gust_conf {
    /* The top-level statements: name NULL, no args, is_block 1, file = the top file,
     * line 0 (messages about it then name the file alone). */
    struct gust_conf_node root;
    char *path;   /* the top file as given */
    char *dir;    /* its directory, "." when the path has none */
    char **files; /* every file read, as named in messages; nodes point into these */
    size_t nfiles;
};

/* Parses the file at `path` (borrowed) and everything it includes. Includes are relative
 * to the directory of the file that names them; a pattern with * ? or [ is expanded with
 * glob(3) in sorted order and may match nothing. On success *out owns a new tree (free it
 * with gust_conf_destroy). On failure returns GUST_ECONFIG (syntax, limits, missing file),
 * GUST_ENOMEM, and err->msg holds "file:line: message". */
int gust_conf_parse_file(const char *path, struct gust_conf **out, struct gust_err *err);

/* The same for text in memory (borrowed, len bytes, need not be NUL-terminated), named
 * `name` in messages. Includes are relative to the directory part of `name`, so a name
 * without '/' such as "<test>" makes them relative to the working directory. */
int gust_conf_parse_string(const char *text, size_t len, const char *name, struct gust_conf **out,
                           struct gust_err *err);

/* Frees the tree; NULL is a no-op. */
void gust_conf_destroy(struct gust_conf *c);

#endif
