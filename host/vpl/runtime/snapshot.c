/* Snapshots: the engine's whole state as bytes, and back (vpl.h).
 *
 * Layout (integers are LEB128 varints, signed ones zigzag; "bytes" is a length then the
 * bytes):
 *
 *   "VPLS" u8 version  16-byte program digest  slice nslices
 *   counters: events events_unrouted alerts runs_dropped partitions_dropped
 *             window_dropped kleene_truncated input_truncated
 *   seq (creation order)   ntypes, then each type's clock (signed)
 *   symbols: n, then each field name (bytes): what events' fields refer to, by position
 *   events: n, then each: time (signed) nf, then nf times: symbol, value
 *   streams: n, then each: u8 kind (0 none, 1 sequence, 2 window) and its state
 *            (seq_save, window_save)
 *   timers: for each timer() stream, in order, its next firing time (signed); none in
 *           a program without timers
 *   8-byte FNV-1a hash of everything before, little-endian
 *
 * Field names rather than symbol ids, so that a snapshot does not depend on how the
 * compiler numbers them; the digest ties it to the program's text. Derived counters
 * (open runs, partitions, held events, state bytes) are not written: the restore
 * recomputes them as it rebuilds the state. A value is a u8 type then: bool u8, int
 * signed, float 8 bytes (IEEE, little-endian), string bytes, array n values, map n
 * (key bytes, value). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "snapshot.h"

#define MAGIC "VPLS"
#define VERSION 1
#define NESTING_MAX 1000

/* ---- writing ------------------------------------------------------------------- */

void snap_put_u8(struct snap_w *w, uint8_t v)
{
    if (buf_putc(&w->b, (char)v) != 0) {
        w->oom = 1;
    }
}

