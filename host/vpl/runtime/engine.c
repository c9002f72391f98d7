#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfc3339.h"
#include "runtime.h"
#include "snapshot.h"

struct vpl_limits vpl_limits_default(void)
{
    struct vpl_limits l = {
        .max_partitions = 100000,
        .max_runs_per_partition = 10000,
        .max_window_events = 100000,
        .max_fields = 256,
        .max_string = 65536,
        .max_depth = 32,
        .max_array = 4096,
    };
    return l;
}

static void fill_limits(struct vpl_limits *l, const struct vpl_limits *in)
{
    struct vpl_limits d = vpl_limits_default();
    *l = in ? *in : d;
#define DEF(f)                                                                                               \
    if (l->f == 0)                                                                                           \
    l->f = d.f
    DEF(max_partitions);
    DEF(max_runs_per_partition);
    DEF(max_window_events);
    DEF(max_fields);
    DEF(max_string);
    DEF(max_depth);
    DEF(max_array);
#undef DEF
    if (l->max_depth > 1000) {
        l->max_depth = 1000;
    }
}

int vpl_engine_create(const struct vpl_program *prog, const struct vpl_limits *limits,
                      struct vpl_engine **out, struct vpl_error *err)
{
    *out = NULL;
    if (prog == NULL) {
        return vpl_err_at(err, VPL_EINVAL, 0, 0, "no program");
    }
    struct vpl_engine *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
    }
    e->prog = prog;
    e->nslices = 1;
    fill_limits(&e->lim, limits);
    arena_init(&e->scratch, 64 * 1024);
    e->dec = decoder_create(&prog->syms, &e->lim);
    e->clock = malloc((prog->ntypes ? prog->ntypes : 1) * sizeof(*e->clock));
    e->ss = calloc(prog->nstreams ? prog->nstreams : 1, sizeof(*e->ss));
    e->keytext = calloc(prog->syms.n ? prog->syms.n : 1, sizeof(*e->keytext));
    e->headtext = calloc(prog->nstreams ? prog->nstreams : 1, sizeof(*e->headtext));
    e->timer_next = malloc((prog->nstreams ? prog->nstreams : 1) * sizeof(*e->timer_next));
    if (e->dec == NULL || e->clock == NULL || e->ss == NULL || e->keytext == NULL || e->headtext == NULL ||
        e->timer_next == NULL) {
        vpl_engine_destroy(e);
        return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
    }
    for (uint32_t t = 0; t < prog->ntypes; t++) {
        e->clock[t] = INT64_MIN;
    }
    for (uint32_t i = 0; i < prog->nstreams; i++) {
        e->timer_next[i] = INT64_MIN; /* not started */
        if (prog->streams[i].pat) {
            seq_init(e, i);
        }
    }
    const struct sym *s = symtab_find(&prog->syms, "timestamp", 9);
    e->sym_timestamp = s ? s->id : SYM_NONE;
    s = symtab_find(&prog->syms, "event_type", 10);
    e->sym_event_type = s ? s->id : SYM_NONE;
    *out = e;
    return 0;
}

void vpl_engine_destroy(struct vpl_engine *e)
{
    if (e == NULL) {
        return;
    }
    if (e->ss != NULL) {
        for (uint32_t i = 0; i < e->prog->nstreams; i++) {
            if (e->prog->streams[i].pat) {
                seq_destroy(e, i);
            } else if (e->prog->streams[i].win) {
                window_destroy(e, i);
            }
        }
    }
    for (uint32_t i = 0; i < e->nheld; i++) {
        rt_drop(e, e->held[i].ev);
    }
    free(e->held);
    free(e->pend);
    free(e->queue);
    free(e->ss);
    free(e->clock);
    free(e->timer_next);
    for (uint32_t i = 0; e->keytext != NULL && i < e->prog->syms.n; i++) {
        buf_free(&e->keytext[i]);
    }
    for (uint32_t i = 0; e->headtext != NULL && i < e->prog->nstreams; i++) {
        buf_free(&e->headtext[i]);
    }
    free(e->keytext);
    free(e->headtext);
    decoder_destroy(e->dec);
    arena_free(&e->scratch);
    buf_free(&e->out);
    buf_free(&e->key);
    buf_free(&e->jkey);
    free(e);
}

