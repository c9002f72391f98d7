#define _GNU_SOURCE /* strndup */
#include "unit_secrets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../conf/conf_schema.h"
#include "config_secrets.h"

struct refs {
    char **v;
    size_t n, cap;
};

static int collect(void *ud, const char *ref, size_t len, const struct gust_conf_node *at)
{
    (void)at;
    struct refs *r = ud;
    for (size_t i = 0; i < r->n; i++) {
        if (strlen(r->v[i]) == len && memcmp(r->v[i], ref, len) == 0) {
            return 0;
        }
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        char **v = realloc(r->v, cap * sizeof(*v));
        if (v == NULL) {
            return -1;
        }
        r->v = v;
        r->cap = cap;
    }
    if ((r->v[r->n] = strndup(ref, len)) == NULL) {
        return -1;
    }
    r->n++;
    return 0;
}

void gust_unit_secrets_configure(const struct gust_config *c)
{
    struct refs r = {0};
    for (size_t i = 0; i < c->nunits; i++) {
        if (gust_unit_secret_refs(&c->units[i], collect, &r) != 0) {
            gust_error("secrets: out of memory");
        }
    }
    size_t failed = gust_secrets_configure(&c->secrets, (const char *const *)r.v, r.n);
    if (r.n > 0) {
        gust_info("secrets: %zu reference(s), %zu resolved", r.n, r.n - failed);
    }
    for (size_t i = 0; i < r.n; i++) {
        free(r.v[i]);
    }
    free(r.v);
}

struct first_bad {
    char *ref, *why;
    size_t refsz, whysz;
};

static int check(void *ud, const char *ref, size_t len, const struct gust_conf_node *at)
{
    (void)at;
    struct first_bad *b = ud;
    snprintf(b->ref, b->refsz, "%.*s", (int)len, ref);
    return gust_secrets_resolved(b->ref, b->why, b->whysz) ? 0 : 1;
}

int gust_unit_secrets_ok(const struct gust_unit_conf *u, char *ref, size_t refsz, char *why, size_t whysz)
{
    struct first_bad b = {.ref = ref, .why = why, .refsz = refsz, .whysz = whysz};
    return gust_unit_secret_refs(u, check, &b) == 0;
}

struct subst {
    const struct gust_unit_conf *u;
    struct gust_err *err;
    int stand_in;
};

/* value with each {secret:REF} replaced; *repl NULL when it has none. */
static int substitute(void *ud, const char *key, const char *value, char **repl)
{
    struct subst *s = ud;
    static const char open[] = "{secret:";
    if (strstr(value, open) == NULL) {
        return 0;
    }
    struct gust_buf out = {0};
    char val[8192], why[400];
    int rc = 0;
    for (const char *p = value; *p != '\0' && rc == 0;) {
        const char *at = strstr(p, open);
        const char *end = at != NULL ? strchr(at, '}') : NULL;
        if (end == NULL) {
            rc = gust_buf_append(&out, p, strlen(p)) != 0 ? GUST_ENOMEM : 0;
            break;
        }
        const char *ref = at + sizeof(open) - 1;
        size_t n = 0;
        if (gust_buf_append(&out, p, (size_t)(at - p)) != 0) {
            rc = GUST_ENOMEM;
        } else if (s->stand_in) {
            rc = gust_buf_append(&out, "secret", 6) != 0 ? GUST_ENOMEM : 0;
        } else if (gust_secret_value(ref, (size_t)(end - ref), val, sizeof(val), &n, why, sizeof(why)) != 0) {
            rc = gust_err_set(s->err, GUST_ECONFIG, "%s: %s: %s", gust_cfg_where(s->u->cfg, key), key, why);
        } else {
            rc = gust_buf_append(&out, val, n) != 0 ? GUST_ENOMEM : 0;
        }
        explicit_bzero(val, sizeof(val));
        p = end + 1;
    }
    if (rc == 0 && (rc = gust_buf_append(&out, "", 1) != 0 ? GUST_ENOMEM : 0) == 0) {
        *repl = out.data; /* owned by the copy: zeroed with it */
        return 0;
    }
    if (out.data != NULL) {
        explicit_bzero(out.data, out.cap);
    }
    gust_buf_free(&out);
    return rc == GUST_ENOMEM ? gust_err_set(s->err, GUST_ENOMEM, "out of memory") : rc;
}

int gust_unit_secrets_cfg(const struct gust_unit_conf *u, const struct gust_schema_key *plugin_schema,
                          int stand_in, struct gust_cfg **out, struct gust_err *err)
{
    struct subst s = {.u = u, .err = err, .stand_in = stand_in};
    return gust_cfg_rewrite(u->cfg, plugin_schema, GUST_K_SECRET, GUST_K_TEMPLATE, substitute, &s, out);
}
