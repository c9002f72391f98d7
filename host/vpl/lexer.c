#include "lexer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfc3339.h"

struct lexer {
    const char *src;
    size_t len, pos;
    uint32_t line, col;
    uint32_t last_line; /* line of the previous token, for bol */
    struct arena *arena;
    struct tokens *out;
    size_t cap;
    struct vpl_error *err;
};

static int is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int peek(const struct lexer *lx, size_t ahead)
{
    return lx->pos + ahead < lx->len ? (unsigned char)lx->src[lx->pos + ahead] : -1;
}

static void advance(struct lexer *lx, size_t n)
{
    while (n-- > 0 && lx->pos < lx->len) {
        if (lx->src[lx->pos] == '\n') {
            lx->line++;
            lx->col = 1;
        } else if (((unsigned char)lx->src[lx->pos] & 0xC0) != 0x80) {
            lx->col++; /* columns count characters, not UTF-8 continuation bytes */
        }
        lx->pos++;
    }
}

static int fail(struct lexer *lx, uint32_t line, uint32_t col, const char *msg)
{
    return vpl_err_at(lx->err, VPL_ESYNTAX, line, col, "%s", msg);
}

static struct token *emit(struct lexer *lx, enum tok t, uint32_t line, uint32_t col)
{
    if (lx->out->n == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        struct token *v = realloc(lx->out->v, cap * sizeof(*v));
        if (v == NULL) {
            return NULL;
        }
        lx->out->v = v;
        lx->cap = cap;
    }
    struct token *tk = &lx->out->v[lx->out->n++];
    memset(tk, 0, sizeof(*tk));
    tk->t = (uint8_t)t;
    tk->line = line;
    tk->col = col;
    tk->bol = lx->out->n == 1 || line != lx->last_line;
    lx->last_line = line;
    return tk;
}

/* Skips blanks and comments. `//` is not a comment in VPL. */
static int skip_space(struct lexer *lx)
{
    for (;;) {
        int c = peek(lx, 0);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
            advance(lx, 1);
        } else if (c == '#') {
            while (peek(lx, 0) != -1 && peek(lx, 0) != '\n') {
                advance(lx, 1);
            }
        } else if (c == '/' && peek(lx, 1) == '*') {
            uint32_t line = lx->line, col = lx->col;
            advance(lx, 2);
            while (!(peek(lx, 0) == '*' && peek(lx, 1) == '/')) {
                if (peek(lx, 0) == -1) {
                    return fail(lx, line, col, "unterminated block comment: expected '*/'");
                }
                advance(lx, 1);
            }
            advance(lx, 2);
        } else {
            return 0;
        }
    }
}

static const struct {
    const char *name;
    int64_t ms_num, ms_den; /* milliseconds per unit as a fraction */
} units[] = {
    {"ns", 1, 1000000}, {"us", 1, 1000},   {"ms", 1, 1},       {"s", 1000, 1},
    {"m", 60000, 1},    {"h", 3600000, 1}, {"d", 86400000, 1},
};

