#define _GNU_SOURCE /* strcasestr */
#include "puback.h"

#include <stdio.h>
#include <string.h>

#include "gust/err.h"

#define MAX_DEPTH 16 /* of values the PubAck carries besides its own fields */
#define KEY_MAX 32   /* longer keys are none of ours */

struct cur {
    const unsigned char *p, *end;
    const char *fail; /* what is wrong, once something is */
};

static int failed(struct cur *c, const char *why)
{
    if (c->fail == NULL) {
        c->fail = why;
    }
    return -1;
}

static void skip_ws(struct cur *c)
{
    /* RFC 8259's four: form feed and vertical tab are not JSON whitespace. */
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
        c->p++;
    }
}

static int expect(struct cur *c, unsigned char ch, const char *why)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch) {
        return failed(c, why);
    }
    c->p++;
    return 0;
}

static int hex4(const unsigned char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = p[i];
        unsigned d = h >= '0' && h <= '9'   ? h - '0'
                     : h >= 'a' && h <= 'f' ? h - 'a' + 10
                     : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                            : 16;
        if (d == 16) {
            return -1;
        }
        *v = *v * 16 + d;
    }
    return 0;
}

/* The length of the well-formed UTF-8 sequence at p (not ASCII), or 0: no overlong forms,
 * no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0];
    size_t n = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (n == 0 || (size_t)(end - p) < n) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
    }
    if ((b == 0xe0 && p[1] < 0xa0) || (b == 0xed && p[1] > 0x9f) || (b == 0xf0 && p[1] < 0x90) ||
        (b == 0xf4 && p[1] > 0x8f)) {
        return 0;
    }
    return n;
}

/* A string, at its opening quote. Its text goes to out (size > 0, NUL-terminated,
 * printable ASCII: anything else becomes '?') when out is not NULL; *whole says whether
 * it all fitted. */
static int string(struct cur *c, char *out, size_t size, int *whole)
{
    size_t n = 0;
    int fits = 1;
    if (c->p >= c->end || *c->p != '"') {
        return failed(c, "a string expected");
    }
    c->p++;
    for (;;) {
        if (c->p >= c->end) {
            return failed(c, "unterminated string");
        }
        unsigned char ch = *c->p;
        char shown = '?';
        if (ch == '"') {
            c->p++;
            break;
        } else if (ch < 0x20) {
            return failed(c, "control character in a string");
        } else if (ch == '\\') {
            if (c->end - c->p < 2) {
                return failed(c, "unterminated string");
            }
            unsigned char e = c->p[1];
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e != '\0' && simple != NULL) {
                shown = e == '"' || e == '\\' || e == '/' ? (char)e : ' ';
                c->p += 2;
            } else if (e == 'u') {
                unsigned v;
                if (c->end - c->p < 6 || hex4(c->p + 2, &v) != 0) {
                    return failed(c, "bad \\u escape");
                }
                shown = v >= 0x20 && v < 0x7f ? (char)v : '?';
                c->p += 6;
            } else {
                return failed(c, "bad escape in a string");
            }
        } else if (ch < 0x80) {
            shown = ch == 0x7f ? '?' : (char)ch;
            c->p++;
        } else {
            size_t l = utf8_len(c->p, c->end);
            if (l == 0) {
                return failed(c, "invalid UTF-8 in a string");
            }
            c->p += l;
        }
        if (out != NULL) {
            if (n + 1 < size) {
                out[n++] = shown;
            } else {
                fits = 0;
            }
        }
    }
    if (out != NULL) {
        out[n] = '\0';
    }
    if (whole != NULL) {
        *whole = fits;
    }
    return 0;
}

/* A number as JSON writes it; *integer says whether it was a plain unsigned integer, and
 * then *v holds it (*overflow when it does not fit 64 bits). */
