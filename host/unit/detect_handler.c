/* A detect unit's batches: a VPL program fed with the unit's messages in stream order
 * by every slice held here; its alerts are emits (detect.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bus/bus.h"
#include "../common/json_out.h"
#include "../conf/subject.h"
#include "detect.h"

static void on_alert(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)topic; /* resolved once, with the default, in struct output */
    struct detect *d = ud;
    struct gust_emits *emits = &d->batch->emits;
    if (emits->n + 1 > d->emit_cap) {
        size_t cap = d->emit_cap ? d->emit_cap * 2 : 256;
        uint32_t *sl = realloc(d->emit_slice, cap * sizeof(*sl));
        if (sl != NULL) {
            d->emit_slice = sl;
        }
        uint32_t *ix = sl != NULL ? realloc(d->emit_index, cap * sizeof(*ix)) : NULL;
        if (ix == NULL) {
            d->push_failed = 1;
            return;
        }
        d->emit_index = ix;
        d->emit_cap = cap;
    }
    for (size_t i = 0; i < d->nout; i++) {
        if (strcmp(d->out[i].stream, stream) == 0) {
            if (gust_emits_push(emits, d->out[i].subject, json, len) != 0) {
                d->push_failed = 1;
                return;
            }
            d->emit_slice[emits->n - 1] = d->cur->index;
            d->emit_index[emits->n - 1] = d->cur->alerts++;
            return;
        }
    }
}

static const char *type_of(const struct detect *d, const char *subject)
{
    for (size_t k = 0; k < d->nbind; k++) {
        if (strcmp(d->bind[k].subject, subject) == 0) {
            return d->bind[k].event_type;
        }
    }
    return NULL;
}

static void detect_run_batch(void *impl, struct gust_batch *b)
{
    struct detect *d = impl;
    d->batch = b;
    uint64_t replayed = 0;
    for (size_t i = 0; i < b->n; i++) {
        const struct gust_msg *m = &b->msgs[i];
        /* The consumer's filter may be wider than the program's subjects (one read
         * keeps stream order): what no .from() names is not the program's. */
        const char *type = type_of(d, m->subject);
        int64_t tick_at = 0;
        int tick_kind = 0;
        int is_tick = b->tick != NULL && b->tick[i];
        if (is_tick && !vpl_tick_of(m->data, m->len, &tick_kind, &tick_at)) {
            b->outcome[i] = GUST_OUTCOME_DEAD;
            snprintf(b->error[i], GUST_ERROR_MAX,
                     "marked as a tick, but neither {\"@tick\": <epoch ms>} nor {\"@timer\": <epoch ms>}");
            b->emit_end[i] = b->emits.n;
            continue;
        }
        if (!is_tick && type != NULL) {
            d->last_input_wall = gust_clock_wall_ms();
        }
        int fed = 0;
        for (uint32_t k = 0; type != NULL && k < d->nslices; k++) {
            struct slice *s = &d->slices[k];
            /* A slice taken over further back than the others replays alone what the
             * others have applied already. The edge path has no positions. */
            if (s->eng == NULL || (!d->edge && m->stream_seq <= s->pos)) {
                continue;
            }
            d->cur = s;
            s->alerts = 0;
            d->push_failed = 0;
            int rc = is_tick ? vpl_engine_tick(s->eng, tick_kind, tick_at, on_alert, d)
                             : vpl_engine_feed_json(s->eng, m->data, m->len, type, m->stored_ns / 1000000, on_alert, d);
            if (rc == VPL_EJSON) {
                /* Undecodable: every engine would say so, and none changed. */
                b->outcome[i] = GUST_OUTCOME_DEAD;
                snprintf(b->error[i], GUST_ERROR_MAX, "%s", vpl_engine_last_error(s->eng));
                break;
            }
            fed = 1;
            s->fed++;
            if (rc != 0 || d->push_failed) {
                /* Applied, perhaps in part: never fed again (the position moves past
                 * it), so dead-lettered, with what it may have cost. */
                b->outcome[i] = GUST_OUTCOME_DEAD;
                snprintf(b->error[i], GUST_ERROR_MAX, "out of memory in slice %u: its alerts are lost and its "
                         "effect on the state may be partial", k);
            }
        }
        replayed += fed && m->stream_seq <= d->replay_until;
        b->emit_end[i] = b->emits.n;
    }
    if (replayed > 0) {
        pthread_mutex_lock(&d->lock);
        d->view.replayed += replayed;
        pthread_mutex_unlock(&d->lock);
    }
    d->batch = NULL;
}

/* <unit>:<digest>:<slice>:<input seq>:<index>, written by hand: one an alert, and
 * snprintf's parsing of the format was a tenth of the unit's own time storing them. */