const char *vpl_engine_last_error(const struct vpl_engine *e)
{
    return e->errmsg;
}

/* What the types carry: 1 for those made, directly or through stateless streams, by a
 * sequence or a window; maker[] names the stateful stream. */
static void state_derived(const struct vpl_program *p, uint8_t *derived, uint32_t *maker)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t i = 0; i < p->nstreams; i++) {
            const struct stream *s = &p->streams[i];
            int from = -1; /* a derived type it reads, without a pattern */
            for (uint32_t k = 0; s->pat == NULL && k < s->nsrcs && from < 0; k++) {
                from = derived[s->srcs[k]] ? (int)s->srcs[k] : -1;
            }
            int d = s->pat != NULL || s->win != NULL || from >= 0;
            if (d && !derived[s->type]) {
                derived[s->type] = 1;
                maker[s->type] = s->pat != NULL || s->win != NULL ? i : maker[from];
                changed = 1;
            }
        }
    }
}

int vpl_engine_set_slice(struct vpl_engine *e, uint32_t slice, uint32_t nslices, struct vpl_error *err)
{
    const struct vpl_program *p = e->prog;
    if (nslices == 0 || slice >= nslices) {
        return vpl_err_at(err, VPL_EINVAL, 0, 0, "slice %u of %u", slice, nslices);
    }
    if (e->st.events != 0 || e->st.partitions != 0) {
        return vpl_err_at(err, VPL_EINVAL, 0, 0, "an engine's slice is set before it is fed");
    }
    if (nslices > 1) {
        uint8_t *derived = calloc(p->ntypes ? p->ntypes : 1, 1);
        uint32_t *maker = calloc(p->ntypes ? p->ntypes : 1, sizeof(*maker));
        int rc = derived == NULL || maker == NULL ? vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory") : 0;
        if (rc == 0) {
            state_derived(p, derived, maker);
        }
        for (uint32_t i = 0; rc == 0 && i < p->nstreams; i++) {
            const struct stream *s = &p->streams[i];
            const uint32_t *reads = s->pat ? s->pat->types : s->srcs;
            uint32_t nreads = s->pat ? s->pat->ntypes : s->win ? s->nsrcs : 0;
            for (uint32_t k = 0; rc == 0 && k < nreads; k++) {
                if (derived[reads[k]]) {
                    rc = vpl_err_at(err, VPL_EINVAL, 0, 0,
                                    "stream %s reads %s, which comes from the state of stream %s: with "
                                    "slices that state would have to move between processes; use one "
                                    "slice for this program",
                                    s->name, sym_name(p, p->type_sym[reads[k]]),
                                    p->streams[maker[reads[k]]].name);
                }
            }
        }
        free(derived);
        free(maker);
        if (rc != 0) {
            return rc;
        }
    }
    e->slice = slice;
    e->nslices = nslices;
    return 0;
}

void vpl_engine_stats(const struct vpl_engine *e, struct vpl_stats *out)
{
    *out = e->st;
}

/* ---- memory ------------------------------------------------------------------- */

void *rt_alloc(struct vpl_engine *e, size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        e->oom = 1;
    } else {
        e->st.state_bytes += n;
    }
    return p;
}

void *rt_realloc(struct vpl_engine *e, void *p, size_t old, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL) {
        e->oom = 1;
        return NULL;
    }
    e->st.state_bytes += n - old;
    return q;
}

void rt_free(struct vpl_engine *e, void *p, size_t n)
{
    if (p != NULL) {
        e->st.state_bytes -= n;
        free(p);
    }
}

/* Room for one more event in e->held, the references dropped when the input ends. */
static int held_room(struct vpl_engine *e)
{
    if (e->nheld < e->capheld) {
        return 0;
    }
    uint32_t cap = e->capheld ? e->capheld * 2 : 16;
    struct held *v = realloc(e->held, cap * sizeof(*v));
    if (v == NULL) {
        e->oom = 1;
        return -1;
    }
    e->held = v;
    e->capheld = cap;
    return 0;
}

