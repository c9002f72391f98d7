/* A JSON document as a tree that keeps everything the text says: strings with their
 * length (a \u0000 inside included), numbers as their text, and where each value is
 * in the text (for file:line errors). For the golden-test runner, which compares what
 * a flow emits exactly, and for lookup tables read from JSON files. yajl_tree would
 * not do: it ends strings at NUL and keeps no positions. */
#ifndef GUST_FLOW_JTREE_H
#define GUST_FLOW_JTREE_H

#include <stddef.h>

#include "../common/buf.h"

enum gust_jtype {
    GUST_J_NULL,
    GUST_J_FALSE,
    GUST_J_TRUE,
    GUST_J_NUMBER,
    GUST_J_STRING,
    GUST_J_ARRAY,
    GUST_J_OBJECT
};

struct gust_jnode {
    enum gust_jtype type;
    char *s; /* NUMBER: its text; STRING: its bytes; len bytes, NUL-terminated */
    size_t len;
    struct gust_jnode **items; /* ARRAY: the elements; OBJECT: the member values */
    char **keys;               /* OBJECT: the member names (NUL-terminated too) ... */
    size_t *key_lens;          /* ... and their lengths */
    size_t n, cap;
    size_t start, end; /* byte offsets in the text: containers from their bracket
                          through the closing one; other values: end only */
};

/* Parses text[0..len) (one JSON value, nothing after it but white space), nested at
 * most 200 deep. On success *out is a new tree (free with gust_jtree_free). On
 * failure returns GUST_EINVAL (GUST_ENOMEM) with the reason in why, and *at the byte
 * offset where the text went wrong. */
int gust_jtree_parse(const char *text, size_t len, struct gust_jnode **out, char *why, size_t why_size,
                     size_t *at);
void gust_jtree_free(struct gust_jnode *n);
/* The 1-based line of byte offset `at` of text. */
int gust_jtree_line(const char *text, size_t len, size_t at);
/* The first member of obj named key (NUL-terminated), or NULL. */
const struct gust_jnode *gust_jtree_get(const struct gust_jnode *obj, const char *key);
/* Appends n as compact JSON text (numbers as written, strings re-escaped). */
int gust_jtree_write(const struct gust_jnode *n, struct gust_buf *out);
/* Whether a and b say exactly the same: same types, numbers with the same text, strings
 * with the same bytes, arrays in order, objects with the same member names (each once)
 * in any order. On a difference, `path` (cap bytes, holding the path so far) is left
 * naming where, as .name and [index] steps. */
int gust_jtree_equal(const struct gust_jnode *want, const struct gust_jnode *got, char *path, size_t cap);

#endif
