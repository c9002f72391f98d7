#define _GNU_SOURCE /* strndup */
#include "unit_secrets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
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
