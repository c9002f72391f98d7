/* VPL tokens (docs/VPL.md, "Lexical rules"). The lexer turns the whole source into a
 * token array up front: the parser needs several tokens of lookahead (`IDENT . from (`,
 * the end of a step filter at `.ident(`) and field lines of `event X:` blocks are
 * recognised by their position, so each token records its line, column and whether it
 * starts a line instead of the lexer emitting INDENT/DEDENT. */
#ifndef VPL_LEXER_H
#define VPL_LEXER_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum tok {
    T_EOF,
    T_IDENT,
    T_QIDENT,    /* `name with-dashes` */
    T_INT,       /* .i */
    T_FLOAT,     /* .f */
    T_DURATION,  /* .i in milliseconds */
    T_STRING,    /* .s/.len: content, quotes removed */
    T_TIMESTAMP, /* @2026-09-22T10:00:00Z, .i in epoch ms */
    T_ARROW,     /* -> */
    T_EQ,        /* == */
    T_NE,
    T_LE,
    T_GE,
    T_LT,
    T_GT,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_POW, /* ** */
    T_SLASH,
    T_PERCENT,
    T_DOT,
    T_QDOT, /* ?. */
    T_COMMA,
    T_COLON,
    T_LPAREN,
    T_RPAREN,
    T_LBRACK,
    T_RBRACK,
    T_LBRACE,
    T_RBRACE,
    T_ASSIGN,
    T_QUESTION,
    T_QQ, /* ?? */
};

struct token {
    uint8_t t;   /* enum tok */
    uint8_t bol; /* first token on its line */
    uint32_t line, col;
    const char *s; /* identifier or string content (program arena or source) */
    uint32_t len;
    int64_t i;
    double f;
};

struct tokens {
    struct token *v; /* ends with T_EOF */
    size_t n;
};

/* Tokenises src[0..len). Strings needing unquoting are copied into arena. Returns 0
 * or VPL_ESYNTAX/VPL_ENOMEM with err filled. toks->v is malloc'd: free() it. */
int lex(const char *src, size_t len, struct arena *arena, struct tokens *toks,
        struct vpl_error *err);

const char *tok_name(enum tok t);

#endif