static int number(struct cur *c, uint64_t *v, int *integer, int *overflow)
{
    *v = 0;
    *integer = 1;
    *overflow = 0;
    if (c->p < c->end && *c->p == '-') {
        *integer = 0;
        c->p++;
    }
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
        return failed(c, "a number expected");
    }
    if (*c->p == '0') {
        c->p++;
        if (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            return failed(c, "a number with a leading zero");
        }
    } else {
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            uint64_t d = (uint64_t)(*c->p - '0');
            if (*v > (UINT64_MAX - d) / 10) {
                *overflow = 1;
            }
            *v = *v * 10 + d;
            c->p++;
        }
    }
    if (c->p < c->end && *c->p == '.') {
        *integer = 0;
        c->p++;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
            return failed(c, "a number without digits after '.'");
        }
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            c->p++;
        }
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        *integer = 0;
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) {
            c->p++;
        }
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
            return failed(c, "a number without exponent digits");
        }
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            c->p++;
        }
    }
    return 0;
}

static int literal(struct cur *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) {
        return failed(c, "an unknown word");
    }
    c->p += n;
    return 0;
}

static int skip_value(struct cur *c, int depth);

/* An object or an array (at its opening bracket) whose content is of no interest. */
static int skip_container(struct cur *c, int depth)
{
    unsigned char close = *c->p == '{' ? '}' : ']';
    int object = close == '}';
    if (depth >= MAX_DEPTH) {
        return failed(c, "nested too deeply");
    }
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        skip_ws(c);
        if (object && (string(c, NULL, 0, NULL) != 0 || expect(c, ':', "':' expected") != 0)) {
            return -1;
        }
        if (skip_value(c, depth + 1) != 0) {
            return -1;
        }
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
        } else if (c->p < c->end && *c->p == close) {
            c->p++;
            return 0;
        } else {
            return failed(c, "',' or a closing bracket expected");
        }
    }
}

static int skip_value(struct cur *c, int depth)
{
    skip_ws(c);
    if (c->p >= c->end) {
        return failed(c, "a value expected");
    }
    uint64_t v;
    int integer, overflow;
    switch (*c->p) {
    case '{':
    case '[':
        return skip_container(c, depth);
    case '"':
        return string(c, NULL, 0, NULL);
    case 't':
        return literal(c, "true");
    case 'f':
        return literal(c, "false");
    case 'n':
        return literal(c, "null");
    default:
        return number(c, &v, &integer, &overflow);
    }
}

/* The members of an object, at its opening brace: each key (decoded, or "" when too
 * long to be one of ours) is handed to member, which reads its value. */
static int members(struct cur *c, int (*member)(struct cur *c, const char *key, void *ud), void *ud)
{
    if (expect(c, '{', "not a JSON object") != 0) {
        return -1;
    }
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        char key[KEY_MAX];
        int whole;
        skip_ws(c);
        if (string(c, key, sizeof(key), &whole) != 0 || expect(c, ':', "':' expected") != 0) {
            return -1;
        }
        skip_ws(c);
        if (member(c, whole ? key : "", ud) != 0) {
            return -1;
        }
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
        } else if (c->p < c->end && *c->p == '}') {
            c->p++;
            return 0;
        } else {
            return failed(c, "',' or '}' expected");
        }
    }
}

struct error_fields {
    char description[200];
    int has_description;
};

static int error_member(struct cur *c, const char *key, void *ud)
{
    struct error_fields *e = ud;
    if (strcmp(key, "description") == 0 && c->p < c->end && *c->p == '"') {
        e->has_description = 1;
        return string(c, e->description, sizeof(e->description), NULL);
    }
    return skip_value(c, 1);
}

struct fields {
    uint64_t seq;
    int has_seq, has_stream, has_duplicate, has_error, duplicate;
    struct error_fields error;
    char stream[128];
};