/* A frozen copy of transient ev made this input that has every field of keep. */
static struct vpl_event *held_copy(const struct vpl_engine *e, const struct vpl_event *ev,
                                   const struct fieldset *keep)
{
    for (uint32_t i = e->nheld; i-- > 0;) {
        const struct held *h = &e->held[i];
        if (h->src == ev && (h->keep == NULL || h->keep == keep)) {
            return h->ev;
        }
    }
    return NULL;
}

struct vpl_event *rt_hold(struct vpl_engine *e, struct vpl_event *ev, const struct fieldset *keep)
{
    if (ev->refs > 0) {
        ev->refs++;
        return ev;
    }
    struct vpl_event *f = ev->frozen != NULL ? held_copy(e, ev, keep) : NULL;
    if (f == NULL) {
        if (held_room(e) != 0) {
            return NULL;
        }
        if ((f = event_freeze(ev, keep)) == NULL) {
            e->oom = 1;
            return NULL;
        }
        e->st.state_bytes += f->size;
        ev->frozen = f;
        e->held[e->nheld++] = (struct held){f, ev, keep}; /* the transient event's own reference */
    }
    f->refs++;
    return f;
}

void rt_drop(struct vpl_engine *e, struct vpl_event *ev)
{
    if (ev == NULL || --ev->refs > 0) {
        return;
    }
    if (e->nqueue > 0) {
        /* A queued derived event may still read its strings (an aggregate's last(),
         * an emit of an alias's field): it lives until the input ends. Without room
         * to keep it, it leaks rather than be read after free. */
        if (held_room(e) == 0) {
            ev->refs = 1;
            e->held[e->nheld++] = (struct held){ev, NULL, NULL};
        }
        return;
    }
    e->st.state_bytes -= ev->size;
    free(ev);
}

/* ---- evaluation and output ------------------------------------------------------ */

void rt_ectx(struct vpl_engine *e, struct ectx *c, const struct vpl_event *ev, int64_t time)
{
    memset(c, 0, sizeof(*c));
    c->ev = ev;
    c->view_slot = -1;
    c->time = time;
    c->arena = &e->scratch;
    c->oom = &e->oom;
    c->memo = &e->memo; /* a new context, a new event: nothing shared is computed yet */
    e->memo.set = 0;
}

void rt_partition_key(struct vpl_engine *e, const struct vpl_event *ev, uint32_t field, uint64_t *hash)
{
    e->key.len = 0;
    const struct vval *v = event_get(ev, field);
    /* A missing field is the empty key; int 1 and string "1" share a partition. */
    if (v != NULL && value_text(&e->key, v) != 0) {
        e->oom = 1;
    }
    if (buf_reserve(&e->key, 1) != 0) {
        e->oom = 1;
    }
    *hash = hash_bytes(e->key.p ? e->key.p : "", e->key.len);
}

int rt_pend(struct vpl_engine *e, struct run *r, const struct vpl_event *ev, int32_t slot, uint32_t view,
            int done)
{
    if (e->npend == e->cappend) {
        uint32_t cap = e->cappend ? e->cappend * 2 : 64;
        struct pend *v = realloc(e->pend, cap * sizeof(*v));
        if (v == NULL) {
            e->oom = 1;
            return -1;
        }
        e->pend = v;
        e->cappend = cap;
    }
    struct pend *p = &e->pend[e->npend++];
    p->run = r;
    p->ev = ev;
    p->pos = e->npend - 1;
    p->slot = slot;
    p->view = view;
    p->done = (uint8_t)done;
    return 0;
}

/* The JSON text of a field's key (,"name":) and of an alert's head, escaped once per
 * engine instead of once per alert. */
static const struct buf *key_text(struct vpl_engine *e, uint32_t sym)
{
    struct buf *t = &e->keytext[sym];
    if (t->len == 0) {
        const char *k = sym_name(e->prog, sym);
        if (buf_putc(t, ',') | json_write_string(t, k, strlen(k)) | buf_putc(t, ':')) {
            t->len = 0;
        }
    }
    return t;
}

