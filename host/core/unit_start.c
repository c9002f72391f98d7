#include "unit_start.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/plugin.h"

#include "../bus/bus.h"
#include "../bus/feeds.h"
#include "../common/log.h"
#include "../unit/edge.h"
#include "edges.h"
#include "kind.h"

/* How long a unit's read waits for a message: bounds how long a stop waits for an idle
 * unit. */
#define FEED_WAIT_MS 500

static struct gust_consumer_conf consumer_conf(const struct gust_host *host, const struct gust_unit_conf *u,
                                               const char *source, const struct gust_unit_start *s)
{
    const struct gust_config *c = host->config;
    return (struct gust_consumer_conf){
        .unit = u->name,
        .kind = u->kind->name,
        .source = source,
        .identity = s->identity,
        .dlq_prefix = host->dlq_prefix,
        .batch = (int)s->batch,
        .max_deliver = c->nats.max_deliver,
        .retry_delay_ms = c->nats.retry_delay,
        .retry_max_delay_ms = c->nats.retry_max_delay,
        .settle = GUST_SETTLE_ACK,
        .handler_timeout_ms = s->handler_timeout_ms,
    };
}

/* A unit's durable consumer, opened by the unit's thread (consumer.h): what it needs,
 * its own copies, since a kept unit outlives the generation that made it. */
struct durable_opener {
    struct gust_bus *bus;
    struct gust_durable_conf dc;
    char stream[128];
    char durable[160];
    char *filter;
};

static int durable_open(void *ud, struct gust_feed **out, struct gust_err *err)
{
    struct durable_opener *o = ud;
    return gust_durable_feed_open(o->bus, &o->dc, out, err);
}

static void durable_opener_free(void *ud)
{
    struct durable_opener *o = ud;
    if (o != NULL) {
        free(o->filter);
        free(o);
    }
}

/* The feed a unit reads: an edge queue, an ordered read of its subjects (detect), or
 * its durable consumer <kind>_<unit> (*feed left NULL: cc->opener opens it, retried
 * until the bus lets it). */
static int open_feed(struct gust_host *host, const struct gust_unit_conf *u, struct gust_consumer_conf *cc,
                     const struct gust_unit_start *s, struct gust_bus *bus, struct gust_feed **feed,
                     struct gust_err *err)
{
    const char *edge = u->k.edge;
    if (edge != NULL) {
        struct gust_edge *e = NULL;
        int rc = gust_edge_create(u->name, edge, (size_t)u->k.edge_queue, &e, err);
        if (rc != 0) {
            return rc;
        }
        if ((*feed = gust_edge_feed(e)) == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        cc->edge = e;
        cc->settle = GUST_SETTLE_NONE;
        gust_info("[%s_%s] fed in memory by source '%s' (edge path: at most once; queue %zu)", cc->kind, u->name,
                  edge, gust_edge_capacity(e));
        return 0;
    }
    const char *stream = host->config->nats.stream;
    if (s->ordered) {
        cc->settle = GUST_SETTLE_ORDERED; /* from where its checkpoints say, set by its handler */
        return gust_ordered_feed_open(bus, stream, s->filter, 0, FEED_WAIT_MS, feed, err);
    }
    struct durable_opener *o = calloc(1, sizeof(*o));
    if (o == NULL || (o->filter = strdup(s->filter)) == NULL) {
        durable_opener_free(o);
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    o->bus = bus;
    snprintf(o->stream, sizeof(o->stream), "%s", stream);
    snprintf(o->durable, sizeof(o->durable), "%s_%s", cc->kind, u->name);
    o->dc = (struct gust_durable_conf){
        .stream = o->stream,
        .durable = o->durable,
        .filter = o->filter,
        .batch = cc->batch,
        .ack_wait_ms = host->config->nats.ack_wait,
        /* In stream order, one batch at a time: what the server hands out past the batch
         * held only waits (and may be delivered again). */
        .max_ack_pending = s->order == GUST_ORDER_STREAM ? cc->batch
                           : cc->batch * 8 > 1000        ? cc->batch * 8
                                                         : 1000,
        .expires_ms = FEED_WAIT_MS,
        .from_ack_floor = s->order != GUST_ORDER_NONE,
    };
    cc->opener = (struct gust_feed_opener){.open = durable_open, .free = durable_opener_free, .ud = o};
    *feed = NULL;
    return 0;
}

int gust_unit_start(struct gust_host *host, const struct gust_unit_conf *u, const struct gust_unit_start *s,
                    struct gust_handler h, struct gust_bus *bus, struct gust_err *err)
{
    char source[300];
    snprintf(source, sizeof(source), "%s%s", u->k.edge != NULL ? "edge:" : "",
             u->k.edge != NULL ? u->k.edge : s->filter);
    struct gust_consumer_conf cc = consumer_conf(host, u, source, s);
    struct gust_feed *feed = NULL;
    int rc = open_feed(host, u, &cc, s, bus, &feed, err);
    if (rc != 0) {
        h.destroy(h.impl);
        return rc;
    }
    struct gust_consumer *consumer = NULL;
    if ((rc = gust_consumer_create(&cc, feed, gust_bus_outlet(bus), h, &consumer, err)) != 0) {
        return rc;
    }
    /* From here on the registry owns the unit, listed stopped until it starts. */
    if (gust_units_add(host->units, consumer) != 0 ||
        (cc.edge != NULL && gust_edge_links_add(&host->edges, u->k.edge, cc.edge) != 0)) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    if (s->listed != NULL && (rc = s->listed(h.impl, err)) != 0) {
        return rc;
    }
    return gust_consumer_start(consumer, err);
}
