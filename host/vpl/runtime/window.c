/* Windows and aggregates (docs/VPL.md). A window buffers references to its events and
 * aggregates them when it closes; partitioned windows live in a hash map and are
 * freed once closed and empty. Time and session windows sit in a heap keyed by the
 * clock value that closes them, so the clock closes what is due without a sweep. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "join.h"
#include "runtime.h"
#include "snapshot.h"

struct wpart {
    struct hnode node;
    struct heap_item hi;   /* due: the clock value that closes the window */
    struct vpl_event **ev; /* ev[head..n) */
    uint8_t *side;         /* a join's: the source of ev[i], 0 or 1 (NULL otherwise) */
    struct jindex *jx;     /* a hash join's index of ev[] (NULL otherwise) */
    uint32_t scap;         /* bytes of side */
    uint32_t head, n, cap;
    uint32_t size;     /* bytes of this struct with its key */
    uint64_t total;    /* events ever added (count sliding) */
    int64_t end;       /* time tumbling: start + size */
    int64_t last;      /* session: time of the last event */
    int64_t last_emit; /* time sliding */
    uint8_t open, emitted;
};

static uint32_t held(const struct wpart *w)
{
    return w->n - w->head;
}

static void clear(struct vpl_engine *e, struct wpart *w)
{
    for (uint32_t i = w->head; i < w->n; i++) {
        rt_drop(e, w->ev[i]);
    }
    e->st.window_events -= held(w);
    w->head = w->n = 0;
    w->open = 0;
    join_free(e, w->jx);
    w->jx = NULL;
}

static void part_free(struct vpl_engine *e, uint32_t si, struct wpart *w)
{
    struct sstate *ss = &e->ss[si];
    clear(e, w);
    if (w->hi.idx != HEAP_NONE) {
        heap_remove(&ss->due, &w->hi);
    }
    if (ss->single == w) {
        ss->single = NULL;
    } else {
        hmap_del(&ss->parts, &w->node);
    }
    rt_free(e, w->ev, w->cap * sizeof(*w->ev));
    rt_free(e, w->side, w->scap);
    rt_free(e, w, w->size);
    ss->nparts--;
    e->st.partitions--;
}

/* Whether the stream's windows are kept in the map by key: partitions, or with
 * .allowed_lateness() the bins of each partition (whose key says the bin too). */
static int keyed(const struct window *win)
{
    return win->partition != SYM_NONE || win->lateness >= 0;
}

/* A new window partition with key[0..klen) (hash h), in the map; NULL on OOM. */
static struct wpart *part_new(struct vpl_engine *e, uint32_t si, const char *key, size_t klen, uint64_t h)
{
    const struct window *win = e->prog->streams[si].win;
    struct sstate *ss = &e->ss[si];
    size_t size = sizeof(struct wpart) + klen + 1;
    struct wpart *w = rt_alloc(e, size);
    if (w == NULL) {
        return NULL;
    }
    memset(w, 0, sizeof(*w));
    char *k = (char *)(w + 1);
    if (klen) {
        memcpy(k, key, klen);
    }
    k[klen] = '\0';
    w->node.hash = h;
    w->node.key = k;
    w->node.klen = (uint32_t)klen;
    w->hi.idx = HEAP_NONE;
    w->size = (uint32_t)size;
    if (!keyed(win)) {
        ss->single = w;
    } else if (hmap_put(&ss->parts, &w->node) != 0) {
        rt_free(e, w, size);
        e->oom = 1;
        return NULL;
    }
    ss->nparts++;
    e->st.partitions++;
    return w;
}