static const struct buf *head_text(struct vpl_engine *e, const struct stream *s)
{
    struct buf *t = &e->headtext[s - e->prog->streams];
    if (t->len == 0 && (buf_puts(t, "{\"event_type\":") | json_write_string(t, s->name, strlen(s->name)))) {
        t->len = 0;
    }
    return t;
}

static void deliver(struct vpl_engine *e, const struct stream *s, const struct vpl_event *ev)
{
    struct buf *b = &e->out;
    int rc = 0;
    b->len = 0;
    const struct buf *h = head_text(e, s);
    rc |= h->len ? buf_put(b, h->p, h->len) : VPL_ENOMEM;
    if (e->sym_timestamp == SYM_NONE || event_get(ev, e->sym_timestamp) == NULL) {
        char ts[40];
        rc |= buf_puts(b, ",\"timestamp\":\"");
        rc |= buf_put(b, ts, rfc3339_format_cached(&e->tstext, ev->time, ts));
        rc |= buf_putc(b, '"');
    }
    const uint32_t *keys = event_keys(ev);
    for (uint32_t i = 0; i < ev->nf && rc == 0; i++) {
        if (keys[i] == e->sym_event_type) {
            continue; /* the stream's name is the type; never write the key twice */
        }
        const struct buf *k = key_text(e, keys[i]);
        rc |= k->len ? buf_put(b, k->p, k->len) : VPL_ENOMEM;
        rc |= json_write_value(b, &ev->vals[i]);
    }
    rc |= buf_putc(b, '}');
    if (rc != 0) {
        e->oom = 1;
        return;
    }
    e->st.alerts++;
    if (e->cb != NULL) {
        e->cb(e->ud, s->name, s->topic, b->p, b->len);
    }
}

/* A new transient event of the named values of a projection. */
static struct vpl_event *project(struct vpl_engine *e, const struct stage *st, struct ectx *c)
{
    struct vpl_event *ev = event_new(&e->scratch, st->n);
    if (ev == NULL) {
        e->oom = 1;
        return NULL;
    }
    uint32_t *keys = event_keys_room(ev, st->n);
    uint32_t n = 0;
    for (uint32_t i = 0; i < st->n; i++) {
        struct vval v = eval(st->e[i], c);
        if (v.t == V_MISSING) {
            continue; /* an emit argument that evaluates to none is omitted */
        }
        keys[n] = st->names[i];
        ev->vals[n++] = v;
    }
    event_seal(ev, st->n, n);
    ev->time = c->time;
    return ev;
}

/* Queues a stream's result for the streams that read it. A run's or a window's event
 * may be freed before its turn, so the queue holds a reference to it. */
static void enqueue(struct vpl_engine *e, uint32_t type, struct vpl_event *ev, int from_state)
{
    if (e->nqueue == e->capqueue) {
        uint32_t cap = e->capqueue ? e->capqueue * 2 : 16;
        struct qitem *v = realloc(e->queue, cap * sizeof(*v));
        if (v == NULL) {
            e->oom = 1;
            return;
        }
        e->queue = v;
        e->capqueue = cap;
    }
    if (ev->refs > 0) {
        ev->refs++;
    }
    e->queue[e->nqueue].type = type;
    e->queue[e->nqueue].from_state = (uint8_t)from_state;
    e->queue[e->nqueue++].ev = ev;
}

/* The record of c after stages st[0..n): NULL when a filter drops it. */
static struct vpl_event *run_stages(struct vpl_engine *e, const struct stage *st, uint32_t n, struct ectx *c)
{
    struct vpl_event *cur = (struct vpl_event *)c->ev;
    for (uint32_t i = 0; i < n; i++) {
        if (st[i].kind == SG_FILTER) {
            if (!eval_true(st[i].e[0], c)) {
                return NULL;
            }
            continue;
        }
        if ((cur = project(e, &st[i], c)) == NULL) {
            return NULL;
        }
        if (i + 1 < n) { /* the stages after a projection read what it made */
            rt_ectx(e, c, cur, c->time);
        }
    }
    return cur;
}

