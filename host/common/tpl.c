/* Sink templates (gust/sdk.h): `topic "site/{payload.site}/dev/{payload.device}";`
 *
 *   {subject}         the message's subject, or what the sink's subject_fn makes of it
 *   {subject.N}       token N of the subject, from 0
 *   {payload.a.b}     field a.b of the JSON payload, read in place (json_fields.c): a
 *                     string as its text, a number as written, anything else (true,
 *                     false, null, an object, an array) as compact JSON
 *   {env.X}           the environment variable X, read once when compiled
 *   {secret:PATH#KEY} the secret's value in the host's store (host/secret/), copied at
 *                     each render so that a rotated value is in force at once; found
 *                     in the process by name (secret_ref.h), so a plugin needs
 *                     nothing but the SDK. No default: an unresolved secret fails.
 *   {NAME:-default}   any of them (but a secret) with a default, used when the value is missing (or
 *                     null); without one, a missing value fails the message
 * Everything else is literal text. A template is compiled once at load into parts, and
 * rendered per message with one pass over the payload for all its fields. The values
 * (not the literal text) may be percent-encoded for a URL or checked for a header line. */
#define _GNU_SOURCE /* strndup */
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gust/msg.h"
#include "gust/sdk.h"
#include "secret_ref.h"

enum { PART_TEXT, PART_SUBJECT, PART_SUBJECT_N, PART_FIELD, PART_SECRET };

#define MAX_DEPTH GUST_JSON_FIELD_DEPTH
#define MAX_FIELDS 16 /* {payload.…} parts of one template: read in one pass over the payload */

struct part {
    int kind;
    const char *text; /* PART_TEXT: borrowed from the spec, or owned (an env value, in
                         names); else the placeholder's name as written, for errors */
    size_t len;
    const char *path[MAX_DEPTH + 1]; /* PART_FIELD: NULL-terminated, into names */
    char *names;                     /* owned */
    size_t token;                    /* PART_SUBJECT_N */
    const char *def;                 /* the default (after ":-"), or NULL: into the spec */
    size_t def_len;
};

struct gust_tpl {
    struct part *parts;
    size_t nparts;
    size_t nfields; /* PART_FIELD parts */
};

void gust_tpl_free(struct gust_tpl *t)
{
    if (!t) {
        return;
    }
    for (size_t i = 0; i < t->nparts; i++) {
        free(t->parts[i].names);
    }
    free(t->parts);
    free(t);
}