static void detect_emit_id(void *impl, const struct gust_batch *b, size_t i, size_t e, char *out)
{
    struct detect *d = impl;
    size_t unit = strlen(d->unit), digest = strlen(d->digest);
    if (unit + digest + 2 + 3 * 20 + 3 > GUST_MSG_ID_MAX) {
        snprintf(out, GUST_MSG_ID_MAX, "%s:%s:%" PRIu32 ":%" PRIu64 ":%" PRIu32, d->unit, d->digest,
                 d->emit_slice[e], b->msgs[i].stream_seq, d->emit_index[e]);
        return;
    }
    char *w = out;
    memcpy(w, d->unit, unit);
    w += unit;
    *w++ = ':';
    memcpy(w, d->digest, digest);
    w += digest;
    *w++ = ':';
    w += gust_u64_dec(d->emit_slice[e], w);
    *w++ = ':';
    w += gust_u64_dec(b->msgs[i].stream_seq, w);
    *w++ = ':';
    w += gust_u64_dec(d->emit_index[e], w);
    *w = '\0';
}

static void detect_render_json(void *impl, struct gust_buf *out)
{
    struct detect_view v;
    gust_detect_view(impl, &v);
    const struct detect *d = impl;
    int64_t age = v.checkpoint_mono > 0 ? gust_clock_mono_ms() - v.checkpoint_mono : -1;
    gust_buf_printf(out,
                    ",\"detect\":{\"slices\":%" PRIu32 ",\"owned\":[%s],\"position\":%" PRIu64
                    ",\"events\":%" PRIu64 ",\"open_runs\":%" PRIu64 ",\"partitions\":%" PRIu64 ",\"window_events\":%" PRIu64
                    ",\"state_bytes\":%" PRIu64 ",\"alerts\":%" PRIu64 ",\"dropped\":{\"runs\":%" PRIu64
                    ",\"partitions\":%" PRIu64 ",\"window_events\":%" PRIu64 "},\"started\":",
                    d->nslices, v.owned_list, v.position, v.total.events, v.total.open_runs, v.total.partitions,
                    v.total.window_events, v.total.state_bytes, v.total.alerts, v.total.runs_dropped,
                    v.total.partitions_dropped, v.total.window_dropped);
    gust_json_append_string(out, v.started, strlen(v.started));
    gust_buf_printf(out,
                    ",\"restores\":%" PRIu64 ",\"restore_ms\":%" PRIu64 ",\"replayed\":%" PRIu64
                    ",\"checkpoint\":{\"count\":%" PRIu64 ",\"failures\":%" PRIu64 ",\"seq\":%" PRIu64
                    ",\"bytes\":%" PRIu64 ",\"write_ms\":%" PRIu64 ",\"age_ms\":%" PRId64 "}}",
                    v.restores, v.restore_ms, v.replayed, v.checkpoints, v.checkpoint_failures, v.checkpoint_seq,
                    v.checkpoint_bytes, v.checkpoint_ms, age);
}

void gust_detect_view(void *impl, struct detect_view *out)
{
    struct detect *d = impl;
    pthread_mutex_lock(&d->lock);
    *out = d->view;
    pthread_mutex_unlock(&d->lock);
}

