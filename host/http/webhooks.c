#include "webhooks.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/file.h"
#include "../core/config.h"

#define MAX_SECRET 4096

static char *lower_dup(const char *s)
{
    char *d = s != NULL ? strdup(s) : NULL;
    for (char *p = d; p != NULL && *p != '\0'; p++) {
        *p = (char)tolower((unsigned char)*p);
    }
    return d;
}

/* One secret from a file (relative to dir) or a variable, into out. */
static int read_secret(const struct gust_webhook_conf *c, enum gust_wh_scheme scheme, const char *file,
                       const char *env, struct gust_wh_secret *out, struct gust_err *err)
{
    const char *key = file != NULL ? "secret_file" : "secret_env";
    struct gust_buf b = {0};
    int rc = 0;
    if (file != NULL) {
        char path[8192];
        snprintf(path, sizeof(path), "%s%s%s", file[0] == '/' ? "" : c->dir, file[0] == '/' ? "" : "/", file);
        if (gust_file_read(path, &b) != 0) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: webhook '%s': secret_file %s: %s",
                              gust_cfg_where(c->cfg, key), c->name, path, strerror(errno));
        }
    } else {
        const char *v = getenv(env);
        if (v == NULL) {
            rc = gust_err_set(err, GUST_ECONFIG, "%s: webhook '%s': secret_env: variable %s is not set",
                              gust_cfg_where(c->cfg, key), c->name, env);
        } else if (gust_buf_append(&b, v, strlen(v)) != 0) {
            rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
    }
    size_t len = b.len;
    /* `echo secret > file` adds a newline that the provider never signed with. */
    while (rc == 0 && len > 0 && (b.data[len - 1] == '\n' || b.data[len - 1] == '\r')) {
        len--;
    }
    char why[200];
    if (rc == 0 && len > MAX_SECRET) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: webhook '%s': the secret of %s is over %d bytes",
                          gust_cfg_where(c->cfg, key), c->name, file != NULL ? file : env, MAX_SECRET);
    } else if (rc == 0 && gust_wh_secret_make(scheme, b.data, len, out, why, sizeof(why)) != 0) {
        rc = gust_err_set(err, GUST_ECONFIG, "%s: webhook '%s': %s %s: %s", gust_cfg_where(c->cfg, key),
                          c->name, key, file != NULL ? file : env, why);
    }
    if (b.data != NULL) {
        OPENSSL_cleanse(b.data, b.len);
    }
    gust_buf_free(&b);
    return rc;
}

static int make_one(const struct gust_webhook_conf *c, struct gust_webhook *h, struct gust_err *err)
{
    const struct gust_webhook_keys *k = &c->k;
    int scheme = gust_wh_scheme_of(k->verify);
    if (scheme < 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: webhook '%s': unknown verify %s",
                            gust_cfg_where(c->cfg, "verify"), c->name, k->verify);
    }
    h->name = strdup(c->name);
    h->path = strdup(k->path);
    h->subject = strdup(k->subject);
    h->v.scheme = (enum gust_wh_scheme)scheme;
    h->v.tolerance_s = k->tolerance / 1000;
    h->v.signature_header = lower_dup(k->signature_header);
    h->v.prefix = k->prefix != NULL ? strdup(k->prefix) : NULL;
    h->v.sha1 = strcmp(k->algorithm, "sha1") == 0;
    h->v.base64 = strcmp(k->encoding, "base64") == 0;
    h->raw = k->raw;
    h->respond_flow = strcmp(k->respond, "flow") == 0;
    h->max_body = (size_t)k->max_body;
    static const char *const id_of[] = {
        [GUST_WH_GITHUB] = "x-github-delivery",
        [GUST_WH_STANDARD] = "webhook-id",
        [GUST_WH_SHOPIFY] = "x-shopify-webhook-id",
    };
    const char *id = k->idempotency_header;
    if (id == NULL && scheme < (int)(sizeof(id_of) / sizeof(id_of[0]))) {
        id = id_of[scheme];
    }
    h->id_header = lower_dup(id);
    h->id_from_body = k->idempotency_header == NULL && scheme == GUST_WH_STRIPE;
    h->headers = calloc(k->headers.n + 1, sizeof(*h->headers));
    size_t nsecrets = k->secret_file.n + k->secret_env.n;
    struct gust_wh_secret *secrets = calloc(nsecrets + 1, sizeof(*secrets));
    h->v.secrets = secrets;
    if (h->name == NULL || h->path == NULL || h->subject == NULL || h->headers == NULL || secrets == NULL ||
        (k->signature_header != NULL && h->v.signature_header == NULL) ||
        (id != NULL && h->id_header == NULL)) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < k->headers.n; i++) {
        if ((h->headers[i] = lower_dup(k->headers.items[i])) == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        h->nheaders++;
    }
    for (size_t i = 0; i < nsecrets; i++) {
        int file = i < k->secret_file.n;
        const char *name = file ? k->secret_file.items[i] : k->secret_env.items[i - k->secret_file.n];
        int rc = read_secret(c, h->v.scheme, file ? name : NULL, file ? NULL : name, &secrets[i], err);
        if (rc != 0) {
            return rc;
        }
        h->v.nsecrets++;
    }
    return 0;
}

int gust_webhooks_create(const struct gust_webhook_conf *confs, size_t n, struct gust_webhooks **out,
                         struct gust_err *err)
{
    *out = NULL;
    if (n == 0) {
        return 0;
    }
    struct gust_webhooks *w = calloc(1, sizeof(*w));
    if (w == NULL || (w->hooks = calloc(n, sizeof(*w->hooks))) == NULL) {
        free(w);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        w->n++;
        int rc = make_one(&confs[i], &w->hooks[i], err);
        if (rc != 0) {
            gust_webhooks_destroy(w);
            return rc;
        }
    }
    *out = w;
    return 0;
}

void gust_webhooks_destroy(struct gust_webhooks *w)
{
    if (w == NULL) {
        return;
    }
    for (size_t i = 0; i < w->n; i++) {
        struct gust_webhook *h = &w->hooks[i];
        struct gust_wh_secret *s = (struct gust_wh_secret *)h->v.secrets;
        for (size_t j = 0; s != NULL && j < h->v.nsecrets; j++) {
            gust_wh_secret_clear(&s[j]);
        }
        free(s);
        for (size_t j = 0; j < h->nheaders; j++) {
            free(h->headers[j]);
        }
        free(h->headers);
        free(h->name);
        free(h->path);
        free(h->subject);
        free((char *)h->v.signature_header);
        free((char *)h->v.prefix);
        free(h->id_header);
    }
    free(w->hooks);
    free(w);
}

const struct gust_webhook *gust_webhooks_find(const struct gust_webhooks *w, const char *path, size_t len)
{
    for (size_t i = 0; w != NULL && i < w->n; i++) {
        if (strlen(w->hooks[i].path) == len && memcmp(w->hooks[i].path, path, len) == 0) {
            return &w->hooks[i];
        }
    }
    return NULL;
}