void rt_finish(struct vpl_engine *e, uint32_t si, const struct stage *st, uint32_t n, struct ectx *c,
               int from_state)
{
    const struct stream *s = &e->prog->streams[si];
    struct vpl_event *out = run_stages(e, st, n, c);
    if (out == NULL || e->oom) {
        return;
    }
    if (s->emits && (from_state || e->slice == 0)) {
        deliver(e, s, out);
    }
    if (e->prog->routes[s->type].n > 0) {
        enqueue(e, s->type, out, from_state);
    }
}

int rt_owns(const struct vpl_engine *e, uint64_t key_hash, int partitioned)
{
    if (e->nslices <= 1) {
        return 1;
    }
    if (!partitioned) {
        return e->slice == 0;
    }
    /* The high half: the tables index by the low bits of the same hash. */
    return (key_hash >> 32) % e->nslices == e->slice;
}

const char *rt_snap_part_key(struct snap_r *r, const struct vpl_engine *e, const char *stream,
                             int partitioned, const char *what, uint32_t *klen, uint64_t *hash)
{
    const char *key = snap_get_bytes(r, klen, e->lim.max_string * 4 + 64);
    if (r->bad) {
        return NULL;
    }
    *hash = hash_bytes(key, *klen);
    if (!partitioned && *klen != 0) {
        snap_fail(r, "stream %s: a key for an unpartitioned %s", stream, what);
        return NULL;
    }
    if (!rt_owns(e, *hash, partitioned)) {
        snap_fail(r, "stream %s: partition '%.*s' is another slice's", stream, (int)*klen, key);
        return NULL;
    }
    return key;
}

static void stream_input(struct vpl_engine *e, uint32_t si, uint32_t type, struct vpl_event *ev,
                         int from_state)
{
    const struct stream *s = &e->prog->streams[si];
    if (s->pat != NULL) {
        seq_input(e, si, type, ev);
        return;
    }
    if (s->win != NULL && s->win->kind == W_JOIN) {
        window_join(e, si, ev, type == s->srcs[0] ? 0 : 1);
        return;
    }
    if (s->win == NULL) {
        if (s->idle) {
            return;
        }
        struct ectx c;
        rt_ectx(e, &c, ev, ev->time);
        rt_finish(e, si, s->pre, s->npre, &c, from_state);
        return;
    }
    struct ectx c;
    rt_ectx(e, &c, ev, ev->time);
    struct vpl_event *in = run_stages(e, s->pre, s->npre, &c);
    if (in != NULL) {
        window_input(e, si, in);
    }
}

static void route(struct vpl_engine *e, uint32_t type, struct vpl_event *ev, int from_state)
{
    const struct route *r = &e->prog->routes[type];
    for (uint32_t i = 0; i < r->n && !e->oom; i++) {
        stream_input(e, r->s[i], type, ev, from_state);
    }
}

/* Routes the queued derived events, and those they cause, in FIFO order: breadth-
 * first, as Varpulis does (docs/VPL.md, "Streams"). Depth-first, a stream that reads
 * both a type and a stream derived from it would see the derived copy of an input
 * before the input itself, and a sequence could match an input with itself. */
static void drain(struct vpl_engine *e)
{
    while (e->qhead < e->nqueue) {
        struct qitem q = e->queue[e->qhead++];
        if (!e->oom) {
            route(e, q.type, q.ev, q.from_state);
        }
        if (q.ev->refs > 0) {
            rt_drop(e, q.ev);
        }
    }
    e->qhead = e->nqueue = 0;
}

/* Moves the clock of `type` to an input's time: 1 when it moved. */
static int advance(struct vpl_engine *e, uint32_t type, int64_t now)
{
    int64_t t = now - e->prog->lag[type];
    if (t <= e->clock[type]) {
        return 0;
    }
    e->clock[type] = t;
    return 1;
}

/* Closes the windows and expires or confirms the runs of timed stream si that its
 * clock has passed. */
