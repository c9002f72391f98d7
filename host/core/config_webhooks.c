#include "config_webhooks.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../conf/conf_schema.h"
#include "../conf/value.h"

/* Paths the front answers itself, exactly or with anything below them. */
static const char *const exact_routes[] = {"/",      "/index.html", "/healthz", "/livez", "/metrics",
                                           "/units", "/events",     "/replay",  "/reload"};
static const char *const tree_routes[] = {"/ingest", "/dlq", "/call"};

static int fail(struct gust_err *err, const struct gust_webhook_conf *w, const char *key, const char *msg)
{
    return gust_err_set(err, GUST_ECONFIG, "%s: webhook '%s': %s",
                        key != NULL ? gust_cfg_where(w->cfg, key) : w->where, w->name, msg);
}

int gust_config_add_webhook(struct gust_config *c, const struct gust_conf_node *n, struct gust_err *err)
{
    if (!n->is_block || n->nargs != 1) {
        return gust_err_set(err, GUST_ECONFIG, "%s:%d: expected 'webhook NAME { path P; subject S; ... }'",
                            n->file, n->line);
    }
    if (!gust_name_valid(n->args[0])) {
        return gust_err_set(err, GUST_ECONFIG,
                            "%s:%d: invalid webhook name '%s': use letters, digits, '_' and '-'", n->file,
                            n->line, n->args[0]);
    }
    for (size_t i = 0; i < c->nwebhooks; i++) {
        if (strcmp(c->webhooks[i].name, n->args[0]) == 0) {
            return gust_err_set(err, GUST_ECONFIG, "%s:%d: webhook '%s' is already defined at %s", n->file,
                                n->line, n->args[0], c->webhooks[i].where);
        }
    }
    struct gust_webhook_conf *w = &c->webhooks[c->nwebhooks];
    *w = (struct gust_webhook_conf){.name = n->args[0]};
    snprintf(w->where, sizeof(w->where), "%s:%d", n->file, n->line);
    const char *slash = strrchr(n->file, '/');
    snprintf(w->dir, sizeof(w->dir), "%.*s", slash != NULL ? (int)(slash - n->file) : 1,
             slash != NULL ? n->file : ".");
    char what[128];
    snprintf(what, sizeof(what), "webhook '%s'", w->name);
    int rc = gust_cfg_check(n, what, gust_webhook_schema, NULL, &w->cfg, err);
    rc = rc ? rc : gust_cfg_bind(w->cfg, gust_webhook_schema, sizeof(struct gust_schema_key), &w->k, err);
    if (rc == 0) {
        c->nwebhooks++;
    } else {
        gust_cfg_destroy(w->cfg);
        w->cfg = NULL;
    }
    return rc;
}

/* A path of visible, unreserved characters in '/'-separated segments, none empty, "."
 * or "..": what h2o's normalised path of the same request is, so it compares as is. */
static int path_ok(const char *p)
{
    if (p[0] != '/' || p[1] == '\0') {
        return 0;
    }
    for (const char *seg = p + 1; *seg != '\0';) {
        size_t n = strcspn(seg, "/");
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            return 0;
        }
        for (size_t i = 0; i < n; i++) {
            char ch = seg[i];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '-' || ch == '.' || ch == '_' || ch == '~')) {
                return 0;
            }
        }
        seg += n;
        seg += *seg == '/';
        if (*seg == '\0' && seg[-1] == '/') {
            return 0; /* a trailing slash */
        }
    }
    return 1;
}

static int check_path(const struct gust_config *c, size_t i, struct gust_err *err)
{
    const struct gust_webhook_conf *w = &c->webhooks[i];
    const char *p = w->k.path;
    char msg[600];
    if (!path_ok(p)) {
        snprintf(msg, sizeof(msg),
                 "path '%s': expected /segment[/segment...] of letters, digits, '-', '.', '_' and '~' "
                 "(no empty, . or .. segment, no trailing /)",
                 p);
        return fail(err, w, "path", msg);
    }
    for (size_t r = 0; r < sizeof(exact_routes) / sizeof(exact_routes[0]); r++) {
        if (strcmp(p, exact_routes[r]) == 0) {
            snprintf(msg, sizeof(msg), "path %s is the front's own route %s", p, exact_routes[r]);
            return fail(err, w, "path", msg);
        }
    }
    for (size_t r = 0; r < sizeof(tree_routes) / sizeof(tree_routes[0]); r++) {
        size_t n = strlen(tree_routes[r]);
        if (strncmp(p, tree_routes[r], n) == 0 && (p[n] == '\0' || p[n] == '/')) {
            snprintf(msg, sizeof(msg), "path %s collides with the front's routes %s/...", p, tree_routes[r]);
            return fail(err, w, "path", msg);
        }
    }
    for (size_t j = 0; j < i; j++) {
        if (strcmp(p, c->webhooks[j].k.path) == 0) {
            snprintf(msg, sizeof(msg), "path %s is already webhook '%s''s (%s)", p, c->webhooks[j].name,
                     gust_cfg_where(c->webhooks[j].cfg, "path"));
            return fail(err, w, "path", msg);
        }
    }
    return 0;
}

