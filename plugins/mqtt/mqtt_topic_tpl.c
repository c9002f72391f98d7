/* mqtt_out's topic templates: `topic "site/{payload.site}/dev/{payload.device}";`
 *
 *   {subject}         the message's subject mapped to a topic (topic_strip removed first,
 *                     tokens as levels, %XX decoded), as topic_from_subject does
 *   {payload.a.b}     field a.b of the JSON payload: a string as is, a number as written
 *                     in the JSON, true/false; missing, null, an object or an array fails
 *                     the message (REJECTED, so it ends in the dead-letter stream)
 * Everything else is literal text, which may not hold + or # (a publish topic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt.h"

enum { PART_TEXT, PART_SUBJECT, PART_FIELD };

#define MAX_DEPTH MQTT_JSON_MAX_DEPTH
#define MAX_FIELDS 16 /* {payload.…} parts of one template: read in one pass over the payload */

struct part {
    int kind;
    const char *text; /* PART_TEXT: borrowed from the spec; PART_FIELD: the field as written */
    size_t len;
    const char *path[MAX_DEPTH + 1]; /* PART_FIELD: NULL-terminated, into names */
    char *names;                     /* owned */
};

struct mqtt_tpl {
    struct part *parts;
    size_t nparts;
    size_t nfields; /* PART_FIELD parts */
};

void mqtt_tpl_free(struct mqtt_tpl *t)
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

int mqtt_tpl_compile(const char *spec, struct mqtt_tpl **out, char *why, size_t whysz)
{
    struct mqtt_tpl *t = calloc(1, sizeof(*t));
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
            if (strcspn(s, "+#") < len) {
                snprintf(why, whysz, "'+' and '#' are wildcards, not allowed in a publish topic");
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
    mqtt_tpl_free(t);
    return -1;
}

int mqtt_tpl_is_fixed(const struct mqtt_tpl *t)
{
    return t->nparts == 0 || (t->nparts == 1 && t->parts[0].kind == PART_TEXT);
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

int mqtt_tpl_render(const struct mqtt_tpl *t, const char *strip, const struct gust_msg *m, char *out, size_t outsz,
                    char *why, size_t whysz)
{
    struct mqtt_json_field f[MAX_FIELDS];
    size_t o = 0, nf = 0;
    int root;

    for (size_t i = 0; i < t->nparts; i++) {
        if (t->parts[i].kind == PART_FIELD) {
            f[nf++].path = t->parts[i].path;
        }
    }
    if (nf && mqtt_json_scan(m->data, m->len, f, nf, &root) != 0) {
        snprintf(why, whysz, "topic needs payload fields, but the payload is not JSON");
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
            int n = mqtt_subject_to_topic(strip, m->subject, out + o, outsz - o);
            if (n < 0) {
                goto too_long;
            }
            o += (size_t)n;
        } else {
            const struct mqtt_json_field *v = &f[nf++];
            size_t n;
            if (v->type == MQTT_JSON_STRING && v->escaped) {
                if (mqtt_json_unescape(v->text, v->len, out + o, outsz - o, &n) != 0) {
                    goto too_long;
                }
                o += n;
            } else if (v->type == MQTT_JSON_STRING || v->type == MQTT_JSON_NUMBER || v->type == MQTT_JSON_TRUE ||
                       v->type == MQTT_JSON_FALSE) {
                if (put(out, outsz, &o, v->text, v->len) != 0) {
                    goto too_long;
                }
            } else {
                snprintf(why, whysz, "topic {payload.%.*s}: the payload %s", (int)p->len, p->text,
                         v->type == MQTT_JSON_NONE   ? "has no such field"
                         : v->type == MQTT_JSON_NULL ? "has it null"
                                                     : "has an object or array there");
                return -1;
            }
        }
    }
    out[o] = '\0';
    return 0;
too_long:
    snprintf(why, whysz, "topic longer than %zu bytes", outsz - 1);
    return -1;
}
