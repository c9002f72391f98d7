/* A walker over the top level of a JSON object, not a parser: the sink has to keep up with
 * well over 100k bodies a second on one core and needs two members only, so it skips every
 * value without building anything and stops checking syntax beyond what the walk needs. */
#include "sink_body.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t skip_ws(const char *p, size_t i, size_t len)
{
    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) {
        i++;
    }
    return i;
}

/* i is at an opening quote; returns the index just past the closing one, or len. */
static size_t skip_string(const char *p, size_t i, size_t len)
{
    for (i++; i < len; i++) {
        if (p[i] == '\\') {
            i++;
        } else if (p[i] == '"') {
            return i + 1;
        }
    }
    return len;
}

/* Returns the index just past the value starting at i, or len when it runs off the end. */
static size_t skip_value(const char *p, size_t i, size_t len)
{
    if (p[i] == '"') {
        return skip_string(p, i, len);
    }
    if (p[i] == '{' || p[i] == '[') {
        int depth = 0;
        while (i < len) {
            char c = p[i];
            if (c == '"') {
                i = skip_string(p, i, len);
                continue;
            }
            if (c == '{' || c == '[') {
                depth++;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return i + 1;
            }
            i++;
        }
        return len;
    }
    while (i < len && !strchr(",}] \t\r\n", p[i])) {
        i++;
    }
    return i;
}

static int parse_t(const char *p, size_t len, int64_t *t_us)
{
    char buf[64];
    char *end;

    if (len == 0 || len >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
    double ms = strtod(buf, &end);
    if (end != buf + len || !isfinite(ms)) {
        return -1;
    }
    *t_us = llround(ms * 1000.0);
    return 0;
}

int sink_body_scan(const char *p, size_t len, const char *id_name, struct sink_fields *out)
{
    size_t id_name_len = strlen(id_name);
    size_t i = skip_ws(p, 0, len);

    memset(out, 0, sizeof(*out));
    if (i >= len || p[i] != '{') {
        return -1;
    }
    i = skip_ws(p, i + 1, len);
    if (i < len && p[i] == '}') {
        return 0;
    }
    while (i < len && p[i] == '"') {
        size_t key = i + 1;
        i = skip_string(p, i, len);
        size_t key_len = i - key - 1;
        i = skip_ws(p, i, len);
        if (i >= len || p[i] != ':') {
            return -1;
        }
        i = skip_ws(p, i + 1, len);
        if (i >= len) {
            return -1;
        }
        size_t val = i;
        i = skip_value(p, i, len);
        if (key_len == 1 && p[key] == 't') {
            out->has_t = parse_t(p + val, i - val, &out->t_us) == 0;
        } else if (key_len == id_name_len && memcmp(p + key, id_name, key_len) == 0) {
            int quoted = p[val] == '"';
            out->id = p + val + quoted;
            out->id_len = i - val - 2 * quoted;
        }
        i = skip_ws(p, i, len);
        if (i < len && p[i] == '}') {
            return 0;
        }
        if (i >= len || p[i] != ',') {
            return -1;
        }
        i = skip_ws(p, i + 1, len);
    }
    return -1;
}

long sink_body_elements(const char *p, size_t len, void (*fn)(void *ud, const char *el, size_t n), void *ud)
{
    size_t i = skip_ws(p, 0, len);
    long n = 0;

    if (i >= len || p[i] != '[') {
        return -1;
    }
    i = skip_ws(p, i + 1, len);
    if (i < len && p[i] == ']') {
        return 0;
    }
    while (i < len) {
        size_t el = i;
        i = skip_value(p, i, len);
        fn(ud, p + el, i - el);
        n++;
        i = skip_ws(p, i, len);
        if (i < len && p[i] == ']') {
            return n;
        }
        if (i >= len || p[i] != ',') {
            return -1;
        }
        i = skip_ws(p, i + 1, len);
    }
    return -1;
}