int64_t rt_stream_clock(const struct vpl_engine *e, uint32_t si)
{
    const struct stream *s = &e->prog->streams[si];
    /* A sequence follows its fastest type, a window waits for the slowest type feeding
     * it (docs/VPL.md, "Time"). */
    int64_t clock = s->pat ? INT64_MIN : INT64_MAX;
    for (uint32_t k = 0; k < s->nroots; k++) {
        int64_t c = e->clock[s->roots[k]];
        if (s->pat ? c > clock : c < clock) {
            clock = c;
        }
    }
    return clock;
}

static void clock_step(struct vpl_engine *e, uint32_t si, int64_t now)
{
    const struct stream *s = &e->prog->streams[si];
    int64_t clock = rt_stream_clock(e, si);
    if (s->pat) {
        seq_clock(e, si, clock, now);
    } else {
        window_clock(e, si, clock, now);
    }
}

static int reads_directly(const struct route *r, uint32_t si)
{
    for (uint32_t j = 0; j < r->n; j++) {
        if (r->s[j] == si) {
            return 1;
        }
    }
    return 0;
}

/* Runs an input through the streams that read its type, in declaration order, each
 * timed one closing what its clock has passed just before it takes the input
 * (docs/VPL.md, "Alerts", order). Then what they derived, breadth-first; the timed
 * streams further down close after what was derived so far has reached them, upstream
 * first, so a window's result is counted below before those close. */
static void route_input(struct vpl_engine *e, uint32_t type, struct vpl_event *ev, int moved)
{
    const struct vpl_program *p = e->prog;
    const struct route *r = &p->routes[type];
    for (uint32_t j = 0; j < r->n && !e->oom; j++) {
        if (moved && p->streams[r->s[j]].timed) {
            clock_step(e, r->s[j], ev->time);
        }
        if (!e->oom) {
            stream_input(e, r->s[j], type, ev, 0);
        }
    }
    const struct route *tr = &p->timed[type];
    for (uint32_t i = 0; moved && i < tr->n && !e->oom; i++) {
        if (reads_directly(r, tr->s[i])) {
            continue;
        }
        drain(e);
        if (!e->oom) {
            clock_step(e, tr->s[i], ev->time);
        }
    }
    drain(e);
}

/* What every feed leaves behind: the events held for it, the scratch arena, the callback. */
int rt_end_feed(struct vpl_engine *e)
{
    for (uint32_t i = 0; i < e->nheld; i++) {
        rt_drop(e, e->held[i].ev);
    }
    e->nheld = 0;
    arena_reset(&e->scratch);
    e->cb = NULL;
    e->ud = NULL;
    if (e->oom) {
        /* State stays consistent, but what this input should have done may be partial. */
        e->oom = 0;
        snprintf(e->errmsg, sizeof(e->errmsg), "out of memory");
        return VPL_ENOMEM;
    }
    return 0;
}

/* An idle tick: every clock moves to now_ms. */
static int idle_tick(struct vpl_engine *e, int64_t now_ms, vpl_alert_fn cb, void *ud)
{
    const struct vpl_program *p = e->prog;
    e->errmsg[0] = '\0';
    e->cb = cb;
    e->ud = ud;
    int moved = 0;
    for (uint32_t t = 0; t < p->ntypes; t++) {
        moved |= advance(e, t, now_ms);
    }
    /* As an input of every type at now_ms: each timed stream closes what its clock has
     * passed, upstream first, after what was derived so far has reached it. */
    for (uint32_t si = 0; moved && si < p->nstreams && !e->oom; si++) {
        if (p->streams[si].timed) {
            drain(e);
            if (!e->oom) {
                clock_step(e, si, now_ms);
            }
        }
    }
    drain(e);
    int rc = rt_end_feed(e);
    if (rc == 0) {
        e->st.ticks++;
    }
    return rc;
}

int vpl_engine_tick(struct vpl_engine *e, int kind, int64_t now_ms, vpl_alert_fn cb, void *ud)
{
    if (e == NULL || (kind != VPL_TICK_IDLE && kind != VPL_TICK_TIMER)) {
        return VPL_EINVAL;
    }
    e->errmsg[0] = '\0';
    if (kind == VPL_TICK_TIMER) {
        int rc = timer_fire(e, now_ms, cb, ud);
        if (rc == 0) {
            e->st.ticks++;
        }
        return rc;
    }
    return idle_tick(e, now_ms, cb, ud);
}