static int ack_member(struct cur *c, const char *key, void *ud)
{
    struct fields *f = ud;
    if (strcmp(key, "seq") == 0) {
        int integer, overflow;
        if (f->has_seq) {
            return failed(c, "\"seq\" given twice");
        }
        f->has_seq = 1;
        if (c->p >= c->end || (*c->p != '-' && (*c->p < '0' || *c->p > '9'))) {
            return failed(c, "\"seq\" is not a number");
        }
        if (number(c, &f->seq, &integer, &overflow) != 0) {
            return -1;
        }
        if (!integer) {
            return failed(c, "\"seq\" is not an unsigned integer");
        }
        if (overflow) {
            return failed(c, "\"seq\" is over 2^64-1");
        }
        return 0;
    }
    if (strcmp(key, "stream") == 0) {
        int whole;
        if (f->has_stream) {
            return failed(c, "\"stream\" given twice");
        }
        f->has_stream = 1;
        if (c->p >= c->end || *c->p != '"') {
            return failed(c, "\"stream\" is not a string");
        }
        if (string(c, f->stream, sizeof(f->stream), &whole) != 0) {
            return -1;
        }
        if (!whole) {
            f->stream[0] = '\0'; /* longer than any stream gust names */
        }
        return f->stream[0] == '\0' && whole ? failed(c, "\"stream\" is empty") : 0;
    }
    if (strcmp(key, "duplicate") == 0) {
        if (f->has_duplicate) {
            return failed(c, "\"duplicate\" given twice");
        }
        f->has_duplicate = 1;
        f->duplicate = c->p < c->end && *c->p == 't';
        if (c->p >= c->end || (*c->p != 't' && *c->p != 'f')) {
            return failed(c, "\"duplicate\" is not true or false");
        }
        return literal(c, f->duplicate ? "true" : "false");
    }
    if (strcmp(key, "error") == 0) {
        if (f->has_error) {
            return failed(c, "\"error\" given twice");
        }
        f->has_error = 1;
        if (c->p >= c->end || *c->p != '{') {
            return failed(c, "\"error\" is not an object");
        }
        return members(c, error_member, &f->error);
    }
    return skip_value(c, 1);
}

/* Printable ASCII of data, for a message about it. */
static void shown(const char *data, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 4 < size; i++) {
        unsigned char ch = (unsigned char)data[i];
        out[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    if (len > 0 && n + 4 >= size && n < len) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

int gust_puback_parse(const char *data, size_t len, struct gust_puback *ack, char *why, size_t why_size)
{
    struct cur c = {(const unsigned char *)data, (const unsigned char *)data + len, NULL};
    struct fields f = {0};
    ack->seq = 0;
    ack->duplicate = 0;
    ack->full = 0;
    ack->for_good = 0;
    ack->stream[0] = '\0';
    int rc = members(&c, ack_member, &f);
    memcpy(ack->stream, f.stream, sizeof(ack->stream));
    if (rc == 0) {
        skip_ws(&c);
        if (c.p != c.end) {
            rc = failed(&c, "text after the object");
        }
    }
    if (rc == 0 && f.has_error) {
        const char *d = f.error.has_description ? f.error.description : "error without a description";
        /* The stream at its bound (discard new), the server out of storage: a later
         * publish may be stored. A message over the stream's own size limit never is. */
        ack->full = strstr(d, "maximum bytes exceeded") != NULL || strstr(d, "insufficient resources") != NULL ||
                    strstr(d, "maximum messages exceeded") != NULL || strstr(d, "resource limits exceeded") != NULL;
        ack->for_good = strstr(d, "message size exceeds maximum") != NULL;
        if (ack->full) {
            snprintf(why, why_size, "store full");
        } else {
            snprintf(why, why_size, "jetstream: %s", d);
        }
        return GUST_EIO;
    }
    if (rc == 0 && !f.has_stream) {
        rc = failed(&c, "no \"stream\"");
    }
    if (rc == 0 && !f.has_seq) {
        rc = failed(&c, "no \"seq\"");
    }
    if (rc == 0 && f.seq == 0) {
        rc = failed(&c, "\"seq\" is 0");
    }
    if (rc != 0) {
        char text[64];
        shown(data, len, text, sizeof(text));
        snprintf(why, why_size, "unreadable PubAck (%s): %s", c.fail, text);
        return GUST_EINVAL;
    }
    ack->seq = f.seq;
    ack->duplicate = f.duplicate;
    if (why_size > 0) {
        why[0] = '\0';
    }
    return 0;
}

int gust_refused_subject(const char *text, char *out, size_t size)
{
    static const char lead[] = "ermissions violation for publish to ";
    const char *at = text != NULL ? strcasestr(text, lead) : NULL;
    if (at == NULL || size == 0) {
        return -1;
    }
    at += sizeof(lead) - 1;
    at += *at == '"';
    size_t n = strcspn(at, "\"' \r\n");
    if (n == 0 || n >= size) {
        return -1;
    }
    memcpy(out, at, n);
    out[n] = '\0';
    return 0;
}
