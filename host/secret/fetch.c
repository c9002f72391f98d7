/* The three stores: where PATH#KEY's value comes from.
 *
 *   env    GUST_SECRET_ + the reference upper-cased, each other character than a letter
 *          or a digit as '_' (crm/api#token: GUST_SECRET_CRM_API_TOKEN)
 *   file   a JSON object of paths to objects of keys, read again at each fetch so that
 *          rewriting it rotates: {"crm/api": {"token": "..."}}
 *   vault  Vault KV v2: the value at data.data.KEY of GET /v1/{mount}/data/{PATH} */
#define _GNU_SOURCE /* explicit_bzero */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/file.h"
#include "secret_int.h"

const char *secret_store_name(int kind)
{
    static const char *const names[] = {"none", "env", "file", "vault"};
    return names[kind];
}

void secret_buf_wipe(struct gust_buf *b)
{
    if (b->data != NULL) {
        explicit_bzero(b->data, b->cap);
    }
    gust_buf_free(b);
}

void secret_str_wipe(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static int from_env(const char *ref, struct gust_buf *val, char *why, size_t whysz)
{
    char var[300] = "GUST_SECRET_";
    size_t o = strlen(var);
    for (const char *c = ref; *c != '\0' && o + 1 < sizeof(var); c++) {
        var[o++] = isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_';
    }
    var[o] = '\0';
    const char *v = getenv(var);
    if (v == NULL) {
        snprintf(why, whysz, "%s is not set", var);
        return -1;
    }
    return gust_buf_append(val, v, strlen(v)) == 0 ? 0 : (snprintf(why, whysz, "out of memory"), -1);
}

/* The value at path in the JSON document doc: a string (escapes decoded) or a number. */
static int value_at(const struct gust_buf *doc, const char *const *path, const char *where,
                    struct gust_buf *val, char *why, size_t whysz)
{
    struct gust_json_field f = {.path = path};
    int root;
    if (gust_json_scan(doc->data, doc->len, &f, 1, &root) != 0 || root != GUST_JV_OBJECT) {
        snprintf(why, whysz, "%s is not a JSON object", where);
        return -1;
    }
    if (f.type == GUST_JV_NONE) {
        snprintf(why, whysz, "%s has no such key", where);
        return -1;
    }
    if (f.type != GUST_JV_STRING && f.type != GUST_JV_NUMBER) {
        snprintf(why, whysz, "%s holds neither a string nor a number there", where);
        return -1;
    }
    if (gust_buf_reserve(val, f.len + 1) != 0) {
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    size_t n = f.len;
    if (f.escaped) {
        if (gust_json_unescape(f.text, f.len, val->data, val->cap, &n) != 0) {
            snprintf(why, whysz, "%s: the value cannot be decoded", where);
            return -1;
        }
    } else {
        memcpy(val->data, f.text, f.len);
    }
    val->len = n;
    return 0;
}

int secret_fetch(const struct secret_store *s, const char *ref, struct gust_buf *val, char *why, size_t whysz)
{
    const char *hash = strrchr(ref, '#');
    char path[512], key[256];
    if (hash == NULL || (size_t)(hash - ref) >= sizeof(path) || strlen(hash + 1) >= sizeof(key)) {
        snprintf(why, whysz, "not PATH#KEY");
        return -1;
    }
    snprintf(path, sizeof(path), "%.*s", (int)(hash - ref), ref);
    snprintf(key, sizeof(key), "%s", hash + 1);
    switch (s->kind) {
    case STORE_ENV:
        return from_env(ref, val, why, whysz);
    case STORE_FILE: {
        struct gust_buf doc = {0};
        int rc = -1;
        if (gust_file_read(s->file, &doc) != 0) {
            snprintf(why, whysz, "cannot read %s: %s", s->file, strerror(errno));
        } else {
            const char *p[] = {path, key, NULL};
            rc = value_at(&doc, p, s->file, val, why, whysz);
        }
        secret_buf_wipe(&doc);
        return rc;
    }
    case STORE_VAULT: {
        struct gust_buf body = {0};
        int rc = secret_vault_get(s, path, &body, why, whysz);
        if (rc == 0) {
            const char *p[] = {"data", "data", key, NULL};
            rc = value_at(&body, p, "the Vault answer", val, why, whysz);
        }
        secret_buf_wipe(&body);
        return rc;
    }
    default:
        snprintf(why, whysz, "no secrets { } block in host.conf");
        return -1;
    }
}
