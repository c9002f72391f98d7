/* What /healthz says: the causes that make the process unfit to serve, each a small
 * check in health.c's list. */
#ifndef GUST_HTTP_HEALTH_H
#define GUST_HTTP_HEALTH_H

#include <stddef.h>

#include "../common/buf.h"

struct gust_bus;
struct gust_ingest_link;
struct gust_units;

/* How long a configured unit may be other than running (starting, failing, stopped
 * in a reload) before /healthz counts it: a reload or a short blip is not an outage. */
#define GUST_HEALTH_GRACE_MS 5000

struct gust_health_ctx {
    struct gust_bus *bus;              /* borrowed */
    struct gust_ingest_link *ingest;   /* borrowed: ingest's own connection */
    struct gust_units *units;          /* borrowed */
};

/* Runs every check and writes /healthz's body into out: {"status":"ok"} or
 * {"status":"unavailable","causes":[{"cause":NAME,"detail":TEXT[,"unit":NAME]},...]}.
 * Returns the number of causes found (0: healthy, answer 200; else 503). */
size_t gust_health_render(const struct gust_health_ctx *ctx, struct gust_buf *out);

#endif