/* {"<key>": <integer>} and nothing else (blanks aside): 1 and *ms. */
static int tick_line(const char *json, size_t len, const char *key, size_t klen, int64_t *ms)
{
    size_t i = 0;
    while (i < len && (json[i] == ' ' || json[i] == '\t')) {
        i++;
    }
    if (i == len || json[i++] != '{') {
        return 0;
    }
    while (i < len && (json[i] == ' ' || json[i] == '\t')) {
        i++;
    }
    if (len - i < klen || memcmp(json + i, key, klen) != 0) {
        return 0;
    }
    i += klen;
    while (i < len && (json[i] == ' ' || json[i] == '\t' || json[i] == ':')) {
        i++;
    }
    char digits[24];
    size_t n = 0;
    while (i < len && n + 1 < sizeof(digits) && ((json[i] >= '0' && json[i] <= '9') || (n == 0 && json[i] == '-'))) {
        digits[n++] = json[i++];
    }
    digits[n] = '\0';
    while (i < len && (json[i] == ' ' || json[i] == '\t')) {
        i++;
    }
    if (n == 0 || i == len || json[i++] != '}') {
        return 0;
    }
    while (i < len && (json[i] == ' ' || json[i] == '\t' || json[i] == '\r' || json[i] == '\n')) {
        i++;
    }
    if (i != len) {
        return 0;
    }
    *ms = strtoll(digits, NULL, 10);
    return 1;
}

int vpl_tick_of(const char *json, size_t len, int *kind, int64_t *ms)
{
    if (tick_line(json, len, "\"@tick\"", 7, ms)) {
        *kind = VPL_TICK_IDLE;
        return 1;
    }
    if (tick_line(json, len, "\"@timer\"", 8, ms)) {
        *kind = VPL_TICK_TIMER;
        return 1;
    }
    return 0;
}

int rt_feed(struct vpl_engine *e, const char *json, size_t len, const char *default_event_type, int64_t arrival_ms)
{
    const struct vpl_program *p = e->prog;
    struct decoded d;
    int rc = decoder_run(e->dec, &e->scratch, json, len, &d, e->errmsg, sizeof(e->errmsg));
    if (rc != 0) {
        if (rc == VPL_ENOMEM) {
            snprintf(e->errmsg, sizeof(e->errmsg), "out of memory");
        }
        return rc;
    }
    e->st.input_truncated += d.truncated;
    struct vpl_event *ev = d.ev;
    if (!d.has_time) {
        ev->time = arrival_ms;
    }
    const char *tname = d.type ? d.type : default_event_type;
    size_t tlen = d.type ? d.type_len : (tname ? strlen(tname) : 0);
    const struct sym *sym = tname ? decoder_find(e->dec, tname, tlen) : NULL;
    if (sym == NULL || sym->type < 0) {
        e->st.events_unrouted++;
    } else {
        uint32_t type = (uint32_t)sym->type;
        if (p->routes[type].n == 0 && p->timed[type].n == 0) {
            e->st.events_unrouted++;
        }
        route_input(e, type, ev, advance(e, type, ev->time));
    }
    return 0;
}

int vpl_engine_feed_json(struct vpl_engine *e, const char *json, size_t len, const char *default_event_type,
                         int64_t arrival_ms, vpl_alert_fn cb, void *ud)
{
    if (e == NULL || (json == NULL && len > 0)) {
        return VPL_EINVAL;
    }
    e->errmsg[0] = '\0';
    e->cb = cb;
    e->ud = ud;
    int rc = rt_feed(e, json ? json : "", len, default_event_type, arrival_ms);
    if (rc != 0) {
        /* Undecodable: nothing was routed, nothing is held. */
        arena_reset(&e->scratch);
        e->cb = NULL;
        e->ud = NULL;
        return rc;
    }
    if (rt_end_feed(e) != 0) {
        return VPL_ENOMEM;
    }
    e->st.events++;
    return 0;
}
