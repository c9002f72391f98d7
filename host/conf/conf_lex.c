#include "conf_lex.h"

#include <stdlib.h>
#include <string.h>

#include "conf.h"

/* A growing string for the word being read. */
struct sbuf {
    char *p;
    size_t n, cap;
};

static int sbuf_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1) {
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            return GUST_ENOMEM;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* Characters that end a bare word. */
static int is_delim(char c)
{
    return is_space(c) || c == ';' || c == '{' || c == '}';
}

static int is_name_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int gust_conf__lex_init(struct conf_lexer *lx, const char *text, size_t len, const char *file,
                        struct gust_err *err)
{
    const char *p = text;
    const char *end = text + len;

    for (int line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        if (memchr(p, '\0', (size_t)(eol - p)) != NULL) {
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: NUL byte in file", file, line);
        }
        if (eol - p > GUST_CONF_MAX_LINE) {
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: line longer than %d bytes", file, line,
                                GUST_CONF_MAX_LINE);
        }
        p = nl ? nl + 1 : end;
    }
    lx->p = text;
    lx->end = end;
    lx->file = file;
    lx->line = 1;
    return 0;
}

/* Skips spaces and comments, counting lines. */
static void skip_blank(struct conf_lexer *lx)
{
    while (lx->p < lx->end) {
        if (*lx->p == '#') {
            while (lx->p < lx->end && *lx->p != '\n') {
                lx->p++;
            }
        } else if (is_space(*lx->p)) {
            lx->line += *lx->p == '\n';
            lx->p++;
        } else {
            return;
        }
    }
}

/* At "${": appends the variable's value and moves past the '}'. */
static int expand_env(struct conf_lexer *lx, struct sbuf *b, struct gust_err *err)
{
    const char *name = lx->p + 2;
    const char *q = name;

    while (q < lx->end && is_name_char(*q)) {
        q++;
    }
    if (q == name || q == lx->end || *q != '}' || (*name >= '0' && *name <= '9')) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s:%d: bad '${': expected a variable name (letters, digits, '_') "
                            "and '}'",
                            lx->file, lx->line);
    }
    char *key = strndup(name, (size_t)(q - name));
    if (key == NULL) {
        return GUST_ENOMEM;
    }
    const char *val = getenv(key);
    if (val == NULL) {
        gust_err_set(err, GUST_ECONFIG, "%s:%d: environment variable '%s' is not set", lx->file,
                     lx->line, key);
        free(key);
        return GUST_ECONFIG;
    }
    free(key);
    lx->p = q + 1;
    return sbuf_add(b, val, strlen(val));
}

static int read_bare(struct conf_lexer *lx, struct sbuf *b, struct gust_err *err)
{
    while (lx->p < lx->end && !is_delim(*lx->p)) {
        int rc;
        if (*lx->p == '"' || *lx->p == '\'') {
            /* `a"b c"` is almost always a typo; refusing it beats guessing. */
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: unexpected quote inside a word",
                                lx->file, lx->line);
        }
        if (*lx->p == '$' && lx->p + 1 < lx->end && lx->p[1] == '{') {
            rc = expand_env(lx, b, err);
        } else {
            rc = sbuf_add(b, lx->p++, 1);
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* The character an escape stands for, or 0 when it is not one (then the backslash is
 * kept, so regular expressions pass through untouched). */
static char unescape(char c)
{
    switch (c) {
    case 'n':
        return '\n';
    case 't':
        return '\t';
    case '\\':
    case '"':
    case '\'':
    case '$':
        return c;
    default:
        return 0;
    }
}

/* A quoted string ends on its line: an unterminated one is reported where it began. */
static int read_quoted(struct conf_lexer *lx, struct sbuf *b, struct gust_err *err)
{
    char quote = *lx->p++;

    for (;;) {
        int rc;
        if (lx->p == lx->end || *lx->p == '\n') {
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: unterminated string", lx->file,
                                lx->line);
        }
        char c = *lx->p;
        if (c == quote) {
            lx->p++;
            break;
        }
        if (c == '\\' && lx->p + 1 < lx->end && unescape(lx->p[1]) != 0) {
            char e = unescape(lx->p[1]);
            rc = sbuf_add(b, &e, 1);
            lx->p += 2;
        } else if (c == '$' && quote == '"' && lx->p + 1 < lx->end && lx->p[1] == '{') {
            rc = expand_env(lx, b, err);
        } else {
            rc = sbuf_add(b, lx->p++, 1);
        }
        if (rc != 0) {
            return rc;
        }
    }
    if (lx->p < lx->end && !is_delim(*lx->p)) {
        return gust_err_set(err, GUST_ECONFIG, "%s:%d: unexpected '%c' after a quoted string",
                            lx->file, lx->line, *lx->p);
    }
    return 0;
}

int gust_conf__lex_next(struct conf_lexer *lx, enum conf_tok *tok, char **word, int *line,
                        struct gust_err *err)
{
    struct sbuf b = {0};
    int rc;

    *word = NULL;
    skip_blank(lx);
    *line = lx->line;
    if (lx->p == lx->end) {
        *tok = CONF_TOK_EOF;
        return 0;
    }
    switch (*lx->p) {
    case '{':
        *tok = CONF_TOK_LBRACE;
        lx->p++;
        return 0;
    case '}':
        *tok = CONF_TOK_RBRACE;
        lx->p++;
        return 0;
    case ';':
        *tok = CONF_TOK_SEMI;
        lx->p++;
        return 0;
    case '"':
    case '\'':
        rc = read_quoted(lx, &b, err);
        break;
    default:
        rc = read_bare(lx, &b, err);
        break;
    }
    /* An empty quoted string still is a word: allocate "" for it. */
    if (rc == 0 && b.p == NULL) {
        rc = sbuf_add(&b, "", 0);
    }
    if (rc != 0) {
        free(b.p);
        return rc;
    }
    *tok = CONF_TOK_WORD;
    *word = b.p;
    return 0;
}