/* An HTTP field name (RFC 9110's token). */
static int token_ok(const char *s)
{
    if (s[0] == '\0') {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *s) != NULL)) {
            return 0;
        }
    }
    return 1;
}

static int check_header_names(const struct gust_webhook_conf *w, struct gust_err *err)
{
    const struct gust_webhook_keys *k = &w->k;
    char msg[300];
    for (size_t i = 0; i < k->headers.n; i++) {
        if (!token_ok(k->headers.items[i])) {
            snprintf(msg, sizeof(msg), "headers: '%.100s' is not a header name", k->headers.items[i]);
            return fail(err, w, "headers", msg);
        }
        if (strcasecmp(k->headers.items[i], "Gust-Reply-To") == 0) {
            /* A client's would say where a flow's reply goes (bus reply.h). */
            return fail(err, w, "headers", "headers: Gust-Reply-To is Gust's own (where a call's reply goes)");
        }
    }
    const char *one[] = {k->idempotency_header, k->signature_header};
    const char *key[] = {"idempotency_header", "signature_header"};
    for (int i = 0; i < 2; i++) {
        if (one[i] != NULL && !token_ok(one[i])) {
            snprintf(msg, sizeof(msg), "%s: '%.100s' is not a header name", key[i], one[i]);
            return fail(err, w, key[i], msg);
        }
    }
    return 0;
}

static int check_one(const struct gust_config *c, size_t i, struct gust_err *err)
{
    const struct gust_webhook_conf *w = &c->webhooks[i];
    const struct gust_webhook_keys *k = &w->k;
    char msg[600];
    int rc = check_path(c, i, err);
    rc = rc ? rc : check_header_names(w, err);
    if (rc != 0) {
        return rc;
    }
    size_t plen = strlen(c->subject_prefix);
    if (strncmp(k->subject, c->subject_prefix, plen) != 0 || k->subject[plen] == '\0') {
        snprintf(msg, sizeof(msg), "subject %s is not under the stream's subjects %s", k->subject,
                 c->nats.subjects);
        return fail(err, w, "subject", msg);
    }
    int verified = strcmp(k->verify, "none") != 0;
    size_t nsecrets = k->secret_file.n + k->secret_env.n;
    if (verified && nsecrets == 0) {
        snprintf(msg, sizeof(msg), "verify %s needs its signing secret: secret_file FILE or secret_env VAR",
                 k->verify);
        return fail(err, w, "verify", msg);
    }
    if (!verified && nsecrets > 0) {
        return fail(
            err, w, k->secret_file.n > 0 ? "secret_file" : "secret_env",
            "a secret without verify checks nothing: set verify (github, stripe, shopify, slack, standard or "
            "hmac)");
    }
    int hmac = strcmp(k->verify, "hmac") == 0;
    if (hmac && (k->signature_header == NULL || k->signature_header[0] == '\0')) {
        return fail(err, w, "verify", "verify hmac needs signature_header NAME");
    }
    if (!hmac && (k->signature_header != NULL || k->prefix != NULL)) {
        return fail(err, w, k->signature_header != NULL ? "signature_header" : "prefix",
                    "signature_header and prefix go with verify hmac only (the other schemes fix their own)");
    }
    if (k->max_body > c->http.max_body) {
        snprintf(msg, sizeof(msg),
                 "max_body %lld is over the http block's max_body %lld, which the front enforces first",
                 (long long)k->max_body, (long long)c->http.max_body);
        return fail(err, w, "max_body", msg);
    }
    return 0;
}

int gust_config_webhooks_check(const struct gust_config *c, struct gust_err *err)
{
    for (size_t i = 0; i < c->nwebhooks; i++) {
        int rc = check_one(c, i, err);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}
