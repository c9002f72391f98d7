/* Sink templates (gust/sdk.h): `topic "site/{payload.site}/dev/{payload.device}";`
 *
 *   {subject}         the message's subject, or what the sink's subject_fn makes of it
 *   {payload.a.b}     field a.b of the JSON payload, read in place (json_fields.c)
 * Everything else is literal text. A template is compiled once at load into parts, and
 * rendered per message with one pass over the payload for all its fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/msg.h"
#include "gust/sdk.h"

enum { PART_TEXT, PART_SUBJECT, PART_FIELD };

#define MAX_DEPTH GUST_JSON_FIELD_DEPTH
#define MAX_FIELDS 16 /* {payload.…} parts of one template: read in one pass over the payload */

struct part {
    int kind;
    const char *text; /* PART_TEXT: borrowed from the spec; PART_FIELD: the field as written */
    size_t len;
    const char *path[MAX_DEPTH + 1]; /* PART_FIELD: NULL-terminated, into names */
    char *names;                     /* owned */
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
        if (len == 7 && memcmp(name, "subject", 7) == 0) {
            p->kind = PART_SUBJECT;
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
            snprintf(why, whysz, "unknown placeholder {%.*s}: use {subject} or {payload.FIELD}", (int)len, name);
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

int gust_tpl_render(const struct gust_tpl *t, const struct gust_msg *m, gust_tpl_subject_fn subject_fn, void *ud,
                    char *out, size_t outsz, char *why, size_t whysz)
{
    struct gust_json_field f[MAX_FIELDS];
    size_t o = 0, nf = 0;
    int root;

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
    for (size_t i = 0; i < t->nparts; i++) {
        const struct part *p = &t->parts[i];
        if (p->kind == PART_TEXT) {
            if (put(out, outsz, &o, p->text, p->len) != 0) {
                goto too_long;
            }
        } else if (p->kind == PART_SUBJECT) {
            int n = subject_fn ? subject_fn(ud, m->subject, out + o, outsz - o)
                               : (strlen(m->subject) < outsz - o ? snprintf(out + o, outsz - o, "%s", m->subject) : -1);
            if (n < 0) {
                goto too_long;
            }
            o += (size_t)n;
        } else {
            const struct gust_json_field *v = &f[nf++];
            size_t n;
            if (v->type == GUST_JV_STRING && v->escaped) {
                if (gust_json_unescape(v->text, v->len, out + o, outsz - o, &n) != 0) {
                    goto too_long;
                }
                o += n;
            } else if (v->type == GUST_JV_STRING || v->type == GUST_JV_NUMBER || v->type == GUST_JV_TRUE ||
                       v->type == GUST_JV_FALSE) {
                if (put(out, outsz, &o, v->text, v->len) != 0) {
                    goto too_long;
                }
            } else {
                snprintf(why, whysz, "{payload.%.*s}: the payload %s", (int)p->len, p->text,
                         v->type == GUST_JV_NONE   ? "has no such field"
                         : v->type == GUST_JV_NULL ? "has it null"
                                                     : "has an object or array there");
                return -1;
            }
        }
    }
    out[o] = '\0';
    return 0;
too_long:
    snprintf(why, whysz, "longer than %zu bytes", outsz - 1);
    return -1;
}