static struct wpart *part_get(struct vpl_engine *e, uint32_t si, const struct vpl_event *ev)
{
    const struct window *win = e->prog->streams[si].win;
    struct sstate *ss = &e->ss[si];
    uint64_t h = 0;
    if (win->partition == SYM_NONE) {
        if (ss->single != NULL) {
            return ss->single;
        }
        e->key.len = 0;
    } else {
        rt_partition_key(e, ev, win->partition, &h);
        struct hnode *n = hmap_get(&ss->parts, h, e->key.p, e->key.len);
        if (n != NULL) {
            return (struct wpart *)n;
        }
    }
    if (!rt_owns(e, h, win->partition != SYM_NONE)) {
        return NULL; /* another slice's: its engine keeps it */
    }
    if (ss->nparts >= e->lim.max_partitions) {
        e->st.partitions_dropped++;
        return NULL;
    }
    return part_new(e, si, e->key.p, e->key.len, h);
}

/* Adds ev to w (side: its join source, or -1 outside joins). */
static int add_side(struct vpl_engine *e, struct wpart *w, struct vpl_event *ev, int side)
{
    if (held(w) >= e->lim.max_window_events) {
        e->st.window_dropped++;
        return 0;
    }
    if (w->n == w->cap) {
        if (w->head > 0) {
            /* Slide the live part to the front before growing. */
            memmove(w->ev, w->ev + w->head, held(w) * sizeof(*w->ev));
            if (w->side != NULL) {
                memmove(w->side, w->side + w->head, held(w));
            }
            if (w->jx != NULL) {
                join_slide(w->jx, w->head, held(w));
            }
            w->n -= w->head;
            w->head = 0;
        }
        if (w->n == w->cap) {
            uint32_t cap = w->cap ? w->cap * 2 : 8;
            struct vpl_event **v = rt_realloc(e, w->ev, w->cap * sizeof(*v), cap * sizeof(*v));
            if (v == NULL) {
                return -1;
            }
            w->ev = v;
            w->cap = cap;
        }
    }
    if (side >= 0 && w->scap < w->cap) {
        uint8_t *sd = rt_realloc(e, w->side, w->scap, w->cap);
        if (sd == NULL) {
            return -1;
        }
        w->side = sd;
        w->scap = w->cap;
    }
    if (w->jx != NULL && join_reserve(e, w->jx, w->cap) != 0) {
        return -1;
    }
    struct vpl_event *h = rt_hold(e, ev, NULL);
    if (h == NULL) {
        return -1;
    }
    if (side >= 0) {
        w->side[w->n] = (uint8_t)side;
    }
    w->ev[w->n++] = h;
    e->st.window_events++;
    return 0;
}

static void drop_oldest(struct vpl_engine *e, struct wpart *w)
{
    if (w->jx != NULL) {
        join_unlink_oldest(e, w->jx, w->head);
    }
    rt_drop(e, w->ev[w->head++]);
    e->st.window_events--;
}

/* Aggregates the window's events into the stream's next stages. */
static void emit(struct vpl_engine *e, uint32_t si, struct wpart *w, int64_t now)
{
    const struct stream *s = &e->prog->streams[si];
    if (held(w) == 0) {
        return;
    }
    struct ectx c;
    rt_ectx(e, &c, w->ev[w->n - 1], now);
    c.win = w->ev + w->head;
    c.nwin = held(w);
    rt_finish(e, si, s->post, s->npost, &c, 1);
}

