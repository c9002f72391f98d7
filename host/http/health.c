#include "health.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../bus/bus.h"
#include "../bus/ingest_link.h"
#include "../common/json_out.h"
#include "../secret/secret.h"
#include "../unit/units.h"

/* The causes of a 503, one check each. A check calls add() once per thing found wrong
 * (the bus, or each unit). To add a cause, write its check and list it in causes[]
 * below; README's /healthz line names them all:
 *
 *   bus               disconnected, or JetStream has not answered a check for 4 s
 *   ingest_link       ingest's own connection to the bus is not up
 *   store_full        the event stream refuses new events (at max_bytes: the
 *                     consumers must catch up before it takes more)
 *   unit_not_running  a configured unit not running for longer than 5 s (starting:
 *                     its consumer cannot be created yet; failing: its reads fail)
 *   secret_unresolved a unit not started because a {secret:PATH#KEY} it names did not
 *                     resolve (the detail names the reference and the store's error)
 *   unit_stuck        a unit's handler in one batch past its timeout per message plus
 *                     5 s (a flow stuck in its script)
 */

struct health {
    const struct gust_health_ctx *ctx;
    struct gust_buf *out;
    size_t n;
};

static void add(struct health *h, const char *cause, const char *unit, const char *detail)
{
    gust_buf_printf(h->out, "%s{\"cause\":\"%s\",\"detail\":", h->n > 0 ? "," : "", cause);
    gust_json_append_string(h->out, detail, strlen(detail));
    if (unit != NULL) {
        gust_buf_append(h->out, ",\"unit\":", 8);
        gust_json_append_string(h->out, unit, strlen(unit));
    }
    gust_buf_append(h->out, "}", 1);
    h->n++;
}

static void check_bus(struct health *h)
{
    char why[256];
    if (!gust_bus_answering(h->ctx->bus, why, sizeof(why))) {
        add(h, "bus", NULL, why);
    }
}

static void check_ingest_link(struct health *h)
{
    if (!gust_ingest_link_connected(h->ctx->ingest)) {
        add(h, "ingest_link", NULL, "ingest's connection to the bus is not up");
    }
}

static void unit_not_running(void *ud, struct gust_consumer *c)
{
    struct health *h = ud;
    int64_t since;
    if (gust_consumer_running(c, &since)) {
        return;
    }
    int64_t for_ms = gust_clock_mono_ms() - since;
    if (for_ms <= GUST_HEALTH_GRACE_MS) {
        return;
    }
    char err[512], detail[768];
    gust_consumer_last_error(c, err, sizeof(err));
    snprintf(detail, sizeof(detail), "%s for %.1f s%s%s", gust_consumer_state(c), for_ms / 1e3,
             err[0] != '\0' ? ": " : "", err);
    add(h, "unit_not_running", gust_consumer_name(c), detail);
}

static void check_units(struct health *h)
{
    gust_units_each(h->ctx->units, unit_not_running, h);
}

static void unit_stuck(void *ud, struct gust_consumer *c)
{
    struct health *h = ud;
    int64_t over = gust_consumer_stuck_ms(c);
    if (over > 0) {
        char detail[160];
        snprintf(detail, sizeof(detail), "in one batch %.1f s past its timeout", over / 1e3);
        add(h, "unit_stuck", gust_consumer_name(c), detail);
    }
}

static void check_stuck(struct health *h)
{
    gust_units_each(h->ctx->units, unit_stuck, h);
}

static void check_store(struct health *h)
{
    if (gust_bus_store_full(h->ctx->bus)) {
        add(h, "store_full", NULL, "the event stream is at max_bytes and refuses new events until the units catch up");
    }
}

static void unit_blocked(void *ud, const char *unit, const char *ref, const char *why)
{
    char detail[700];
    snprintf(detail, sizeof(detail), "not started: {secret:%s}: %s", ref, why);
    add(ud, "secret_unresolved", unit, detail);
}

static void check_secrets(struct health *h)
{
    gust_secrets_blocked_each(unit_blocked, h);
}

static void (*const causes[])(struct health *) = {check_bus,   check_ingest_link, check_store,
                                                  check_units, check_secrets,     check_stuck};

size_t gust_health_render(const struct gust_health_ctx *ctx, struct gust_buf *out)
{
    struct gust_buf list = {0};
    struct health h = {.ctx = ctx, .out = &list};
    for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++) {
        causes[i](&h);
    }
    if (h.n == 0) {
        gust_buf_printf(out, "{\"status\":\"ok\"}\n");
    } else {
        gust_buf_printf(out, "{\"status\":\"unavailable\",\"causes\":[");
        gust_buf_append(out, list.data, list.len);
        gust_buf_printf(out, "]}\n");
    }
    gust_buf_free(&list);
    return h.n;
}
