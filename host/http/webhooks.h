/* The webhooks of the front, ready to serve: their secrets read, their header names
 * lowercased (h2o's request headers are). Part of the front's policy (server.h), so a
 * reload replaces them all at once, secrets included (rotation without a restart). */
#ifndef GUST_HTTP_WEBHOOKS_H
#define GUST_HTTP_WEBHOOKS_H

#include <stddef.h>

#include "gust/err.h"
#include "webhook_verify.h"

struct gust_webhook_conf; /* ../core/config.h */

struct gust_webhook {
    char *name;
    char *path;
    char *subject;
    struct gust_wh_verifier v; /* its secrets and strings owned here */
    char *id_header;           /* lowercase: the delivery id's header, or NULL */
    int id_from_body;          /* stripe: the event's "id" */
    char **headers;            /* lowercase: the request headers kept */
    size_t nheaders;
    int raw;
    int respond_flow; /* `respond flow`: answered with the flow's reply (call.c) */
    size_t max_body; /* 0: the http block's */
};

struct gust_webhooks {
    struct gust_webhook *hooks;
    size_t n;
};

/* Reads every secret (files, variables) of confs[0..n) (borrowed): errors name the
 * key's file:line and the file or variable, never a secret. Off the loop: it reads
 * files. *out is NULL when n is 0. */
int gust_webhooks_create(const struct gust_webhook_conf *confs, size_t n, struct gust_webhooks **out,
                         struct gust_err *err);
/* Wipes the secrets. NULL is a no-op. */
void gust_webhooks_destroy(struct gust_webhooks *w);
/* The webhook mounted on path[0..len) (after the base path), or NULL. */
const struct gust_webhook *gust_webhooks_find(const struct gust_webhooks *w, const char *path, size_t len);

#endif
