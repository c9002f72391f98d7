/* A detect unit's stored ticks: idle ticks (idle_tick), so that its clocks move with
 * wall time while its input is quiet and windows close and absences fire without a
 * later event, and timer records, which fire the program's timer() streams.
 *
 * A tick is stored before it is applied, on the unit's own input subject (nats-server
 * 2.9 consumers take one filter subject, so it cannot have a subject of its own that the
 * unit reads in order with its events), marked with the GUST_TICK_HEADER header naming
 * the unit: every other unit reading that subject acks it unseen (consumer.c). The unit
 * applies it when it reads it back, in stream order, so a restart, a take-over or
 * `gust vpl-run` over the stored input (the payload is vpl-run's tick line) applies the
 * same ticks at the same places and makes the same alerts. Its Nats-Msg-Id is the kind,
 * the unit and the tick's time, so a tick sent twice is stored once; a timer fires once
 * whatever is stored, since the engine keeps when each timer fires next. */
#include <inttypes.h>
#include <stdio.h>

#include "../bus/bus.h"
#include "../common/log.h"
#include "detect.h"

/* Stores {"@<kind>": at}: 0, or -1 (warned once while it fails). */
static int store(struct detect *d, const char *kind, int64_t at)
{
    char data[48], id[GUST_MSG_ID_MAX];
    int len = snprintf(data, sizeof(data), "{\"@%s\":%" PRId64 "}", kind, at);
    snprintf(id, sizeof(id), "%s:%s:%" PRId64, kind, d->unit, at);
    struct gust_header h = {GUST_TICK_HEADER, d->unit};
    struct gust_pub p = {.subject = d->bind[0].subject, .data = data, .len = (size_t)len, .msg_id = id,
                         .headers = &h, .nheaders = 1};
    char why[200];
    uint64_t seq = 0;
    if (gust_bus_publish_wait(d->bus, &p, &seq, why, sizeof(why)) != 0) {
        if (!d->tick_failing) {
            gust_warn("[detect_%s] %s record not stored (tried again between the next batches): %s", d->unit,
                      kind, why);
        }
        d->tick_failing = 1;
        return -1;
    }
    d->tick_failing = 0;
    return 0;
}

static void idle_tick_due(struct detect *d, int64_t now)
{
    if (d->idle_tick_ms <= 0 || now - d->last_input_wall < d->idle_tick_ms ||
        now - d->last_tick_wall < d->idle_tick_ms) {
        return;
    }
    d->last_tick_wall = now;
    store(d, "tick", now - d->idle_tick_ms); /* the idle grace: what arrives later than this is late */
}

/* A timer record at the wall clock once the next timer is due: it fires every instant
 * due by then (each at its own time), so a unit that looks in less often than a timer's
 * period, or comes back from a stop, catches up in one record. The first one starts
 * the timers. One record at a time is on its way back. */
static void timer_due(struct detect *d, int64_t now)
{
    int64_t due = vpl_engine_timer_due(d->slices[0].eng);
    if (due == INT64_MAX || due > now) {
        return; /* no timer(), or not yet */
    }
    if (due != INT64_MIN ? d->timer_sent >= due : now - d->timer_sent < 1000) {
        return; /* the record that fires it (or starts the timers) is on its way back */
    }
    if (store(d, "timer", now) == 0) {
        d->timer_sent = now;
    }
}

void detect_tick_due(struct detect *d)
{
    /* Slice 0's holder ticks for every slice (each engine sees every input); with no
     * bus (a check) or on the edge path (nothing stored) there is nothing to tick. */
    if (d->bus == NULL || d->edge || d->slices[0].eng == NULL) {
        return;
    }
    int64_t now = gust_clock_wall_ms();
    idle_tick_due(d, now);
    timer_due(d, now);
}
