/* A detect unit's slices: taken over, checkpointed, let go (detect.h).
 *
 * A slice's checkpoint is the engine's snapshot (vpl_engine_snapshot) stored as
 * <unit>.<slice> in the state stream, with an info object naming the program's digest,
 * the number of slices and the position: the stream sequence of the last input applied
 * whose alerts were stored. Taking a slice over restores it and reads the input again
 * from the position on: the alerts that replay makes again carry the ids they had, and
 * JetStream stores them once (within its duplicate window). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/bus.h"
#include "../bus/feeds.h"
#include "../bus/state_store.h"
#include "../bus/stream_ops.h"
#include "../common/log.h"
#include "detect.h"

#define FORMAT 1

/* Lease tasks: the lease thread says whether this process holds a slice; the unit
 * thread acts on it between batches. */
static int slice_wanted(void *ud, struct gust_err *err)
{
    (void)err;
    atomic_store(&((struct slice *)ud)->wanted, 1);
    return 0;
}

static void slice_unwanted(void *ud)
{
    atomic_store(&((struct slice *)ud)->wanted, 0);
}

int detect_slices_init(struct detect *d, struct gust_err *err)
{
    if (d->edge && d->nslices > 1) {
        return gust_err_set(err, GUST_ECONFIG, "detect '%s': slices need the bus path (an edge unit runs where its "
                            "source runs)", d->unit);
    }
    struct vpl_engine *probe = NULL;
    struct vpl_error verr = {0};
    int rc = vpl_engine_create(d->prog, NULL, &probe, &verr);
    if (rc == 0 && d->nslices > 1) {
        rc = vpl_engine_set_slice(probe, 0, d->nslices, &verr);
    }
    vpl_engine_destroy(probe);
    if (rc != 0) {
        return gust_err_set(err, GUST_ECONFIG, "detect '%s': slices %" PRIu32 ": %s", d->unit, d->nslices, verr.msg);
    }
    d->slices = calloc(d->nslices, sizeof(*d->slices));
    if (d->slices == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    for (uint32_t k = 0; k < d->nslices; k++) {
        struct slice *s = &d->slices[k];
        s->d = d;
        s->index = k;
        snprintf(s->lease_key, sizeof(s->lease_key), "detect.%s.%" PRIu32, d->unit, k);
        snprintf(s->store_name, sizeof(s->store_name), "%s.%" PRIu32, d->unit, k);
        atomic_store(&s->wanted, d->edge); /* the edge path: always here */
    }
    snprintf(d->view.started, sizeof(d->view.started), "not started");
    return 0;
}

int gust_detect_handler_start(void *impl, struct gust_err *err)
{
    struct detect *d = impl;
    char group[96];
    snprintf(group, sizeof(group), "detect.%s", d->unit);
    for (uint32_t k = 0; d->leases != NULL && k < d->nslices; k++) {
        struct slice *s = &d->slices[k];
        struct gust_lease_task task = {
            .start = slice_wanted, .stop = slice_unwanted, .ud = s, .group = group, .group_size = d->nslices};
        int rc = d->leases->attach(d->leases->impl, s->lease_key, s->lease_key, &task, err);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* A number or string member of the info object gust wrote (no escapes in it). */
static void info_field(const char *info, const char *name, char *out, size_t size)
{
    char key[40];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *p = strstr(info, key);
    out[0] = '\0';
    if (p == NULL) {
        return;
    }
    p += strlen(key);
    if (*p == '"') {
        const char *end = strchr(++p, '"');
        snprintf(out, size, "%.*s", end != NULL ? (int)(end - p) : 0, p);
    } else {
        snprintf(out, size, "%.*s", (int)strspn(p, "0123456789"), p);
    }
}

/* Where a slice without any checkpoint starts: where the unit's durable consumer of an
 * earlier version got to (it is deleted: the unit reads with an ordered feed now), or
 * the first message. */
static uint64_t first_seq(struct detect *d)
{
    if (!d->first_seq_known) {
        char durable[160];
        snprintf(durable, sizeof(durable), "detect_%s", d->unit);
        uint64_t floor = gust_durable_ack_floor(d->bus, d->stream, durable);
        if (floor > 0) {
            gust_info("[detect_%s] continuing after %" PRIu64 ", where its durable consumer got to (deleted: the "
                      "unit keeps its position in its checkpoints)", d->unit, floor);
            gust_durable_delete(d->bus, d->stream, durable);
        }
        d->first_seq = floor;
        d->first_seq_known = 1;
    }
    return d->first_seq;
}

static void set_started(struct detect *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_started(struct detect *d, const char *fmt, ...)
{
    char text[sizeof(d->view.started)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&d->lock);
    memcpy(d->view.started, text, sizeof(text));
    pthread_mutex_unlock(&d->lock);
}

/* The engine of a slice, from its checkpoint when there is one of this program.
 * Returns 0, or GUST_EAGAIN when the checkpoint could not be read now (the bus away):
 * the slice is taken over later rather than started empty. */
static int take_over(struct detect *d, struct slice *s)
{
    int64_t t0 = gust_clock_mono_ms();
    struct vpl_engine *eng = NULL;
    struct vpl_error verr = {0};
    if (vpl_engine_create(d->prog, NULL, &eng, &verr) != 0 ||
        (d->nslices > 1 && vpl_engine_set_slice(eng, s->index, d->nslices, &verr) != 0)) {
        gust_error("[detect_%s] slice %" PRIu32 ": %s", d->unit, s->index, verr.msg);
        vpl_engine_destroy(eng);
        return GUST_EAGAIN;
    }
    char info[512], why[512];
    void *data = NULL;
    size_t len = 0;
    int rc = gust_state_get(d->bus, s->store_name, info, sizeof(info), &data, &len, why, sizeof(why));
    if (rc == GUST_EAGAIN || rc == GUST_ENOMEM || rc == GUST_EIO) {
        if (!s->warned++) {
            gust_warn("[detect_%s] slice %" PRIu32 ": cannot read its checkpoint now (%s); trying again", d->unit,
                      s->index, why);
        }
        vpl_engine_destroy(eng);
        return GUST_EAGAIN;
    }
    s->warned = 0;
    char digest[40] = "", slices[16] = "", position[24] = "";
    if (rc == 0 || rc == GUST_EINVAL) {
        info_field(info, "digest", digest, sizeof(digest));
        info_field(info, "slices", slices, sizeof(slices));
        info_field(info, "position", position, sizeof(position));
    }
    uint64_t pos = position[0] != '\0' ? strtoull(position, NULL, 10) : first_seq(d);
    const char *how;
    if (rc == GUST_ENOTFOUND) {
        how = "empty: no checkpoint yet";
        pos = first_seq(d);
    } else if (rc == GUST_EINVAL) {
        gust_error("[detect_%s] slice %" PRIu32 ": checkpoint refused (%s): starting empty after %" PRIu64
                   "; the runs and windows it held are lost", d->unit, s->index, why, pos);
        how = "empty: its checkpoint was refused";
    } else if (strcmp(digest, vpl_program_digest(d->prog)) != 0 || strtoul(slices, NULL, 10) != d->nslices) {
        gust_info("[detect_%s] slice %" PRIu32 ": the checkpoint is of %s; starting empty after %" PRIu64, d->unit,
                  s->index, strcmp(digest, vpl_program_digest(d->prog)) != 0 ? "another program" : "other slices",
                  pos);
        how = "empty: the checkpoint is of another program or slicing";
    } else if (vpl_engine_restore(eng, data, len, &verr) != 0) {
        gust_error("[detect_%s] slice %" PRIu32 ": checkpoint refused (%s): starting empty after %" PRIu64
                   "; the runs and windows it held are lost", d->unit, s->index, verr.msg, pos);
        how = "empty: its checkpoint was refused";
    } else {
        how = "restored";
    }
    free(data);
    if (d->edge) {
        pos = 0; /* the edge path has no positions */
    }
    uint64_t last = 0, msgs = 0;
    char ignored[128];
    if (!d->edge && gust_stream_state(d->bus, d->stream, &last, &msgs, ignored, sizeof(ignored)) == 0 &&
        last > d->replay_until) {
        d->replay_until = last;
    }
    s->eng = eng;
    s->pos = pos;
    s->saved = pos;
    s->fed = 0;
    s->checkpoint_at = gust_clock_mono_ms();
    d->seek = 1;
    d->catching_up = !d->edge;
    int64_t ms = gust_clock_mono_ms() - t0;
    if (strcmp(how, "restored") == 0) {
        set_started(d, "slice %" PRIu32 " restored from its checkpoint at seq %" PRIu64 " (%zu bytes) in %" PRId64
                    " ms", s->index, pos, len, ms);
    } else {
        set_started(d, "slice %" PRIu32 " %s, reading after seq %" PRIu64, s->index, how, pos);
    }
    gust_info("[detect_%s] slice %" PRIu32 " taken over: %s, reading after seq %" PRIu64 " (%" PRId64 " ms)", d->unit,
              s->index, how, pos, ms);
    detect_update_floor(d);
    pthread_mutex_lock(&d->lock);
    d->view.restores++;
    d->view.restore_ms = (uint64_t)ms;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

static void checkpoint(struct detect *d, struct slice *s)
{
    /* Only the holder writes: a process that lost the lease must not replace a newer
     * checkpoint of the next holder with its older state. */
    if (d->leases != NULL && !d->leases->holding(d->leases->impl, s->lease_key)) {
        return;
    }
    int64_t t0 = gust_clock_mono_ms();
    void *data = NULL;
    size_t len = 0;
    struct vpl_error verr = {0};
    char why[512] = "";
    int rc = vpl_engine_snapshot(s->eng, &data, &len, &verr);
    if (rc != 0) {
        snprintf(why, sizeof(why), "%s", verr.msg);
    } else {
        char info[400];
        snprintf(info, sizeof(info),
                 "{\"format\":%d,\"unit\":\"%s\",\"slice\":%" PRIu32 ",\"slices\":%" PRIu32
                 ",\"digest\":\"%s\",\"position\":%" PRIu64 ",\"taken_ms\":%" PRId64 "}",
                 FORMAT, d->unit, s->index, d->nslices, vpl_program_digest(d->prog), s->pos, gust_clock_wall_ms());
        rc = gust_state_put(d->bus, s->store_name, info, data, len, NULL, why, sizeof(why));
    }
    free(data);
    int64_t ms = gust_clock_mono_ms() - t0;
    s->checkpoint_at = gust_clock_mono_ms();
    pthread_mutex_lock(&d->lock);
    if (rc == 0) {
        s->fed = 0;
        s->saved = s->pos;
        d->view.checkpoints++;
        d->view.checkpoint_seq = s->pos;
        d->view.checkpoint_bytes = len;
        d->view.checkpoint_ms = (uint64_t)ms;
        d->view.checkpoint_mono = s->checkpoint_at;
    } else {
        d->view.checkpoint_failures++;
    }
    pthread_mutex_unlock(&d->lock);
    detect_update_floor(d);
    if (rc != 0) {
        gust_warn("[detect_%s] slice %" PRIu32 ": checkpoint at seq %" PRIu64 " not stored: %s", d->unit, s->index,
                  s->pos, why);
    }
}

static void let_go(struct slice *s)
{
    vpl_engine_destroy(s->eng);
    s->eng = NULL;
}

/* A slice's checkpoint is due after checkpoint_events inputs, or checkpoint_interval
 * after the last one when it has applied something since. Not on time while the unit
 * catches up after a take-over: a checkpoint then (the engine's whole state written and
 * waited for, 100 ms for 100 000 open runs) would delay the catch-up, which is the gap
 * in alerts users see, and the checkpoint due as soon as it has caught up holds the
 * same work. checkpoint_events still bounds what a crash during a long catch-up would
 * replay. */
static void checkpoint_due(struct detect *d, int64_t now)
{
    for (uint32_t k = 0; k < d->nslices; k++) {
        struct slice *s = &d->slices[k];
        if (s->eng != NULL && (s->fed >= d->checkpoint_events ||
                               (d->checkpoint_interval_ms > 0 && !d->catching_up && s->fed > 0 &&
                                now - s->checkpoint_at >= d->checkpoint_interval_ms))) {
            checkpoint(d, s);
        }
    }
}

int detect_between(void *impl, uint64_t *seq)
{
    struct detect *d = impl;
    checkpoint_due(d, gust_clock_mono_ms()); /* an idle unit too: what it applied last is kept */
    uint32_t held = 0;
    int let = 0;
    for (uint32_t k = 0; k < d->nslices; k++) {
        struct slice *s = &d->slices[k];
        int wanted = atomic_load(&s->wanted);
        if (wanted && s->eng == NULL) {
            take_over(d, s);
        } else if (!wanted && s->eng != NULL) {
            gust_info("[detect_%s] slice %" PRIu32 " let go (its lease was given to a peer or lost): its state goes "
                      "to the next holder", d->unit, s->index);
            let_go(s);
            let = 1;
        }
        held += s->eng != NULL;
    }
    if (let) {
        detect_update_floor(d);
        detect_refresh_view(d); /* an idle unit's /units too */
    }
    if (held == 0) {
        detect_refresh_view(d);
        return GUST_IDLE;
    }
    if (d->seek) {
        d->seek = 0;
        uint64_t low = UINT64_MAX;
        for (uint32_t k = 0; k < d->nslices; k++) {
            if (d->slices[k].eng != NULL && d->slices[k].pos < low) {
                low = d->slices[k].pos;
            }
        }
        detect_refresh_view(d);
        *seq = low + 1;
        return GUST_SEEK;
    }
    detect_tick_due(d);
    return GUST_GO_ON;
}

void detect_stored(void *impl, const struct gust_batch *b)
{
    struct detect *d = impl;
    uint64_t last = b->n > 0 ? b->msgs[b->n - 1].stream_seq : 0;
    for (uint32_t k = 0; !d->edge && k < d->nslices; k++) {
        struct slice *s = &d->slices[k];
        if (s->eng != NULL && last > s->pos) {
            s->pos = last;
        }
    }
    if (d->catching_up && (b->pending == 0 || last >= d->replay_until)) {
        d->catching_up = 0;
    }
    /* The position is shown as soon as it is stored, before a checkpoint it may make due. */
    detect_refresh_view(d);
    checkpoint_due(d, gust_clock_mono_ms());
}

void detect_stopped(void *impl, int clean)
{
    struct detect *d = impl;
    for (uint32_t k = 0; k < d->nslices; k++) {
        struct slice *s = &d->slices[k];
        if (s->eng == NULL) {
            continue;
        }
        if (clean) {
            checkpoint(d, s); /* the next holder starts where this one stopped */
        } else {
            gust_warn("[detect_%s] slice %" PRIu32 ": stopped with alerts not stored; no checkpoint, so the next "
                      "holder replays from the last one", d->unit, s->index);
        }
    }
    /* Let go of the leases only now: a peer takes a slice over from its final checkpoint. */
    for (uint32_t k = 0; d->leases != NULL && k < d->nslices; k++) {
        d->leases->detach(d->leases->impl, d->slices[k].lease_key);
    }
}

void detect_refresh_view(struct detect *d)
{
    struct vpl_stats total = {0};
    uint64_t position = UINT64_MAX;
    uint32_t owned = 0;
    char list[256] = "";
    size_t used = 0;
    for (uint32_t k = 0; k < d->nslices; k++) {
        struct slice *s = &d->slices[k];
        if (s->eng == NULL) {
            continue;
        }
        struct vpl_stats st;
        vpl_engine_stats(s->eng, &st);
        total.events += st.events;
        total.alerts += st.alerts;
        total.open_runs += st.open_runs;
        total.partitions += st.partitions;
        total.window_events += st.window_events;
        total.state_bytes += st.state_bytes;
        total.runs_dropped += st.runs_dropped;
        total.partitions_dropped += st.partitions_dropped;
        total.window_dropped += st.window_dropped;
        position = s->pos < position ? s->pos : position;
        if (used + 12 < sizeof(list)) {
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%" PRIu32, owned > 0 ? "," : "", k);
        }
        owned++;
    }
    pthread_mutex_lock(&d->lock);
    d->view.total = total;
    d->view.position = owned > 0 ? position : 0;
    d->view.owned = owned;
    memcpy(d->view.owned_list, list, sizeof(list));
    pthread_mutex_unlock(&d->lock);
}

void detect_slices_free(struct detect *d)
{
    for (uint32_t k = 0; d->slices != NULL && k < d->nslices; k++) {
        let_go(&d->slices[k]);
    }
    free(d->slices);
    d->slices = NULL;
}

/* A slice held elsewhere (a cluster) has a checkpoint this process does not follow: the
 * floor is then unknown, and nothing is removed on its account being wrong. */
void detect_update_floor(struct detect *d)
{
    uint64_t floor = UINT64_MAX;
    for (uint32_t k = 0; k < d->nslices; k++) {
        const struct slice *s = &d->slices[k];
        if (s->eng == NULL) {
            floor = 0;
            break;
        }
        floor = s->saved + 1 < floor ? s->saved + 1 : floor;
    }
    pthread_mutex_lock(&d->lock);
    d->view.floor = d->edge ? UINT64_MAX : floor;
    pthread_mutex_unlock(&d->lock);
}

uint64_t detect_floor(void *impl)
{
    struct detect *d = impl;
    pthread_mutex_lock(&d->lock);
    uint64_t floor = d->edge ? UINT64_MAX : d->view.floor;
    pthread_mutex_unlock(&d->lock);
    return floor;
}
