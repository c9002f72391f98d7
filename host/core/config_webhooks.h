/* The `webhook NAME { }` blocks of host.conf: each checked against gust_webhook_schema,
 * then against the rest of the configuration (its path against every other route, its
 * subject against the stream, its keys against its verify scheme). Their secrets are
 * read by the front (host/http/webhooks.c), at start, at every reload and by gust -t. */
#ifndef GUST_CORE_CONFIG_WEBHOOKS_H
#define GUST_CORE_CONFIG_WEBHOOKS_H

#include "config.h"

/* Adds the block n to c->webhooks (checked and bound). Errors name file:line. */
int gust_config_add_webhook(struct gust_config *c, const struct gust_conf_node *n, struct gust_err *err);
/* Once the http and nats blocks are bound: the checks across blocks. */
int gust_config_webhooks_check(const struct gust_config *c, struct gust_err *err);

#endif