void snap_put_uv(struct snap_w *w, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        tmp[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    if (buf_put(&w->b, tmp, n) != 0) {
        w->oom = 1;
    }
}

void snap_put_sv(struct snap_w *w, int64_t v)
{
    snap_put_uv(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void snap_put_bytes(struct snap_w *w, const void *p, size_t n)
{
    snap_put_uv(w, n);
    if (buf_put(&w->b, p, n) != 0) {
        w->oom = 1;
    }
}

static uint64_t ptr_hash(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static int table_grow(struct snap_w *w)
{
    uint32_t nslot = w->nslot ? w->nslot * 2 : 1024;
    uint32_t *slot = calloc(nslot, sizeof(*slot));
    const struct vpl_event **v = realloc(w->v, (size_t)nslot / 2 * sizeof(*v));
    if (slot == NULL || v == NULL) {
        free(slot);
        if (v != NULL) {
            w->v = v;
        }
        return -1;
    }
    w->v = v;
    w->cap = nslot / 2;
    for (uint32_t i = 0; i < w->n; i++) {
        uint32_t k = (uint32_t)ptr_hash(w->v[i]) & (nslot - 1);
        while (slot[k] != 0) {
            k = (k + 1) & (nslot - 1);
        }
        slot[k] = i + 1;
    }
    free(w->slot);
    w->slot = slot;
    w->nslot = nslot;
    return 0;
}

void snap_put_event(struct snap_w *w, const struct vpl_event *ev)
{
    if (w->n == w->cap && table_grow(w) != 0) {
        w->oom = 1;
        return;
    }
    uint32_t k = (uint32_t)ptr_hash(ev) & (w->nslot - 1);
    while (w->slot[k] != 0 && w->v[w->slot[k] - 1] != ev) {
        k = (k + 1) & (w->nslot - 1);
    }
    if (w->slot[k] == 0) {
        w->v[w->n++] = ev;
        w->slot[k] = w->n;
    }
    snap_put_uv(w, w->slot[k] - 1);
}

static void put_value(struct snap_w *w, const struct vval *v)
{
    snap_put_u8(w, v->t);
    switch (v->t) {
    case V_BOOL:
        snap_put_u8(w, v->u.i != 0);
        break;
    case V_INT:
        snap_put_sv(w, v->u.i);
        break;
    case V_FLOAT: {
        uint64_t bits;
        memcpy(&bits, &v->u.f, 8);
        uint8_t le[8];
        for (int i = 0; i < 8; i++) {
            le[i] = (uint8_t)(bits >> (8 * i));
        }
        if (buf_put(&w->b, le, 8) != 0) {
            w->oom = 1;
        }
        break;
    }
    case V_STR:
        snap_put_bytes(w, v->u.s, v->n);
        break;
    case V_ARR:
        snap_put_uv(w, v->n);
        for (uint32_t i = 0; i < v->n; i++) {
            put_value(w, &v->u.a[i]);
        }
        break;
    case V_MAP:
        snap_put_uv(w, v->n);
        for (uint32_t i = 0; i < v->n; i++) {
            snap_put_bytes(w, v->u.m[i].k, v->u.m[i].klen);
            put_value(w, &v->u.m[i].v);
        }
        break;
    default:
        break;
    }
}

/* The symbols the events use, numbered in order of first use. */
static void put_symbols_and_events(const struct vpl_engine *e, struct snap_w *w)
{
    const struct symtab *syms = &e->prog->syms;
    uint32_t *local = malloc((syms->n ? syms->n : 1) * sizeof(*local));
    uint32_t *order = malloc((syms->n ? syms->n : 1) * sizeof(*order));
    if (local == NULL || order == NULL) {
        free(local);
        free(order);
        w->oom = 1;
        return;
    }
    memset(local, 0xff, (syms->n ? syms->n : 1) * sizeof(*local));
    uint32_t nused = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        const uint32_t *keys = event_keys(w->v[i]);
        for (uint32_t f = 0; f < w->v[i]->nf; f++) {
            if (local[keys[f]] == UINT32_MAX) {
                local[keys[f]] = nused;
                order[nused++] = keys[f];
            }
        }
    }
    snap_put_uv(w, nused);
    for (uint32_t i = 0; i < nused; i++) {
        const char *name = sym_name(e->prog, order[i]);
        snap_put_bytes(w, name, strlen(name));
    }
    snap_put_uv(w, w->n);
    for (uint32_t i = 0; i < w->n; i++) {
        const struct vpl_event *ev = w->v[i];
        const uint32_t *keys = event_keys(ev);
        snap_put_sv(w, ev->time);
        snap_put_uv(w, ev->nf);
        for (uint32_t f = 0; f < ev->nf; f++) {
            snap_put_uv(w, local[keys[f]]);
            put_value(w, &ev->vals[f]);
        }
    }
    free(local);
    free(order);
}

static void put_hash(struct buf *b, int *oom)
{
    uint64_t h = hash_bytes(b->p, b->len);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) {
        le[i] = (uint8_t)(h >> (8 * i));
    }
    if (buf_put(b, le, 8) != 0) {
        *oom = 1;
    }
}

static void put_counters(struct snap_w *w, const struct vpl_stats *st)
{
    const uint64_t c[] = {st->events,           st->events_unrouted,    st->alerts,
                          st->runs_dropped,     st->partitions_dropped, st->window_dropped,
                          st->kleene_truncated, st->input_truncated};
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        snap_put_uv(w, c[i]);
    }
}

int vpl_engine_snapshot(struct vpl_engine *e, void **out, size_t *len, struct vpl_error *err)
{
    *out = NULL;
    *len = 0;
    const struct vpl_program *p = e->prog;
    /* The state goes first into its own buffer, which fills the event table; the
     * events and their symbols are written before it. */
    struct snap_w state = {0};
    snap_put_uv(&state, p->nstreams);
    for (uint32_t i = 0; i < p->nstreams; i++) {
        const struct stream *s = &p->streams[i];
        snap_put_u8(&state, s->pat ? 1 : s->win ? 2 : 0);
        if (s->pat) {
            seq_save(e, i, &state);
        } else if (s->win) {
            window_save(e, i, &state);
        }
    }
    for (uint32_t i = 0; p->ntimers > 0 && i < p->nstreams; i++) {
        if (p->streams[i].timer_period > 0) {
            snap_put_sv(&state, e->timer_next[i]);
        }
    }
    struct snap_w w = {.v = state.v, .n = state.n};
    if (buf_put(&w.b, MAGIC, 4) != 0) {
        w.oom = 1;
    }
    snap_put_u8(&w, VERSION);
    if (buf_put(&w.b, vpl_program_digest_bytes(p), 16) != 0) {
        w.oom = 1;
    }
    snap_put_uv(&w, e->slice);
    snap_put_uv(&w, e->nslices);
    put_counters(&w, &e->st);
    snap_put_uv(&w, e->seq);
    snap_put_uv(&w, p->ntypes);
    for (uint32_t t = 0; t < p->ntypes; t++) {
        snap_put_sv(&w, e->clock[t]);
    }
    put_symbols_and_events(e, &w);
    if (!state.oom && buf_put(&w.b, state.b.p, state.b.len) != 0) {
        w.oom = 1;
    }
    if (!w.oom && !state.oom) {
        put_hash(&w.b, &w.oom);
    }
    int oom = w.oom || state.oom;
    buf_free(&state.b);
    free(state.v);
    free(state.slot);
    if (oom) {
        buf_free(&w.b);
        return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
    }
    *out = w.b.p;
    *len = w.b.len;
    return 0;
}

/* ---- reading ------------------------------------------------------------------- */

int snap_fail(struct snap_r *r, const char *fmt, ...)
{
    if (!r->bad) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, sizeof(r->why), fmt, ap);
        va_end(ap);
    }
    r->bad = 1;
    return VPL_ESNAPSHOT;
}

