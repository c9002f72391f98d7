/* A detect unit's idle ticks (idle_tick): its clocks move with wall time while its input
 * is quiet, so windows close and absences fire without a later event.
 *
 * A tick is stored before it is applied, on the unit's own input subject (nats-server
 * 2.9 consumers take one filter subject, so it cannot have a subject of its own that the
 * unit reads in order with its events), marked with the GUST_TICK_HEADER header naming
 * the unit: every other unit reading that subject acks it unseen (consumer.c). The unit
 * applies it when it reads it back, in stream order, so a restart, a take-over or
 * `gust vpl-run` over the stored input (the payload is vpl-run's tick line) applies the
 * same ticks at the same places and makes the same alerts. Its Nats-Msg-Id is the unit
 * and the tick's time, so a tick sent twice is stored once. */
#include <inttypes.h>
#include <stdio.h>

#include "../bus/bus.h"
#include "../common/log.h"
#include "detect.h"

void detect_tick_due(struct detect *d)
{
    /* Slice 0's holder ticks for every slice (each engine sees every input); with no
     * bus (a check) or on the edge path (nothing stored) there is nothing to tick. */
    if (d->idle_tick_ms <= 0 || d->bus == NULL || d->edge || d->slices[0].eng == NULL) {
        return;
    }
    int64_t now = gust_clock_wall_ms();
    if (now - d->last_input_wall < d->idle_tick_ms || now - d->last_tick_wall < d->idle_tick_ms) {
        return;
    }
    d->last_tick_wall = now;
    int64_t at = now - d->idle_tick_ms; /* the idle grace: what arrives later than this is late */
    char data[48], id[GUST_MSG_ID_MAX];
    int len = snprintf(data, sizeof(data), "{\"@tick\":%" PRId64 "}", at);
    snprintf(id, sizeof(id), "tick:%s:%" PRId64, d->unit, at);
    struct gust_header h = {GUST_TICK_HEADER, d->unit};
    struct gust_pub p = {.subject = d->bind[0].subject, .data = data, .len = (size_t)len, .msg_id = id,
                         .headers = &h, .nheaders = 1};
    char why[200];
    uint64_t seq = 0;
    if (gust_bus_publish_wait(d->bus, &p, &seq, why, sizeof(why)) != 0) {
        if (!d->tick_failing) {
            gust_warn("[detect_%s] idle tick not stored (the next one is tried in %" PRId64 " ms): %s", d->unit,
                      d->idle_tick_ms, why);
        }
        d->tick_failing = 1;
        return;
    }
    d->tick_failing = 0;
}