static int lex_number(struct lexer *lx, uint32_t line, uint32_t col)
{
    size_t start = lx->pos;
    while (is_digit(peek(lx, 0))) {
        advance(lx, 1);
    }
    size_t ndig = lx->pos - start;
    /* A duration is tried before an int: `.window(5s)` is time, `.window(5)` count. */
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        size_t ul = strlen(units[u].name);
        if (lx->pos + ul <= lx->len && memcmp(lx->src + lx->pos, units[u].name, ul) == 0 &&
            !is_alpha(peek(lx, ul)) && !is_digit(peek(lx, ul))) {
            errno = 0;
            char tmp[32];
            if (ndig >= sizeof(tmp)) {
                return fail(lx, line, col, "duration is too large");
            }
            memcpy(tmp, lx->src + start, ndig);
            tmp[ndig] = '\0';
            unsigned long long v = strtoull(tmp, NULL, 10);
            if (errno == ERANGE || v > (unsigned long long)INT64_MAX / (uint64_t)units[u].ms_num) {
                return fail(lx, line, col, "duration is too large");
            }
            struct token *tk = emit(lx, T_DURATION, line, col);
            if (tk == NULL) {
                return VPL_ENOMEM;
            }
            tk->i = (int64_t)v * units[u].ms_num / units[u].ms_den;
            advance(lx, ul);
            return 0;
        }
    }
    int is_float = 0;
    if (peek(lx, 0) == '.' && is_digit(peek(lx, 1))) {
        is_float = 1;
        advance(lx, 1);
        while (is_digit(peek(lx, 0))) {
            advance(lx, 1);
        }
        if (peek(lx, 0) == 'e' || peek(lx, 0) == 'E') {
            int k = (peek(lx, 1) == '+' || peek(lx, 1) == '-') ? 2 : 1;
            if (is_digit(peek(lx, k))) {
                advance(lx, (size_t)k);
                while (is_digit(peek(lx, 0))) {
                    advance(lx, 1);
                }
            }
        }
    }
    if (is_alpha(peek(lx, 0))) {
        return fail(lx, line, col,
                    "bad number: expected a digit, a duration unit "
                    "(ns, us, ms, s, m, h, d) or a separator");
    }
    size_t n = lx->pos - start;
    char *tmp = arena_strndup(lx->arena, lx->src + start, n);
    if (tmp == NULL) {
        return VPL_ENOMEM;
    }
    struct token *tk = emit(lx, is_float ? T_FLOAT : T_INT, line, col);
    if (tk == NULL) {
        return VPL_ENOMEM;
    }
    errno = 0;
    if (is_float) {
        tk->f = strtod(tmp, NULL);
        if (!isfinite(tk->f)) {
            return fail(lx, line, col, "number is too large for a double (at most 1.7976931348623157e308)");
        }
    } else {
        tk->i = strtoll(tmp, NULL, 10);
        if (errno == ERANGE) {
            return fail(lx, line, col, "integer is too large for 64 bits");
        }
    }
    return 0;
}

/* Double-quoted strings are verbatim: `\"` keeps both characters and does not end
 * the string. Single-quoted strings are raw and `''` is one quote. */
static int lex_string(struct lexer *lx, uint32_t line, uint32_t col)
{
    int q = peek(lx, 0);
    advance(lx, 1);
    size_t start = lx->pos;
    int doubled = 0;
    for (;;) {
        int c = peek(lx, 0);
        if (c == -1) {
            return fail(lx, line, col,
                        q == '"' ? "unterminated string: expected '\"'"
                                 : "unterminated string: expected \"'\"");
        }
        if (q == '"' && c == '\\' && peek(lx, 1) == '"') {
            advance(lx, 2);
        } else if (c == q) {
            if (q == '\'' && peek(lx, 1) == '\'') {
                doubled = 1;
                advance(lx, 2);
            } else {
                break;
            }
        } else {
            advance(lx, 1);
        }
    }
    size_t n = lx->pos - start;
    advance(lx, 1);
    struct token *tk = emit(lx, T_STRING, line, col);
    if (tk == NULL) {
        return VPL_ENOMEM;
    }
    if (!doubled) {
        tk->s = lx->src + start;
        tk->len = (uint32_t)n;
        return 0;
    }
    char *p = arena_alloc(lx->arena, n + 1);
    if (p == NULL) {
        return VPL_ENOMEM;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        p[o++] = lx->src[start + i];
        if (lx->src[start + i] == '\'') {
            i++;
        }
    }
    tk->s = p;
    tk->len = (uint32_t)o;
    return 0;
}

static int lex_op(struct lexer *lx, uint32_t line, uint32_t col)
{
    static const struct {
        const char *text;
        enum tok t;
    } ops[] = {
        {"->", T_ARROW},   {"==", T_EQ},    {"!=", T_NE},    {"<=", T_LE},    {">=", T_GE},
        {"**", T_POW},     {"??", T_QQ},    {"?.", T_QDOT},  {"<", T_LT},     {">", T_GT},
        {"+", T_PLUS},     {"-", T_MINUS},  {"*", T_STAR},   {"/", T_SLASH},  {"%", T_PERCENT},
        {".", T_DOT},      {",", T_COMMA},  {":", T_COLON},  {"(", T_LPAREN}, {")", T_RPAREN},
        {"[", T_LBRACK},   {"]", T_RBRACK}, {"{", T_LBRACE}, {"}", T_RBRACE}, {"=", T_ASSIGN},
        {"?", T_QUESTION},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        size_t n = strlen(ops[i].text);
        if (lx->pos + n <= lx->len && memcmp(lx->src + lx->pos, ops[i].text, n) == 0) {
            if (emit(lx, ops[i].t, line, col) == NULL) {
                return VPL_ENOMEM;
            }
            advance(lx, n);
            return 0;
        }
    }
    int c = peek(lx, 0);
    char msg[80];
    if (c >= 0x20 && c < 0x7f) {
        snprintf(msg, sizeof(msg), "unexpected character '%c'", c);
    } else {
        snprintf(msg, sizeof(msg), "unexpected byte 0x%02x", (unsigned)c);
    }
    return fail(lx, line, col, msg);
}