uint8_t snap_get_u8(struct snap_r *r)
{
    if (r->bad || r->p >= r->end) {
        snap_fail(r, "truncated");
        return 0;
    }
    return *r->p++;
}

uint64_t snap_get_uv(struct snap_r *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t b = snap_get_u8(r);
        if (r->bad) {
            return 0;
        }
        if (shift == 63 && b > 1) {
            break;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            return v;
        }
    }
    snap_fail(r, "malformed number");
    return 0;
}

int64_t snap_get_sv(struct snap_r *r)
{
    uint64_t u = snap_get_uv(r);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

uint64_t snap_get_count(struct snap_r *r, uint64_t max, const char *what)
{
    uint64_t n = snap_get_uv(r);
    if (r->bad) {
        return 0;
    }
    if (n > max || n > (uint64_t)(r->end - r->p)) {
        snap_fail(r, "%s: count %llu out of range", what, (unsigned long long)n);
        return 0;
    }
    return n;
}

const char *snap_get_bytes(struct snap_r *r, uint32_t *len, uint32_t max)
{
    uint64_t n = snap_get_count(r, max, "string");
    *len = (uint32_t)n;
    if (r->bad) {
        return NULL;
    }
    const char *s = (const char *)r->p;
    r->p += n;
    return s;
}

struct vpl_event *snap_get_event(struct snap_r *r)
{
    uint64_t i = snap_get_uv(r);
    if (r->bad) {
        return NULL;
    }
    if (i >= r->nev) {
        snap_fail(r, "event %llu of %llu", (unsigned long long)i, (unsigned long long)r->nev);
        return NULL;
    }
    r->ev[i]->refs++;
    return r->ev[i];
}

/* A value into arena storage (freeze copies it into the event's block). */
static int get_value(struct snap_r *r, struct arena *a, struct vval *v)
{
    memset(v, 0, sizeof(*v));
    v->t = snap_get_u8(r);
    if (r->bad) {
        return -1;
    }
    switch (v->t) {
    case V_MISSING:
    case V_NULL:
        return 0;
    case V_BOOL: {
        uint8_t b = snap_get_u8(r);
        if (b > 1) {
            return snap_fail(r, "bool %u", b);
        }
        v->u.i = b;
        return r->bad ? -1 : 0;
    }
    case V_INT:
        v->u.i = snap_get_sv(r);
        return r->bad ? -1 : 0;
    case V_FLOAT: {
        if (r->end - r->p < 8) {
            return snap_fail(r, "truncated");
        }
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++) {
            bits |= (uint64_t)r->p[i] << (8 * i);
        }
        r->p += 8;
        memcpy(&v->u.f, &bits, 8);
        return 0;
    }
    case V_STR: {
        uint32_t n;
        const char *s = snap_get_bytes(r, &n, UINT32_MAX);
        v->u.s = s;
        v->n = n;
        return r->bad ? -1 : 0;
    }
    case V_ARR:
    case V_MAP: {
        if (++r->depth > r->max_depth) {
            return snap_fail(r, "values nested deeper than %u", r->max_depth);
        }
        uint64_t n = snap_get_count(r, UINT32_MAX, "container");
        if (r->bad) {
            return -1;
        }
        v->n = (uint32_t)n;
        if (v->t == V_ARR) {
            struct vval *items = n ? arena_alloc(a, n * sizeof(*items)) : NULL;
            if (n && items == NULL) {
                return VPL_ENOMEM;
            }
            for (uint64_t i = 0; i < n; i++) {
                if (get_value(r, a, &items[i]) != 0) {
                    return -1;
                }
            }
            v->u.a = items;
        } else {
            struct vkv *kv = n ? arena_alloc(a, n * sizeof(*kv)) : NULL;
            if (n && kv == NULL) {
                return VPL_ENOMEM;
            }
            for (uint64_t i = 0; i < n; i++) {
                kv[i].k = snap_get_bytes(r, &kv[i].klen, UINT32_MAX);
                if (r->bad || get_value(r, a, &kv[i].v) != 0) {
                    return -1;
                }
            }
            v->u.m = kv;
        }
        r->depth--;
        return 0;
    }
    default:
        return snap_fail(r, "value type %u", v->t);
    }
}