static void detect_destroy(void *impl)
{
    struct detect *d = impl;
    if (d == NULL) {
        return;
    }
    detect_slices_free(d);
    vpl_program_destroy(d->prog);
    for (size_t i = 0; i < d->nbind; i++) {
        free(d->bind[i].subject);
    }
    for (size_t i = 0; i < d->nout; i++) {
        free(d->out[i].subject);
    }
    free(d->bind);
    free(d->out);
    free(d->emit_slice);
    free(d->emit_index);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static char *dup_printf(const char *fmt, const char *a, const char *b, const char *c)
{
    int n = snprintf(NULL, 0, fmt, a, b, c);
    char *s = malloc((size_t)n + 1);
    if (s != NULL) {
        snprintf(s, (size_t)n + 1, fmt, a, b, c);
    }
    return s;
}

/* The narrowest filter one consumer can use for every subject: the subject itself when
 * there is one, else the tokens they all share followed by '>'. */
static char *common_filter(const struct binding *bind, size_t n)
{
    const char *first = bind[0].subject;
    size_t len = strlen(first);
    for (size_t i = 1; i < n; i++) {
        size_t k = 0;
        while (k < len && bind[i].subject[k] == first[k]) {
            k++;
        }
        if (k < len || bind[i].subject[k] != '\0') {
            while (k > 0 && first[k - 1] != '.') {
                k--; /* keep whole tokens only */
            }
            len = k;
        }
    }
    if (first[len] == '\0') {
        return strdup(first);
    }
    char *f = malloc(len + 2);
    if (f != NULL) {
        memcpy(f, first, len);
        f[len] = '>';
        f[len + 1] = '\0';
    }
    return f;
}

static int bind_program(struct detect *d, const char *prefix, const char *path, struct gust_err *err)
{
    const struct vpl_binding *b = NULL;
    size_t nb = vpl_program_bindings(d->prog, &b);
    const struct vpl_output *o = NULL;
    size_t no = vpl_program_outputs(d->prog, &o);
    if (nb == 0) {
        return gust_err_set(err, GUST_ECONFIG, "%s: the program reads nothing: bind an event type with "
                            "Type.from(Conn, topic: \"ev.x\")", path);
    }
    d->bind = calloc(nb + 1, sizeof(*d->bind));
    d->out = calloc(no + 1, sizeof(*d->out));
    if (d->bind == NULL || d->out == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nb; i++) {
        /* .from(Conn) without a topic reads <prefix><EventType>. */
        d->bind[i].subject = b[i].topic != NULL ? strdup(b[i].topic) : dup_printf("%s%s%s", prefix, b[i].event_type, "");
        d->bind[i].event_type = b[i].event_type;
        d->nbind++;
        if (d->bind[i].subject == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        if (!gust_subject_valid(d->bind[i].subject, strlen(d->bind[i].subject), 0)) {
            return gust_err_set(err, GUST_ECONFIG, "%s: .from(%s) reads '%s', which is not a subject without wildcards",
                                path, b[i].event_type, d->bind[i].subject);
        }
    }
    for (size_t i = 0; i < no; i++) {
        d->out[i].stream = o[i].stream;
        d->out[i].subject = o[i].topic != NULL ? strdup(o[i].topic) : dup_printf("%sdetect.%s.%s", prefix, d->unit,
                                                                                   o[i].stream);
        d->nout++;
        if (d->out[i].subject == NULL) {
            return gust_err_set(err, GUST_ENOMEM, "out of memory");
        }
        if (!gust_subject_valid(d->out[i].subject, strlen(d->out[i].subject), 0)) {
            return gust_err_set(err, GUST_ECONFIG, "%s: stream %s sends to '%s', which is not a subject", path,
                                o[i].stream, d->out[i].subject);
        }
    }
    return 0;
}

int gust_detect_handler_create(const struct gust_detect_opts *o, struct gust_handler *out, char **filter,
                               struct gust_err *err)
{
    struct detect *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&d->lock, NULL);
    snprintf(d->unit, sizeof(d->unit), "%s", o->unit);
    snprintf(d->stream, sizeof(d->stream), "%s", o->stream != NULL ? o->stream : "");
    d->bus = o->bus;
    d->edge = o->edge;
    if (!o->edge && o->leases != NULL) {
        d->leases_port = *o->leases;
        d->leases = &d->leases_port;
    }
    d->nslices = o->slices > 0 ? o->slices : 1;
    d->checkpoint_interval_ms = o->checkpoint_interval_ms;
    d->checkpoint_events = o->checkpoint_events > 0 ? (uint64_t)o->checkpoint_events : UINT64_MAX;
    d->idle_tick_ms = o->idle_tick_ms;
    d->last_input_wall = gust_clock_wall_ms(); /* a unit that starts quiet ticks after one idle_tick */
    struct vpl_error verr = {0};
    int rc = GUST_ECONFIG;
    if (vpl_program_compile(o->src, o->len, o->path, &d->prog, &verr) != 0) {
        gust_err_set(err, GUST_ECONFIG, "%s:%s", o->path, verr.msg);
        goto fail;
    }
    snprintf(d->digest, sizeof(d->digest), "%.12s", vpl_program_digest(d->prog));
    if (o->edge && vpl_program_timers(d->prog) > 0) {
        /* A timer fires from records stored on the bus, which the edge path has not. */
        rc = gust_err_set(err, GUST_ECONFIG, "%s: the program has timer() streams, which the edge path cannot "
                          "run (they fire from records stored on the bus): read the input from the bus", o->path);
        goto fail;
    }
    if ((rc = bind_program(d, o->prefix, o->path, err)) != 0 || (rc = detect_slices_init(d, err)) != 0) {
        goto fail;
    }
    *filter = common_filter(d->bind, d->nbind);
    if (*filter == NULL) {
        rc = gust_err_set(err, GUST_ENOMEM, "out of memory");
        goto fail;
    }
    *out = (struct gust_handler){.kind = "detect",
                                 .impl = d,
                                 .run_batch = detect_run_batch,
                                 .reads_ticks = 1, /* its own stored ticks, with idle_tick on or off */
                                 .emit_id = detect_emit_id,
                                 .between = detect_between,
                                 .stored = detect_stored,
                                 .stopped = detect_stopped,
                                 .render_json = detect_render_json,
                                 .floor = detect_floor,
                                 .destroy = detect_destroy};
    return 0;
fail:
    detect_destroy(d);
    return rc;
}
