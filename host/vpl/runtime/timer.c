/* timer(P[, initial_delay: D]) streams (docs/VPL.md, "Timers"). The engine has no wall
 * clock: a timer record {"@timer": T}, stored by the detect unit like an idle tick and
 * read back in stream order (or a line of vpl-run's input), says that the wall clock
 * reached T. The first record starts every timer at T; a timer then fires at T + D
 * (one period without an initial delay) and every period after that. Each firing is an
 * input of type Timer_<stream>, {"timestamp": <its time>}, at its own time; the firings
 * due by T come in time order (equal times: in declaration order). So a replay of the
 * stored records fires the same events at the same places. The state is each timer's
 * next firing time, kept in snapshots. */
#include <inttypes.h>
#include <stdio.h>

#include "runtime.h"

/* Firings of one timer per record at most: after a long stop, the oldest missed ones
 * are skipped rather than sent in a burst. */
#define TIMER_CATCHUP 100

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Starts a timer at now, or skips what a timer missed beyond TIMER_CATCHUP. */
static void catch_up(struct vpl_engine *e, uint32_t si, int64_t now)
{
    const struct stream *s = &e->prog->streams[si];
    int64_t *next = &e->timer_next[si];
    int64_t late = 0;
    if (*next == INT64_MIN) {
        *next = sat_add(now, s->timer_delay > 0 ? s->timer_delay : s->timer_period);
    } else if (*next <= now && __builtin_sub_overflow(now, *next, &late)) {
        *next = now; /* too far behind to count the periods: once, now */
    } else if (*next <= now && late / s->timer_period >= TIMER_CATCHUP) {
        /* The last TIMER_CATCHUP instants of its schedule up to now. */
        *next += (late / s->timer_period - (TIMER_CATCHUP - 1)) * s->timer_period;
    }
}

int timer_fire(struct vpl_engine *e, int64_t now, vpl_alert_fn cb, void *ud)
{
    const struct vpl_program *p = e->prog;
    if (p->ntimers == 0) {
        return 0;
    }
    for (uint32_t i = 0; i < p->nstreams; i++) {
        if (p->streams[i].timer_period > 0) {
            catch_up(e, i, now);
        }
    }
    for (;;) {
        int32_t pick = -1;
        for (uint32_t i = 0; i < p->nstreams; i++) {
            /* INT64_MAX: past the end of time (a record at the largest integer). */
            if (p->streams[i].timer_period > 0 && e->timer_next[i] <= now && e->timer_next[i] != INT64_MAX &&
                (pick < 0 || e->timer_next[i] < e->timer_next[pick])) {
                pick = (int32_t)i;
            }
        }
        if (pick < 0) {
            return 0;
        }
        const struct stream *s = &p->streams[pick];
        int64_t at = e->timer_next[pick];
        e->timer_next[pick] = sat_add(at, s->timer_period);
        char json[48];
        int n = snprintf(json, sizeof(json), "{\"timestamp\":%" PRId64 "}", at);
        e->cb = cb;
        e->ud = ud;
        int rc = rt_feed(e, json, (size_t)n, sym_name(p, p->type_sym[s->src_type]), at);
        int end = rt_end_feed(e);
        if (rc != 0 || end != 0) {
            return VPL_ENOMEM; /* the only way a firing of this JSON can fail */
        }
        e->st.events++;
    }
}

int64_t vpl_engine_timer_due(const struct vpl_engine *e)
{
    const struct vpl_program *p = e->prog;
    int64_t due = INT64_MAX;
    for (uint32_t i = 0; i < p->nstreams; i++) {
        if (p->streams[i].timer_period > 0 && e->timer_next[i] < due) {
            due = e->timer_next[i];
        }
    }
    return due;
}