/* The symbol table and the events, frozen: r->ev[i] holds one reference each. */
static int get_events(struct vpl_engine *e, struct snap_r *r)
{
    const struct symtab *syms = &e->prog->syms;
    uint64_t nsym = snap_get_count(r, syms->n, "symbols");
    uint32_t *map = malloc((nsym ? nsym : 1) * sizeof(*map));
    if (map == NULL) {
        return VPL_ENOMEM;
    }
    for (uint64_t i = 0; i < nsym && !r->bad; i++) {
        uint32_t len;
        const char *name = snap_get_bytes(r, &len, 4096);
        const struct sym *s = r->bad ? NULL : symtab_find(syms, name, len);
        if (!r->bad && s == NULL) {
            snap_fail(r, "field '%.*s' is not the program's", (int)len, name);
        }
        if (s != NULL) {
            map[i] = s->id;
        }
    }
    r->nev = snap_get_count(r, UINT32_MAX, "events");
    r->ev = r->bad ? NULL : calloc(r->nev ? r->nev : 1, sizeof(*r->ev));
    int rc = r->bad ? VPL_ESNAPSHOT : r->ev == NULL ? VPL_ENOMEM : 0;
    for (uint64_t i = 0; rc == 0 && i < r->nev; i++) {
        int64_t time = snap_get_sv(r);
        uint64_t nf = snap_get_count(r, e->lim.max_fields, "fields");
        struct vpl_event *ev = r->bad ? NULL : event_new(&e->scratch, (uint32_t)nf);
        if (ev == NULL) {
            rc = r->bad ? VPL_ESNAPSHOT : VPL_ENOMEM;
            break;
        }
        uint32_t *keys = event_keys_room(ev, (uint32_t)nf);
        for (uint64_t f = 0; f < nf && rc == 0; f++) {
            uint64_t k = snap_get_uv(r);
            if (!r->bad && k >= nsym) {
                snap_fail(r, "field symbol %llu of %llu", (unsigned long long)k, (unsigned long long)nsym);
            }
            if (r->bad) {
                rc = VPL_ESNAPSHOT;
            } else {
                keys[f] = map[k];
                r->depth = 0;
                rc = get_value(r, &e->scratch, &ev->vals[f]);
                rc = rc == VPL_ENOMEM ? rc : r->bad ? VPL_ESNAPSHOT : 0;
            }
        }
        if (rc != 0) {
            break;
        }
        event_seal(ev, (uint32_t)nf, (uint32_t)nf);
        ev->time = time;
        struct vpl_event *f = event_freeze(ev, NULL);
        if (f == NULL) {
            rc = VPL_ENOMEM;
            break;
        }
        e->st.state_bytes += f->size;
        r->ev[i] = f;
        arena_reset(&e->scratch);
    }
    arena_reset(&e->scratch);
    free(map);
    return rc;
}

static int check_hash(const uint8_t *data, size_t len)
{
    if (len < 8) {
        return 0;
    }
    uint64_t want = 0;
    for (int i = 0; i < 8; i++) {
        want |= (uint64_t)data[len - 8 + i] << (8 * i);
    }
    return hash_bytes(data, len - 8) == want;
}

/* Frees all state: the engine is as vpl_engine_create left it. */
static void wipe(struct vpl_engine *e)
{
    const struct vpl_program *p = e->prog;
    for (uint32_t i = 0; i < p->nstreams; i++) {
        if (p->streams[i].pat) {
            seq_destroy(e, i);
        } else if (p->streams[i].win) {
            window_destroy(e, i);
        }
        memset(&e->ss[i], 0, sizeof(e->ss[i]));
        if (p->streams[i].pat) {
            seq_init(e, i);
        }
    }
    for (uint32_t t = 0; t < p->ntypes; t++) {
        e->clock[t] = INT64_MIN;
    }
    for (uint32_t i = 0; i < p->nstreams; i++) {
        e->timer_next[i] = INT64_MIN;
    }
    e->seq = 0;
    memset(&e->st, 0, sizeof(e->st));
}