int lex(const char *src, size_t len, struct arena *arena, struct tokens *toks, struct vpl_error *err)
{
    toks->v = NULL;
    toks->n = 0;
    /* Tokens point into a copy of the source that lives as long as the program. */
    src = arena_strndup(arena, src, len);
    if (src == NULL) {
        return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
    }
    struct lexer lx = {.src = src, .len = len, .line = 1, .col = 1, .arena = arena, .out = toks, .err = err};
    int rc;
    for (;;) {
        if ((rc = skip_space(&lx)) != 0) {
            return rc;
        }
        uint32_t line = lx.line, col = lx.col;
        int c = peek(&lx, 0);
        if (c == -1) {
            break;
        }
        if (is_alpha(c)) {
            size_t start = lx.pos;
            while (is_alpha(peek(&lx, 0)) || is_digit(peek(&lx, 0))) {
                advance(&lx, 1);
            }
            struct token *tk = emit(&lx, T_IDENT, line, col);
            if (tk == NULL) {
                return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
            }
            tk->s = src + start;
            tk->len = (uint32_t)(lx.pos - start);
        } else if (is_digit(c)) {
            rc = lex_number(&lx, line, col);
        } else if (c == '"' || c == '\'') {
            rc = lex_string(&lx, line, col);
        } else if (c == '`') {
            advance(&lx, 1);
            size_t start = lx.pos;
            while (peek(&lx, 0) != '`') {
                if (peek(&lx, 0) == -1 || peek(&lx, 0) == '\n') {
                    return fail(&lx, line, col, "unterminated field name: expected '`'");
                }
                advance(&lx, 1);
            }
            if (lx.pos == start) {
                return fail(&lx, line, col, "empty field name in backticks");
            }
            struct token *tk = emit(&lx, T_QIDENT, line, col);
            if (tk == NULL) {
                return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
            }
            tk->s = src + start;
            tk->len = (uint32_t)(lx.pos - start);
            advance(&lx, 1);
        } else if (c == '@' && is_digit(peek(&lx, 1))) {
            advance(&lx, 1);
            size_t start = lx.pos;
            while (peek(&lx, 0) != -1 && (is_digit(peek(&lx, 0)) || is_alpha(peek(&lx, 0)) ||
                                          strchr("-:.+", peek(&lx, 0)) != NULL)) {
                advance(&lx, 1);
            }
            int64_t ms;
            if (rfc3339_parse(src + start, lx.pos - start, &ms) != 0) {
                return fail(&lx, line, col, "bad timestamp: expected @YYYY-MM-DDTHH:MM:SSZ");
            }
            struct token *tk = emit(&lx, T_TIMESTAMP, line, col);
            if (tk == NULL) {
                return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
            }
            tk->i = ms;
        } else {
            rc = lex_op(&lx, line, col);
        }
        if (rc == VPL_ENOMEM) {
            return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
        }
        if (rc != 0) {
            return rc;
        }
    }
    if (emit(&lx, T_EOF, lx.line, lx.col) == NULL) {
        return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
    }
    return 0;
}

const char *tok_name(enum tok t)
{
    static const char *names[] = {
        "end of input", "identifier", "field name", "integer", "float", "duration", "string",
        "timestamp",    "'->'",       "'=='",       "'!='",    "'<='",  "'>='",     "'<'",
        "'>'",          "'+'",        "'-'",        "'*'",     "'**'",  "'/'",      "'%'",
        "'.'",          "'?.'",       "','",        "':'",     "'('",   "')'",      "'['",
        "']'",          "'{'",        "'}'",        "'='",     "'?'",      "'?" "?'",
    };
    return (size_t)t < sizeof(names) / sizeof(names[0]) ? names[t] : "token";
}
