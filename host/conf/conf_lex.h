/* Tokens of host.conf, internal to the parser (conf_parse.c).
 *
 * A word is a bare run of characters or a "..." / '...' string, returned with quotes
 * removed, escapes applied and ${NAME} replaced from the environment. '#' starts a
 * comment only where a token could start, so `topic sensors/#;` keeps its '#'. */
#ifndef GUST_CONF_LEX_H
#define GUST_CONF_LEX_H

#include <stddef.h>

#include "gust/err.h"

enum conf_tok {
    CONF_TOK_EOF,
    CONF_TOK_WORD,
    CONF_TOK_LBRACE,
    CONF_TOK_RBRACE,
    CONF_TOK_SEMI,
};

struct conf_lexer {
    const char *p; /* next byte */
    const char *end;
    const char *file; /* borrowed, for messages */
    int line;         /* line of p */
};

/* Starts lexing text[0..len) (borrowed, must outlive the lexer). Refuses NUL bytes and
 * lines longer than GUST_CONF_MAX_LINE up front so that the rest never meets them. */
int gust_conf__lex_init(struct conf_lexer *lx, const char *text, size_t len, const char *file,
                        struct gust_err *err);

/* Reads the next token into *tok and the line it starts at into *line. For a word, *word
 * receives a new NUL-terminated string the caller owns. Returns 0, GUST_ECONFIG with
 * "file:line: message" in err, or GUST_ENOMEM. */
int gust_conf__lex_next(struct conf_lexer *lx, enum conf_tok *tok, char **word, int *line,
                        struct gust_err *err);

#endif