/* Emits and empties a tumbling or session window; a partition's window is freed. */
static void close_window(struct vpl_engine *e, uint32_t si, struct wpart *w, int64_t now)
{
    emit(e, si, w, now);
    if (e->ss[si].single == w) {
        clear(e, w);
        if (w->hi.idx != HEAP_NONE) {
            heap_remove(&e->ss[si].due, &w->hi);
        }
    } else {
        part_free(e, si, w);
    }
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Emits a bin of .allowed_lateness() and keeps it, for late events, until the clock
 * reaches its end + the lateness; freed then, or now when clock is there already. */
static void bin_fire(struct vpl_engine *e, uint32_t si, struct wpart *w, int64_t clock, int64_t now)
{
    const struct window *win = e->prog->streams[si].win;
    struct sstate *ss = &e->ss[si];
    emit(e, si, w, now);
    w->emitted = 1;
    w->hi.due = sat_add(w->end, win->lateness);
    if (w->hi.due <= clock) {
        part_free(e, si, w);
    } else if (heap_push(&ss->due, &w->hi) != 0) {
        e->oom = 1;
    }
}

/* .allowed_lateness(D) (docs/VPL.md, "Late events"): the event goes to the bin of its
 * own time, a window of its own. A bin the clock has closed takes it until the clock
 * reaches the bin's end + D, and emits again at once, with every event it holds; later
 * than that, the event is dropped (counted with the window events dropped). */
static void bin_input(struct vpl_engine *e, uint32_t si, struct vpl_event *ev)
{
    const struct window *win = e->prog->streams[si].win;
    struct sstate *ss = &e->ss[si];
    int64_t start = floor_div(ev->time, win->size) * win->size;
    int64_t end = sat_add(start, win->size);
    int64_t clock = rt_stream_clock(e, si);
    uint64_t h = 0;
    if (win->partition != SYM_NONE) {
        rt_partition_key(e, ev, win->partition, &h);
    } else {
        e->key.len = 0;
    }
    /* The partition's key, then the bin: a byte no key text has between them. */
    char bin[24];
    int n = snprintf(bin, sizeof(bin), "%c%" PRId64, 0x1f, start);
    if (buf_put(&e->key, bin, (size_t)n) != 0 || buf_reserve(&e->key, 1) != 0) {
        e->oom = 1;
        return;
    }
    h = hash_bytes(e->key.p, e->key.len);
    struct wpart *w = (struct wpart *)hmap_get(&ss->parts, h, e->key.p, e->key.len);
    if (w == NULL) {
        /* Each bin by its own hash: the bins of one stream spread over the slices. */
        if (!rt_owns(e, h, 1)) {
            return;
        }
        if (sat_add(end, win->lateness) <= clock) {
            e->st.window_dropped++; /* too late even for the lateness */
            return;
        }
        if (ss->nparts >= e->lim.max_partitions) {
            e->st.partitions_dropped++;
            return;
        }
        if ((w = part_new(e, si, e->key.p, e->key.len, h)) == NULL) {
            return;
        }
        w->end = end;
        w->open = 1;
        w->hi.due = end;
        w->hi.seq = ++e->seq;
        if (end > clock && heap_push(&ss->due, &w->hi) != 0) {
            e->oom = 1;
            return;
        }
    }
    if (add_side(e, w, ev, -1) != 0) {
        if (w->hi.idx == HEAP_NONE && !w->emitted) {
            part_free(e, si, w); /* a late bin just made, in no heap: nothing would free it */
        }
        return;
    }
    if (w->emitted) {
        emit(e, si, w, ev->time); /* a late event: the bin's result again, with it */
    } else if (w->end <= clock) {
        bin_fire(e, si, w, clock, ev->time); /* its first event is late already */
    }
}

void window_input(struct vpl_engine *e, uint32_t si, struct vpl_event *ev)
{
    const struct window *win = e->prog->streams[si].win;
    struct sstate *ss = &e->ss[si];
    int64_t t = ev->time;
    if (win->lateness >= 0) {
        bin_input(e, si, ev);
        return;
    }
    struct wpart *w = part_get(e, si, ev);
    if (w == NULL) {
        return;
    }
    switch (win->kind) {
    case W_COUNT:
        if (add_side(e, w, ev, -1) == 0 && held(w) >= (uint64_t)win->size) {
            close_window(e, si, w, t);
        }
        break;
    case W_COUNT_SLIDING:
        if (add_side(e, w, ev, -1) != 0) {
            break;
        }
        if (held(w) > (uint64_t)win->size) {
            drop_oldest(e, w);
        }
        w->total++;
        if (w->total >= (uint64_t)win->size && (w->total - (uint64_t)win->size) % (uint64_t)win->slide == 0) {
            emit(e, si, w, t);
        }
        break;
    case W_TIME:
        /* An event at or past the end closes the window and opens the next. */
        if (w->open && t >= w->end) {
            close_window(e, si, w, t);
            if ((w = part_get(e, si, ev)) == NULL) {
                return;
            }
        }
        if (!w->open) {
            int64_t start = win->aligned ? floor_div(t, win->size) * win->size : t;
            w->end = sat_add(start, win->size);
            w->open = 1;
            w->hi.due = w->end;
            w->hi.seq = ++e->seq;
            if (heap_push(&ss->due, &w->hi) != 0) {
                e->oom = 1;
                return;
            }
        }
        add_side(e, w, ev, -1);
        break;
    case W_TIME_SLIDING:
        if (add_side(e, w, ev, -1) != 0) {
            break;
        }
        while (held(w) > 0 && w->ev[w->head]->time < t - win->size) {
            drop_oldest(e, w);
        }
        if (!w->emitted || t >= sat_add(w->last_emit, win->slide)) {
            w->emitted = 1;
            w->last_emit = t;
            emit(e, si, w, t);
        }
        break;
    case W_SESSION:
        /* A gap of more than the session gap ends the session. */
        if (w->open && t - w->last > win->size) {
            close_window(e, si, w, t);
            if ((w = part_get(e, si, ev)) == NULL) {
                return;
            }
        }
        if (add_side(e, w, ev, -1) != 0) {
            break;
        }
        w->last = t > w->last || !w->open ? t : w->last;
        w->open = 1;
        w->hi.due = sat_add(sat_add(w->last, win->size), 1);
        if (w->hi.idx == HEAP_NONE) {
            w->hi.seq = ++e->seq;
            if (heap_push(&ss->due, &w->hi) != 0) {
                e->oom = 1;
            }
        } else {
            heap_fix(&ss->due, &w->hi);
        }
        break;
    }
}

/* ev (of source `side`) with the held event ev[i]: emitted when of the other source,
 * at most the window apart, and .on() holds. */
static void join_pair(struct vpl_engine *e, uint32_t si, struct wpart *w, uint32_t i, struct vpl_event *ev,
                      int side)
{
    const struct stream *s = &e->prog->streams[si];
    const struct window *win = s->win;
    struct vpl_event *o = w->ev[i];
    int64_t t = ev->time, d;
    if (w->side[i] == side || __builtin_sub_overflow(t, o->time, &d) || d > win->size || d < -win->size) {
        return;
    }
    union capture caps[2];
    caps[side].ev = ev;
    caps[1 - side].ev = o;
    struct ectx c;
    rt_ectx(e, &c, ev, t);
    c.caps = caps;
    c.pat = win->layout;
    if (eval_true(win->on, &c)) {
        rt_finish(e, si, s->post, s->npost, &c, 1);
    }
}

/* Indexes the held ev[i] of source side by its key (a restore's window). */
static int join_index(struct vpl_engine *e, const struct window *win, struct wpart *w, uint32_t i)
{
    uint64_t h;
    struct jgroup *g = NULL;
    int k = join_key(e, win, w->ev[i], w->side[i], &h);
    if (k < 0 || (k > 0 && (g = join_make(e, w->jx, w->side[i], h)) == NULL)) {
        return -1;
    }
    join_link(w->jx, i, g);
    return 0;
}

/* A join: ev, of source `side`, pairs with every held event of the other source at
 * most the window apart for which .on() holds, in the order they came; then it is held
 * itself. With a key (the hash join) only the held events of the other source with
 * ev's key are offered: for the others the equality, so .on(), is false. Held events
 * leave once an event more than the window after them has come (the latest event
 * time, not the clock of the types: a quiet source would keep the other's events
 * forever). */
void window_join(struct vpl_engine *e, uint32_t si, struct vpl_event *ev, int side)
{
    const struct window *win = e->prog->streams[si].win;
    struct wpart *w = part_get(e, si, ev);
    if (w == NULL) {
        return;
    }
    int64_t t = ev->time;
    if (!w->open || t > w->last) {
        w->last = t;
        w->open = 1;
    }
    while (held(w) > 0 && w->ev[w->head]->time < w->last - win->size) {
        drop_oldest(e, w);
    }
    if (win->key[0] == NULL) {
        uint32_t n = w->n;
        for (uint32_t i = w->head; i < n && !e->oom; i++) {
            join_pair(e, si, w, i, ev, side);
        }
        if (add_side(e, w, ev, side) != 0) {
            e->oom = 1;
        }
        return;
    }
    if (w->jx == NULL && (w->jx = join_new(e)) == NULL) {
        return;
    }
    /* Both groups before any pair: the pairs' alerts may use e->jkey again. */
    uint64_t h;
    struct jgroup *other = NULL, *own = NULL;
    int k = join_key(e, win, ev, side, &h);
    if (k < 0 || (k > 0 && (own = join_make(e, w->jx, side, h)) == NULL)) {
        return;
    }
    if (k > 0) {
        other = join_find(w->jx, 1 - side, h, e);
    }
    uint32_t left = other != NULL ? join_count(other) : 0;
    for (uint64_t n = left ? join_first(other) : 0; left > 0 && !e->oom; left--) {
        uint64_t next = left > 1 ? join_next(w->jx, n) : 0;
        join_pair(e, si, w, (uint32_t)(n - w->jx->base), ev, side);
        n = next;
    }
    uint32_t before = held(w); /* not w->n: adding may slide the array */
    if (add_side(e, w, ev, side) != 0) {
        e->oom = 1;
    } else if (held(w) > before) {
        join_link(w->jx, w->n - 1, own);
        return;
    }
    join_drop_empty(e, w->jx, own);
}

void window_clock(struct vpl_engine *e, uint32_t si, int64_t clock, int64_t now)
{
    struct sstate *ss = &e->ss[si];
    int late = e->prog->streams[si].win->lateness >= 0;
    struct heap_item *top;
    while (!e->oom && (top = heap_top(&ss->due)) != NULL && top->due <= clock) {
        struct wpart *w = (struct wpart *)((char *)top - offsetof(struct wpart, hi));
        heap_remove(&ss->due, top);
        if (!late) {
            close_window(e, si, w, now);
        } else if (w->emitted) {
            part_free(e, si, w); /* past its lateness */
        } else {
            bin_fire(e, si, w, clock, now);
        }
    }
}

void window_destroy(struct vpl_engine *e, uint32_t si)
{
    struct sstate *ss = &e->ss[si];
    size_t n = ss->parts.cap;
    for (size_t i = 0; i <= n; i++) {
        struct wpart *w = i < n ? (struct wpart *)ss->parts.slot[i] : ss->single;
        if (w == NULL) {
            continue;
        }
        clear(e, w);
        rt_free(e, w->ev, w->cap * sizeof(*w->ev));
        rt_free(e, w->side, w->scap);
        e->st.partitions--;
        rt_free(e, w, w->size);
    }
    hmap_free(&ss->parts);
    heap_free(&ss->due);
}

/* Snapshots (snapshot.c): each partition's key, the events it holds, its counters and
 * clock values, whether it is open, has emitted and waits in the deadline heap. */
void window_save(struct vpl_engine *e, uint32_t si, struct snap_w *w)
{
    struct sstate *ss = &e->ss[si];
    snap_put_uv(w, ss->nparts);
    size_t n = ss->parts.cap;
    for (size_t i = 0; i <= n; i++) {
        struct wpart *p = i < n ? (struct wpart *)ss->parts.slot[i] : ss->single;
        if (p == NULL) {
            continue;
        }
        snap_put_bytes(w, p->node.key, p->node.klen);
        snap_put_uv(w, held(p));
        for (uint32_t k = p->head; k < p->n; k++) {
            snap_put_event(w, p->ev[k]);
        }
        for (uint32_t k = p->head; p->side != NULL && k < p->n; k++) {
            snap_put_u8(w, p->side[k]);
        }
        snap_put_uv(w, p->total);
        snap_put_sv(w, p->end);
        snap_put_sv(w, p->last);
        snap_put_sv(w, p->last_emit);
        snap_put_u8(w, (uint8_t)(p->open | p->emitted << 1 | (p->hi.idx != HEAP_NONE) << 2));
        snap_put_sv(w, p->hi.due);
        snap_put_uv(w, p->hi.seq);
    }
}

int window_load(struct vpl_engine *e, uint32_t si, struct snap_r *r)
{
    const struct stream *s = &e->prog->streams[si];
    const struct window *win = s->win;
    struct sstate *ss = &e->ss[si];
    int partitioned = keyed(win); /* bins are owned by their own hash (bin_input) */
    int timed = win->kind == W_TIME || win->kind == W_SESSION;
    uint64_t nparts = snap_get_count(r, partitioned ? e->lim.max_partitions : 1, "partitions");
    for (uint64_t i = 0; i < nparts && !r->bad; i++) {
        uint32_t klen;
        uint64_t h;
        const char *key = rt_snap_part_key(r, e, s->name, partitioned, "window", &klen, &h);
        if (key == NULL) {
            break;
        }
        if (partitioned && hmap_get(&ss->parts, h, key, klen) != NULL) {
            return snap_fail(r, "stream %s: partition '%.*s' twice", s->name, (int)klen, key);
        }
        struct wpart *w = part_new(e, si, key, klen, h);
        if (w == NULL) {
            return VPL_ENOMEM;
        }
        uint64_t nheld = snap_get_count(r, e->lim.max_window_events, "window events");
        if (r->bad) {
            break;
        }
        uint32_t cap = nheld > 8 ? (uint32_t)nheld : 8;
        if ((w->ev = rt_alloc(e, cap * sizeof(*w->ev))) == NULL) {
            return VPL_ENOMEM;
        }
        w->cap = cap;
        for (uint64_t k = 0; k < nheld && !r->bad; k++) {
            if ((w->ev[w->n] = snap_get_event(r)) != NULL) {
                w->n++;
                e->st.window_events++;
            }
        }
        if (win->kind == W_JOIN) {
            if ((w->side = rt_alloc(e, cap)) == NULL) {
                return VPL_ENOMEM;
            }
            w->scap = cap;
            for (uint32_t k = 0; k < w->n && !r->bad; k++) {
                if ((w->side[k] = snap_get_u8(r)) > 1) {
                    return snap_fail(r, "stream %s: join side %u", s->name, w->side[k]);
                }
            }
            if (win->key[0] != NULL && !r->bad) {
                if ((w->jx = join_new(e)) == NULL || join_reserve(e, w->jx, cap) != 0) {
                    return VPL_ENOMEM;
                }
                for (uint32_t k = 0; k < w->n; k++) {
                    if (join_index(e, win, w, k) != 0) {
                        return VPL_ENOMEM;
                    }
                }
            }
        }
        w->total = snap_get_uv(r);
        w->end = snap_get_sv(r);
        w->last = snap_get_sv(r);
        w->last_emit = snap_get_sv(r);
        uint8_t flags = snap_get_u8(r);
        w->hi.due = snap_get_sv(r);
        w->hi.seq = snap_get_uv(r);
        if (r->bad) {
            break;
        }
        if (flags > 7 || ((flags & 4) && !timed)) {
            return snap_fail(r, "stream %s: window flags %u", s->name, flags);
        }
        w->open = flags & 1;
        w->emitted = (flags >> 1) & 1;
        if ((flags & 4) && heap_push(&ss->due, &w->hi) != 0) {
            return VPL_ENOMEM;
        }
    }
    return r->bad ? VPL_ESNAPSHOT : 0;
}