static int field_part(struct part *p, const char *name, size_t len, char *why, size_t whysz)
{
    p->kind = PART_FIELD;
    p->text = name;
    p->len = len;
    if (!(p->names = malloc(len + 1))) {
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    memcpy(p->names, name, len);
    p->names[len] = '\0';
    size_t depth = 0;
    for (char *s = p->names;; depth++) {
        char *dot = strchr(s, '.');
        if (dot) {
            *dot = '\0';
        }
        if (!*s || depth == MAX_DEPTH) {
            snprintf(why, whysz, "{payload.%.*s}: %s", (int)len, name,
                     *s ? "more than 8 levels" : "empty field name");
            return -1;
        }
        p->path[depth] = s;
        if (!dot) {
            break;
        }
        s = dot + 1;
    }
    p->path[depth + 1] = NULL;
    return 0;
}

int gust_tpl_compile(const char *spec, struct gust_tpl **out, char *why, size_t whysz)
{
    struct gust_tpl *t = calloc(1, sizeof(*t));
    size_t n = strlen(spec);

    *out = NULL;
    if (!t || !(t->parts = calloc(n + 1, sizeof(*t->parts)))) {
        free(t);
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    for (const char *s = spec; *s;) {
        struct part *p = &t->parts[t->nparts++];
        if (*s != '{') {
            size_t len = strcspn(s, "{}");
            if (s[len] == '}') {
                snprintf(why, whysz, "'}' without '{' at offset %zu", (size_t)(s + len - spec));
                goto fail;
            }
            *p = (struct part){.kind = PART_TEXT, .text = s, .len = len};
            s += len;
            continue;
        }
        const char *end = strchr(s, '}');
        if (!end || memchr(s + 1, '{', (size_t)(end - s - 1))) {
            snprintf(why, whysz, "'{' at offset %zu is not closed", (size_t)(s - spec));
            goto fail;
        }
        const char *name = s + 1;
        size_t len = (size_t)(end - name);
        const char *dflt = NULL;
        for (size_t k = 0; k + 1 < len; k++) {
            if (name[k] == ':' && name[k + 1] == '-') {
                dflt = name + k + 2;
                p->def = dflt;
                p->def_len = len - k - 2;
                len = k;
                break;
            }
        }
        if (len == 7 && memcmp(name, "subject", 7) == 0) {
            p->kind = PART_SUBJECT;
            p->text = name;
            p->len = len;
        } else if (len > 8 && memcmp(name, "subject.", 8) == 0) {
            size_t k = 8, tok = 0;
            while (k < len && isdigit((unsigned char)name[k]) && tok < 1000) {
                tok = tok * 10 + (size_t)(name[k++] - '0');
            }
            if (k < len || tok >= 1000) {
                snprintf(why, whysz, "{%.*s}: the token is a number from 0", (int)len, name);
                goto fail;
            }
            p->kind = PART_SUBJECT_N;
            p->token = tok;
            p->text = name;
            p->len = len;
        } else if (len > 4 && memcmp(name, "env.", 4) == 0) {
            /* Read once: the environment of the process does not change under it. */
            char var[256];
            snprintf(var, sizeof(var), "%.*s", (int)(len - 4), name + 4);
            const char *v = getenv(var);
            if (!v && !dflt) {
                snprintf(why, whysz, "{%.*s}: %s is not set (give a default: {%.*s:-...})", (int)len, name, var,
                         (int)len, name);
                goto fail;
            }
            p->kind = PART_TEXT;
            if (!(p->names = v ? strdup(v) : strndup(dflt, p->def_len))) {
                snprintf(why, whysz, "out of memory");
                goto fail;
            }
            p->text = p->names;
            p->len = strlen(p->names);
            p->def = NULL;
        } else if (len > 7 && memcmp(name, "secret:", 7) == 0) {
            if (dflt || !memchr(name + 7, '#', len - 7)) {
                snprintf(why, whysz, "{%.*s}: a secret is {secret:PATH#KEY}, without a default", (int)(end - name),
                         name);
                goto fail;
            }
            p->kind = PART_SECRET;
            p->text = name;
            p->len = len;
        } else if (len > 8 && memcmp(name, "payload.", 8) == 0) {
            if (t->nfields == MAX_FIELDS) {
                snprintf(why, whysz, "more than %d {payload.FIELD} placeholders", MAX_FIELDS);
                goto fail;
            }
            if (field_part(p, name + 8, len - 8, why, whysz) != 0) {
                goto fail;
            }
            t->nfields++;
        } else {
            snprintf(why, whysz, "unknown placeholder {%.*s}: use {subject}, {subject.N}, {payload.FIELD}, {env.X} or "
                     "{secret:PATH#KEY}",
                     (int)len, name);
            goto fail;
        }
        s = end + 1;
    }
    *out = t;
    return 0;
fail:
    gust_tpl_free(t);
    return -1;
}

static int put(char *out, size_t outsz, size_t *o, const char *s, size_t len)
{
    if (*o + len >= outsz) {
        return -1;
    }
    memcpy(out + *o, s, len);
    *o += len;
    return 0;
}

/* What a value may not hold as it is, by flags. */
static int unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* Writes the value s[0..len) as the flags say: percent-encoded (GUST_TPL_URL), refused
 * with a line break or a NUL (GUST_TPL_HEADER). -1 with why, or -2 when out is full. */
static int put_value(char *out, size_t outsz, size_t *o, const char *s, size_t len, int flags,
                     const struct part *p, char *why, size_t whysz)
{
    if ((flags & GUST_TPL_HEADER) && (memchr(s, '\r', len) || memchr(s, '\n', len) || memchr(s, '\0', len))) {
        snprintf(why, whysz, "{%s%.*s}: the value holds a line break, which would end the header line",
                 p->kind == PART_FIELD ? "payload." : "", (int)p->len, p->text);
        return -1;
    }
    if (!(flags & GUST_TPL_URL)) {
        return put(out, outsz, o, s, len) != 0 ? -2 : 0;
    }
    static const char hexd[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char enc[3] = {'%', hexd[c >> 4], hexd[c & 15]};
        if (unreserved(c) ? put(out, outsz, o, s + i, 1) != 0 : put(out, outsz, o, enc, 3) != 0) {
            return -2;
        }
    }
    return 0;
}

/* An object or array starting at p, within end (the payload was checked whole): its
 * compact JSON (white space outside strings dropped) into buf; the length, or -1 when
 * buf is too small. */
static long compact(const char *p, const char *end, char *buf, size_t bufsz)
{
    size_t o = 0, depth = 0;
    int in_str = 0;
    for (; p < end; p++) {
        char c = *p;
        if (in_str) {
            if (c == '\\' && p + 1 < end) {
                if (o + 2 >= bufsz) {
                    return -1;
                }
                buf[o++] = c;
                buf[o++] = *++p;
                continue;
            }
            in_str = c != '"';
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            continue;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        }
        if (o + 1 >= bufsz) {
            return -1;
        }
        buf[o++] = c;
        if (depth == 0 && !in_str) {
            break;
        }
    }
    return (long)o;
}

/* Token n of subject (from 0) in *tok, *tlen; -1 when it has fewer. */
static int token_of(const char *subject, size_t n, const char **tok, size_t *tlen)
{
    const char *s = subject;
    for (size_t i = 0; i < n; i++) {
        s = strchr(s, '.');
        if (!s) {
            return -1;
        }
        s++;
    }
    *tok = s;
    *tlen = strcspn(s, ".");
    return 0;
}

/* Copies {secret:…}'s value into out: its length, or -1 with why, -2 when out is small. */
static long secret_value(const struct part *p, char *out, size_t outsz, char *why, size_t whysz)
{
    size_t n = 0;
    int rc = gust_secret_ref_value(p->text + 7, p->len - 7, out, outsz, &n, why, whysz);
    return rc != 0 ? rc : (long)n;
}

int gust_tpl_render(const struct gust_tpl *t, const struct gust_msg *m, gust_tpl_subject_fn subject_fn, void *ud,
                    char *out, size_t outsz, char *why, size_t whysz)
{
    return gust_tpl_render_as(t, m, 0, subject_fn, ud, out, outsz, why, whysz);
}

int gust_tpl_render_as(const struct gust_tpl *t, const struct gust_msg *m, int flags, gust_tpl_subject_fn subject_fn,
                       void *ud, char *out, size_t outsz, char *why, size_t whysz)
{
    struct gust_json_field f[MAX_FIELDS];
    size_t o = 0, nf = 0;
    int root, rc = 0;
    char tmp[4096];

    for (size_t i = 0; i < t->nparts; i++) {
        if (t->parts[i].kind == PART_FIELD) {
            f[nf++].path = t->parts[i].path;
        }
    }
    if (nf && gust_json_scan(m->data, m->len, f, nf, &root) != 0) {
        snprintf(why, whysz, "needs payload fields, but the payload is not JSON");
        return -1;
    }
    nf = 0;
    for (size_t i = 0; i < t->nparts && rc == 0; i++) {
        const struct part *p = &t->parts[i];
        const char *v = NULL;
        size_t vlen = 0;
        if (p->kind == PART_TEXT) {
            rc = put(out, outsz, &o, p->text, p->len) != 0 ? -2 : 0;
            continue;
        }
        if (p->kind == PART_SUBJECT) {
            if (subject_fn) {
                int n = subject_fn(ud, m->subject, tmp, sizeof(tmp));
                if (n < 0) {
                    rc = -2;
                    continue;
                }
                v = tmp;
                vlen = (size_t)n;
            } else {
                v = m->subject;
                vlen = strlen(m->subject);
            }
        } else if (p->kind == PART_SECRET) {
            long n = secret_value(p, tmp, sizeof(tmp), why, whysz);
            if (n == -1) {
                return -1;
            }
            if (n < 0) {
                rc = -2;
                continue;
            }
            rc = put_value(out, outsz, &o, tmp, (size_t)n, flags, p, why, whysz);
            explicit_bzero(tmp, (size_t)n); /* only the rendered text holds it from here */
            continue;
        } else if (p->kind == PART_SUBJECT_N) {
            if (token_of(m->subject, p->token, &v, &vlen) != 0) {
                if (!p->def) {
                    snprintf(why, whysz, "{%.*s}: the subject %s has no token %zu", (int)p->len, p->text, m->subject,
                             p->token);
                    return -1;
                }
                v = NULL;
            }
        } else {
            const struct gust_json_field *fv = &f[nf++];
            if (fv->type == GUST_JV_STRING && fv->escaped) {
                if (gust_json_unescape(fv->text, fv->len, tmp, sizeof(tmp), &vlen) != 0) {
                    rc = -2;
                    continue;
                }
                v = tmp;
            } else if (fv->type == GUST_JV_STRING || fv->type == GUST_JV_NUMBER || fv->type == GUST_JV_TRUE ||
                       fv->type == GUST_JV_FALSE || (fv->type == GUST_JV_NULL && !p->def)) {
                v = fv->text;
                vlen = fv->len;
            } else if (fv->type == GUST_JV_CONTAINER) {
                long n = compact(fv->text, (const char *)m->data + m->len, tmp, sizeof(tmp));
                if (n < 0) {
                    rc = -2;
                    continue;
                }
                v = tmp;
                vlen = (size_t)n;
            } else if (fv->type == GUST_JV_NONE && !p->def) {
                snprintf(why, whysz, "{payload.%.*s}: the payload has no such field", (int)p->len, p->text);
                return -1;
            }
        }
        if (!v) {
            v = p->def; /* missing (or null) with a default */
            vlen = p->def_len;
        }
        rc = put_value(out, outsz, &o, v, vlen, flags, p, why, whysz);
    }
    if (rc == -1) {
        return -1;
    }
    if (rc != 0) {
        snprintf(why, whysz, "longer than %zu bytes", outsz - 1);
        return -1;
    }
    out[o] = '\0';
    return 0;
}