static int restore(struct vpl_engine *e, struct snap_r *r)
{
    const struct vpl_program *p = e->prog;
    const uint8_t *start = r->p;
    size_t len = (size_t)(r->end - r->p);
    if (len < 4 + 1 + 16 + 8 || memcmp(start, MAGIC, 4) != 0) {
        return snap_fail(r, "not an engine snapshot");
    }
    if (start[4] != VERSION) {
        return snap_fail(r, "format version %u (this engine reads %u)", start[4], VERSION);
    }
    if (memcmp(start + 5, vpl_program_digest_bytes(p), 16) != 0) {
        return snap_fail(r, "taken with another program (digest differs)");
    }
    if (!check_hash(start, len)) {
        return snap_fail(r, "checksum mismatch (corrupted)");
    }
    r->p = start + 21;
    r->end -= 8;
    uint64_t slice = snap_get_uv(r), nslices = snap_get_uv(r);
    if (!r->bad && (slice != e->slice || nslices != (e->nslices ? e->nslices : 1))) {
        return snap_fail(r, "slice %llu of %llu, this engine is slice %u of %u", (unsigned long long)slice,
                         (unsigned long long)nslices, e->slice, e->nslices ? e->nslices : 1);
    }
    uint64_t c[8];
    for (size_t i = 0; i < 8; i++) {
        c[i] = snap_get_uv(r);
    }
    e->st = (struct vpl_stats){.events = c[0],
                               .events_unrouted = c[1],
                               .alerts = c[2],
                               .runs_dropped = c[3],
                               .partitions_dropped = c[4],
                               .window_dropped = c[5],
                               .kleene_truncated = c[6],
                               .input_truncated = c[7]};
    e->seq = snap_get_uv(r);
    if (snap_get_uv(r) != p->ntypes && !r->bad) {
        return snap_fail(r, "type count differs");
    }
    for (uint32_t t = 0; t < p->ntypes; t++) {
        e->clock[t] = snap_get_sv(r);
    }
    if (r->bad) {
        return VPL_ESNAPSHOT;
    }
    int rc = get_events(e, r);
    if (rc != 0) {
        return rc;
    }
    if (snap_get_uv(r) != p->nstreams && !r->bad) {
        return snap_fail(r, "stream count differs");
    }
    for (uint32_t i = 0; i < p->nstreams && !r->bad; i++) {
        const struct stream *s = &p->streams[i];
        uint8_t kind = snap_get_u8(r);
        if (!r->bad && kind != (s->pat ? 1 : s->win ? 2 : 0)) {
            return snap_fail(r, "stream %s: state of another kind", s->name);
        }
        rc = s->pat ? seq_load(e, i, r) : s->win ? window_load(e, i, r) : 0;
        if (rc == VPL_ENOMEM) {
            return rc;
        }
    }
    for (uint32_t i = 0; i < p->nstreams && !r->bad; i++) {
        if (p->streams[i].timer_period > 0) {
            e->timer_next[i] = snap_get_sv(r);
        }
    }
    if (!r->bad && r->p != r->end) {
        snap_fail(r, "%zu bytes after the state", (size_t)(r->end - r->p));
    }
    return r->bad ? VPL_ESNAPSHOT : 0;
}

int vpl_engine_restore(struct vpl_engine *e, const void *data, size_t len, struct vpl_error *err)
{
    if (e->st.partitions != 0 || e->st.open_runs != 0 || e->st.window_events != 0 || e->st.events != 0) {
        return vpl_err_at(err, VPL_EINVAL, 0, 0, "restore needs a new engine");
    }
    struct snap_r r = {.p = data, .end = (const uint8_t *)data + len, .max_depth = NESTING_MAX};
    int rc = data == NULL ? snap_fail(&r, "no data") : restore(e, &r);
    /* The table's own references: events no run or window took are freed here. */
    for (uint64_t i = 0; i < r.nev; i++) {
        if (r.ev != NULL && r.ev[i] != NULL) {
            rt_drop(e, r.ev[i]);
        }
    }
    free(r.ev);
    if (rc != 0) {
        wipe(e);
        if (rc == VPL_ENOMEM) {
            return vpl_err_at(err, VPL_ENOMEM, 0, 0, "out of memory");
        }
        return vpl_err_at(err, VPL_ESNAPSHOT, 0, 0, "snapshot refused: %s", r.why);
    }
    return 0;
}
