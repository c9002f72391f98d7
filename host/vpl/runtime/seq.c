/* Sequences (docs/VPL.md: "Sequences", "Cancellation and absence", "Kleene closures"):
 * SASE+ runs kept per partition.
 *
 * A partition holds one list of runs per step they wait for, so an event visits only
 * the runs whose next step (or Kleene closure, NOT constraint, absence) names its
 * type. Lists are walked from the last step down: a run that advances lands in a
 * list already walked this pass and is not offered the same event twice. Deadlines
 * live in one heap per stream; the clock pops what is due instead of sweeping. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "snapshot.h"

/* 48 bytes and a capture slot per step. */
struct run {
    struct heap_item hi; /* due: deadline; seq: creation order; aux: RUN_LINKED | step, the
                            list it is in (the next step it waits for, or nsteps) */
    struct spart *part;
    struct run *prev;    /* the head's prev is the list's tail */
    struct run *next;    /* NULL at the tail */
    union capture cap[]; /* one slot per positive step */
};

#define RUN_LINKED 0x80000000u /* in part->heads[step - 1] */

static inline uint32_t run_step(const struct run *r)
{
    return r->hi.aux & ~RUN_LINKED;
}

static inline int run_linked(const struct run *r)
{
    return (r->hi.aux & RUN_LINKED) != 0;
}

/* 8 bytes, a list head per step and the key's bytes: with one run per partition (one
 * per host, say) the partition costs about as much as the run, so it holds only what
 * cannot be derived. Its size follows from the pattern and the key's length. */
struct spart {
    struct pkey key; /* first: the partition table reads its length */
    uint32_t nruns;
    struct run *heads[]; /* runs waiting for step 1 .. nsteps (heads[k - 1]), in the
                            order they arrived; the key's bytes follow (no NUL) */
};

#define NO_DEADLINE INT64_MAX

static size_t run_size(const struct pattern *pat)
{
    return sizeof(struct run) + pat->nsteps * sizeof(union capture);
}

static size_t part_key_off(const struct pattern *pat)
{
    return sizeof(struct spart) + pat->nsteps * sizeof(struct run *);
}

static size_t part_size(const struct pattern *pat, const struct spart *p)
{
    return part_key_off(pat) + p->key.klen;
}

static size_t closure_size(uint32_t cap)
{
    return sizeof(struct closure) + cap * sizeof(struct vpl_event *);
}

/* Appends r to the list of runs waiting for `step`. */
static void link_run(struct spart *p, struct run *r, uint32_t step)
{
    struct run **head = &p->heads[step - 1];
    r->hi.aux = RUN_LINKED | step;
    r->next = NULL;
    if (*head == NULL) {
        r->prev = r;
        *head = r;
    } else {
        struct run *tail = (*head)->prev;
        tail->next = r;
        r->prev = tail;
        (*head)->prev = r;
    }
}

static void unlink_run(struct run *r)
{
    if (!run_linked(r)) {
        return;
    }
    struct run **head = &r->part->heads[run_step(r) - 1];
    if (r == *head) {
        *head = r->next;
    } else {
        r->prev->next = r->next;
    }
    if (r->next != NULL) {
        r->next->prev = r->prev; /* the new head inherits the tail when r was the head */
    } else if (*head != NULL) {
        (*head)->prev = r->prev; /* r was the tail */
    }
    r->hi.aux &= ~RUN_LINKED;
}

static void part_free(struct vpl_engine *e, uint32_t si, struct spart *p)
{
    struct sstate *ss = &e->ss[si];
    if (ss->single != p) {
        ptab_del(&ss->runs, &p->key);
    } else {
        ss->single = NULL;
    }
    ss->nparts--;
    e->st.partitions--;
    rt_free(e, p, part_size(e->prog->streams[si].pat, p));
}

/* Drops what a run holds and frees it. A capture that is a transient event (refs 0:
 * the last step's, borrowed by a run that completes, see offer) is the input's. */
static void run_release(struct vpl_engine *e, const struct pattern *pat, struct run *r)
{
    for (uint32_t k = 0; k < pat->nsteps; k++) {
        if (!pat->steps[k].kleene) {
            if (r->cap[k].ev != NULL && r->cap[k].ev->refs > 0) {
                rt_drop(e, r->cap[k].ev);
            }
        } else if (r->cap[k].clo != NULL) {
            for (uint32_t i = 0; i < r->cap[k].clo->n; i++) {
                rt_drop(e, r->cap[k].clo->ev[i]);
            }
            rt_free(e, r->cap[k].clo, closure_size(r->cap[k].clo->cap));
        }
    }
    rt_free(e, r, run_size(pat));
    e->st.open_runs--;
}

static void run_free(struct vpl_engine *e, uint32_t si, struct run *r)
{
    struct sstate *ss = &e->ss[si];
    unlink_run(r);
    if (r->hi.idx != HEAP_NONE) {
        heap_remove(&ss->due, &r->hi);
    }
    struct spart *p = r->part;
    run_release(e, e->prog->streams[si].pat, r);
    if (--p->nruns == 0 && ss->pinned != p) {
        part_free(e, si, p);
    }
}

/* A new partition with key[0..klen) (hash h), in the table; NULL on OOM. */
static struct spart *part_new(struct vpl_engine *e, uint32_t si, const char *key, size_t klen, uint64_t h)
{
    const struct pattern *pat = e->prog->streams[si].pat;
    struct sstate *ss = &e->ss[si];
    size_t key_off = part_key_off(pat);
    size_t size = key_off + klen;
    struct spart *p = rt_alloc(e, size);
    if (p == NULL) {
        return NULL;
    }
    memset(p, 0, key_off);
    if (klen) {
        memcpy((char *)p + key_off, key, klen);
    }
    p->key.klen = (uint32_t)klen;
    if (pat->partition == SYM_NONE) {
        ss->single = p;
    } else if (ptab_put(&ss->runs, &p->key, h) != 0) {
        rt_free(e, p, size);
        e->oom = 1;
        return NULL;
    }
    ss->nparts++;
    e->st.partitions++;
    return p;
}

/* The partition of ev, created when `create`; NULL when absent or over the limit. */
static struct spart *part_get(struct vpl_engine *e, uint32_t si, const struct vpl_event *ev, int create)
{
    const struct pattern *pat = e->prog->streams[si].pat;
    struct sstate *ss = &e->ss[si];
    uint64_t h = 0;
    if (pat->partition == SYM_NONE) {
        if (ss->single != NULL || !create) {
            return ss->single;
        }
        e->key.len = 0;
    } else {
        rt_partition_key(e, ev, pat->partition, &h);
        struct pkey *k = ptab_get(&ss->runs, h, e->key.p, e->key.len);
        if (k != NULL || !create) {
            return (struct spart *)k;
        }
    }
    if (!rt_owns(e, h, pat->partition != SYM_NONE)) {
        return NULL; /* another slice's: its engine keeps it */
    }
    if (ss->nparts >= e->lim.max_partitions) {
        e->st.partitions_dropped++;
        return NULL;
    }
    return part_new(e, si, e->key.p, e->key.len, h);
}

static void run_ctx(struct vpl_engine *e, struct ectx *c, const struct pattern *pat, const struct run *r,
                    const struct vpl_event *ev)
{
    rt_ectx(e, c, ev, ev->time);
    c->caps = r ? r->cap : NULL;
    c->pat = pat;
}

static int pred_ok(const struct expr *pred, const struct ectx *c)
{
    return pred == NULL || eval_true(pred, c);
}

/* Adds ev to the closure of Kleene slot k. */
static int grow(struct vpl_engine *e, const struct pattern *pat, struct run *r, uint32_t k, struct vpl_event *ev)
{
    struct closure *clo = r->cap[k].clo;
    if (clo != NULL && clo->n >= KLEENE_MAX) {
        e->st.kleene_truncated++;
        return 0;
    }
    if (clo == NULL || clo->n == clo->cap) {
        uint16_t old = clo ? clo->cap : 0;
        uint16_t cap = old ? (uint16_t)(old * 2 > KLEENE_MAX ? KLEENE_MAX : old * 2) : 2;
        clo = rt_realloc(e, clo, clo ? closure_size(old) : 0, closure_size(cap));
        if (clo == NULL) {
            return -1;
        }
        if (old == 0) {
            clo->n = 0;
        }
        clo->cap = cap;
        r->cap[k].clo = clo;
    }
    struct vpl_event *held = rt_hold(e, ev, pat->steps[k].keep);
    if (held == NULL) {
        return -1;
    }
    clo->ev[clo->n++] = held;
    return 0;
}

static int is_type_of(const struct neg *n, uint32_t count, uint32_t type)
{
    for (uint32_t i = 0; i < count; i++) {
        if (n[i].type == type) {
            return 1;
        }
    }
    return 0;
}

static int neg_hit(const struct neg *n, uint32_t count, uint32_t type, const struct ectx *c)
{
    for (uint32_t i = 0; i < count; i++) {
        if (n[i].type == type && pred_ok(n[i].pred, c)) {
            return 1;
        }
    }
    return 0;
}

static int reads_type(const struct pattern *pat, uint32_t type)
{
    for (uint32_t i = 0; i < pat->ntypes; i++) {
        if (pat->types[i] == type) {
            return 1;
        }
    }
    return 0;
}

/* Whether runs waiting in list k can react to an event of `type`. */
static int relevant(const struct pattern *pat, uint32_t k, uint32_t type)
{
    if (pat->strict) {
        return reads_type(pat, type);
    }
    if (k < pat->nsteps &&
        (pat->steps[k].type == type || is_type_of(pat->steps[k].negs, pat->steps[k].nnegs, type))) {
        return 1;
    }
    if (pat->steps[k - 1].kleene && pat->steps[k - 1].type == type) {
        return 1;
    }
    return k == pat->nsteps && is_type_of(pat->absent, pat->nabsent, type);
}

/* A run matched its last step: queue its match(es) and take it out of its list. */
static void complete(struct vpl_engine *e, uint32_t si, const struct pattern *pat, struct run *r,
                     const struct vpl_event *ev)
{
    unlink_run(r);
    if (pat->each_slot >= 0) {
        /* .each(): one match per closure event, the closure as it stood then. */
        uint32_t n = r->cap[pat->each_slot].clo->n;
        for (uint32_t v = 1; v <= n; v++) {
            rt_pend(e, r, ev, pat->each_slot, v, v == n);
        }
    } else if (rt_pend(e, r, ev, -1, 0, 1) != 0) {
        run_free(e, si, r); /* out of memory: it may borrow the input's event, so not kept */
    }
}

/* Offers ev to run r waiting in list k. Returns 1 when the run took the event. */
static int offer(struct vpl_engine *e, uint32_t si, struct run *r, uint32_t k, struct vpl_event *ev,
                 uint32_t type)
{
    const struct pattern *pat = e->prog->streams[si].pat;
    if (ev->time > r->hi.due) {
        return 0; /* past the deadline (inclusive): it will expire */
    }
    struct ectx c;
    run_ctx(e, &c, pat, r, ev);
    if (k == pat->nsteps) {
        if (pat->nabsent > 0) {
            if (neg_hit(pat->absent, pat->nabsent, type, &c)) {
                run_free(e, si, r); /* what had to stay absent arrived */
            }
            return 0;
        }
        /* A closure that ends the pattern grows until an event of its type breaks it. */
        const struct pstep *ks = &pat->steps[k - 1];
        if (ks->type == type && pred_ok(ks->pred, &c)) {
            if (grow(e, pat, r, k - 1, ev) != 0) {
                return 0;
            }
            if (!pat->longest) {
                rt_pend(e, r, ev, (int32_t)k - 1, r->cap[k - 1].clo->n, 0);
            }
            return 1;
        }
        if (ks->type == type && pat->longest) {
            unlink_run(r);
            rt_pend(e, r, ev, -1, 0, 1);
        } else if (pat->strict && reads_type(pat, type)) {
            run_free(e, si, r);
        }
        return 0;
    }
    const struct pstep *st = &pat->steps[k];
    if (neg_hit(st->negs, st->nnegs, type, &c)) {
        run_free(e, si, r);
        return 0;
    }
    if (st->type == type && pred_ok(st->pred, &c)) {
        if (st->kleene) {
            if (grow(e, pat, r, k, ev) != 0) {
                return 0;
            }
            unlink_run(r);
            link_run(r->part, r, k + 1);
            if (k + 1 == pat->nsteps && !pat->longest) {
                rt_pend(e, r, ev, (int32_t)k, 1, 0);
            }
            return 1;
        }
        int last = k + 1 == pat->nsteps && pat->nabsent == 0;
        if (last && pat->each_slot < 0 && ev->refs == 0) {
            /* The run completes now and is freed when this input's matches are emitted
             * (flush, before the input ends): the event needs no frozen copy. */
            r->cap[k].ev = ev;
        } else if ((r->cap[k].ev = rt_hold(e, ev, st->keep)) == NULL) {
            return 0;
        }
        unlink_run(r);
        if (!last) {
            link_run(r->part, r, k + 1);
        } else {
            complete(e, si, pat, r, ev);
        }
        return 1;
    }
    if (k >= 1 && pat->steps[k - 1].kleene && pat->steps[k - 1].type == type &&
        pred_ok(pat->steps[k - 1].pred, &c)) {
        return grow(e, pat, r, k - 1, ev) == 0;
    }
    if (pat->strict && reads_type(pat, type)) {
        run_free(e, si, r);
    }
    return 0;
}

static void open_run(struct vpl_engine *e, uint32_t si, struct spart *p, struct vpl_event *ev)
{
    const struct pattern *pat = e->prog->streams[si].pat;
    if (p->nruns >= e->lim.max_runs_per_partition) {
        e->st.runs_dropped++;
        return;
    }
    struct run *r = rt_alloc(e, run_size(pat));
    if (r == NULL) {
        return;
    }
    memset(r, 0, run_size(pat));
    if ((r->cap[0].ev = rt_hold(e, ev, pat->steps[0].keep)) == NULL) {
        rt_free(e, r, run_size(pat));
        return;
    }
    r->part = p;
    r->hi.seq = ++e->seq;
    r->hi.idx = HEAP_NONE;
    r->hi.due = NO_DEADLINE;
    if (pat->within >= 0) {
        r->hi.due = ev->time > NO_DEADLINE - pat->within ? NO_DEADLINE - 1 : ev->time + pat->within;
    }
    p->nruns++;
    e->st.open_runs++;
    link_run(p, r, 1);
    if (pat->within >= 0 && heap_push(&e->ss[si].due, &r->hi) != 0) {
        e->oom = 1;
        run_free(e, si, r);
    }
}

static int cmp_pend(const void *a, const void *b)
{
    const struct pend *x = a, *y = b;
    if (x->run->hi.seq != y->run->hi.seq) {
        return x->run->hi.seq < y->run->hi.seq ? -1 : 1;
    }
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Emits the matches queued since `base` in run creation order, then frees the runs
 * that completed. */
static void flush(struct vpl_engine *e, uint32_t si, uint32_t base, int64_t now)
{
    const struct stream *s = &e->prog->streams[si];
    uint32_t n = e->npend - base;
    if (n == 0) {
        return;
    }
    if (n > 1) {
        qsort(e->pend + base, n, sizeof(*e->pend), cmp_pend);
    }
    for (uint32_t i = base; i < e->npend; i++) {
        struct pend *p = &e->pend[i];
        struct ectx c;
        run_ctx(e, &c, s->pat, p->run, p->ev);
        c.time = now;
        c.view_slot = p->slot;
        c.view_n = p->view;
        if (!e->oom) {
            rt_finish(e, si, s->post, s->npost, &c, 1);
        }
    }
    for (uint32_t i = base; i < e->npend; i++) {
        if (e->pend[i].done) {
            run_free(e, si, e->pend[i].run);
        }
    }
    e->npend = base;
}

void seq_input(struct vpl_engine *e, uint32_t si, uint32_t type, struct vpl_event *ev)
{
    const struct pattern *pat = e->prog->streams[si].pat;
    struct sstate *ss = &e->ss[si];
    uint32_t base = e->npend;
    int taken = 0;
    struct spart *p = part_get(e, si, ev, 0);
    if (p != NULL) {
        ss->pinned = p;
        if (is_type_of(pat->cancel, pat->ncancel, type)) {
            /* .not(X): an X cancels every open run of its partition. */
            for (uint32_t k = 1; k <= pat->nsteps; k++) {
                for (struct run *r = p->heads[k - 1], *next; r != NULL; r = next) {
                    next = r->next;
                    struct ectx c;
                    run_ctx(e, &c, pat, r, ev);
                    if (neg_hit(pat->cancel, pat->ncancel, type, &c)) {
                        run_free(e, si, r);
                    }
                }
            }
        }
        for (uint32_t k = pat->nsteps; k >= 1; k--) {
            if (!relevant(pat, k, type)) {
                continue;
            }
            for (struct run *r = p->heads[k - 1], *next; r != NULL; r = next) {
                next = r->next;
                taken |= offer(e, si, r, k, ev, type);
            }
        }
    }
    if (pat->steps[0].type == type && !(pat->stnm && taken)) {
        struct ectx c;
        run_ctx(e, &c, pat, NULL, ev);
        int ok = pred_ok(pat->steps[0].pred, &c);
        for (uint32_t i = 0; ok && i < pat->nfirst_where; i++) {
            ok = eval_true(pat->first_where[i], &c);
        }
        if (ok && (p != NULL || (p = part_get(e, si, ev, 1)) != NULL)) {
            ss->pinned = p;
            open_run(e, si, p, ev);
        }
    }
    flush(e, si, base, ev->time);
    ss->pinned = NULL;
    if (p != NULL && p->nruns == 0) {
        part_free(e, si, p);
    }
}

void seq_clock(struct vpl_engine *e, uint32_t si, int64_t clock, int64_t now)
{
    const struct pattern *pat = e->prog->streams[si].pat;
    struct sstate *ss = &e->ss[si];
    uint32_t base = e->npend;
    struct heap_item *top;
    while ((top = heap_top(&ss->due)) != NULL && top->due < clock) {
        struct run *r = (struct run *)top;
        heap_remove(&ss->due, top);
        if (pat->nabsent > 0 && run_step(r) == pat->nsteps && run_linked(r)) {
            /* The absence is confirmed. Any other run that expires is only dropped
             * (docs/VPL.md, "Kleene closures"): a final .longest() closure emits at its
             * break, never on the clock. An absence follows a plain step, so the last
             * capture is the event the match is built from. */
            unlink_run(r);
            rt_pend(e, r, r->cap[pat->nsteps - 1].ev, -1, 0, 1);
        } else {
            run_free(e, si, r);
        }
    }
    flush(e, si, base, now);
}

void seq_init(struct vpl_engine *e, uint32_t si)
{
    ptab_init(&e->ss[si].runs, part_key_off(e->prog->streams[si].pat));
}

void seq_destroy(struct vpl_engine *e, uint32_t si)
{
    struct sstate *ss = &e->ss[si];
    const struct pattern *pat = e->prog->streams[si].pat;
    size_t n = ss->runs.cap;
    for (size_t i = 0; i <= n; i++) {
        struct spart *p = i < n ? (struct spart *)ss->runs.slot[i] : ss->single;
        if (p == NULL) {
            continue;
        }
        for (uint32_t k = 1; k <= pat->nsteps; k++) {
            for (struct run *r = p->heads[k - 1], *next; r != NULL; r = next) {
                next = r->next;
                run_release(e, pat, r);
            }
        }
        e->st.partitions--;
        rt_free(e, p, part_size(pat, p));
    }
    ptab_free(&ss->runs);
    heap_free(&ss->due);
}

/* Snapshots (snapshot.c): each partition's key, then for each step the runs waiting
 * for it, in list order: deadline, creation order, and the captures of the steps
 * before (an event, or a closure's events). Every run between inputs is in its list,
 * and in the deadline heap when the pattern has a .within(). */
void seq_save(struct vpl_engine *e, uint32_t si, struct snap_w *w)
{
    const struct pattern *pat = e->prog->streams[si].pat;
    struct sstate *ss = &e->ss[si];
    snap_put_uv(w, ss->nparts);
    size_t n = ss->runs.cap;
    for (size_t i = 0; i <= n; i++) {
        struct spart *p = i < n ? (struct spart *)ss->runs.slot[i] : ss->single;
        if (p == NULL) {
            continue;
        }
        snap_put_bytes(w, (const char *)p + part_key_off(pat), p->key.klen);
        for (uint32_t k = 1; k <= pat->nsteps; k++) {
            uint32_t count = 0;
            for (struct run *r = p->heads[k - 1]; r != NULL; r = r->next) {
                count++;
            }
            snap_put_uv(w, count);
            for (struct run *r = p->heads[k - 1]; r != NULL; r = r->next) {
                snap_put_sv(w, r->hi.due);
                snap_put_uv(w, r->hi.seq);
                for (uint32_t c = 0; c < k; c++) {
                    if (!pat->steps[c].kleene) {
                        snap_put_event(w, r->cap[c].ev);
                        continue;
                    }
                    snap_put_uv(w, r->cap[c].clo->n);
                    for (uint32_t j = 0; j < r->cap[c].clo->n; j++) {
                        snap_put_event(w, r->cap[c].clo->ev[j]);
                    }
                }
            }
        }
    }
}

/* A run from a snapshot, linked in its list before its captures are read, so that a
 * failure part way leaves nothing the engine's own teardown would not free. */
static int load_run(struct vpl_engine *e, uint32_t si, struct spart *p, uint32_t k, struct snap_r *r)
{
    const struct pattern *pat = e->prog->streams[si].pat;
    int64_t due = snap_get_sv(r);
    uint64_t seq = snap_get_uv(r);
    if (r->bad) {
        return VPL_ESNAPSHOT;
    }
    struct run *run = rt_alloc(e, run_size(pat));
    if (run == NULL) {
        return VPL_ENOMEM;
    }
    memset(run, 0, run_size(pat));
    run->part = p;
    run->hi.idx = HEAP_NONE;
    run->hi.due = due;
    run->hi.seq = seq;
    p->nruns++;
    e->st.open_runs++;
    link_run(p, run, k);
    for (uint32_t c = 0; c < k && !r->bad; c++) {
        if (!pat->steps[c].kleene) {
            run->cap[c].ev = snap_get_event(r);
            continue;
        }
        uint64_t n = snap_get_count(r, KLEENE_MAX, "closure");
        if (n == 0 && !r->bad) {
            snap_fail(r, "stream %s: empty closure", e->prog->streams[si].name);
        }
        if (r->bad) {
            break;
        }
        struct closure *clo = rt_alloc(e, closure_size((uint32_t)n));
        if (clo == NULL) {
            return VPL_ENOMEM;
        }
        clo->n = 0;
        clo->cap = (uint16_t)n;
        run->cap[c].clo = clo;
        for (uint64_t j = 0; j < n && !r->bad; j++) {
            if ((clo->ev[clo->n] = snap_get_event(r)) != NULL) {
                clo->n++;
            }
        }
    }
    if (r->bad) {
        return VPL_ESNAPSHOT;
    }
    if (pat->within >= 0 && heap_push(&e->ss[si].due, &run->hi) != 0) {
        return VPL_ENOMEM;
    }
    return 0;
}

int seq_load(struct vpl_engine *e, uint32_t si, struct snap_r *r)
{
    const struct stream *s = &e->prog->streams[si];
    const struct pattern *pat = s->pat;
    struct sstate *ss = &e->ss[si];
    int partitioned = pat->partition != SYM_NONE;
    uint64_t nparts = snap_get_count(r, partitioned ? e->lim.max_partitions : 1, "partitions");
    for (uint64_t i = 0; i < nparts && !r->bad; i++) {
        uint32_t klen;
        uint64_t h;
        const char *key = rt_snap_part_key(r, e, s->name, partitioned, "stream", &klen, &h);
        if (key == NULL) {
            break;
        }
        if (partitioned && ptab_get(&ss->runs, h, key, klen) != NULL) {
            return snap_fail(r, "stream %s: partition '%.*s' twice", s->name, (int)klen, key);
        }
        struct spart *p = part_new(e, si, key, klen, h);
        if (p == NULL) {
            return VPL_ENOMEM;
        }
        uint64_t total = 0;
        for (uint32_t k = 1; k <= pat->nsteps && !r->bad; k++) {
            uint64_t n = snap_get_count(r, e->lim.max_runs_per_partition - total, "runs");
            total += n;
            for (uint64_t j = 0; j < n && !r->bad; j++) {
                int rc = load_run(e, si, p, k, r);
                if (rc == VPL_ENOMEM) {
                    return rc;
                }
            }
        }
        if (total == 0 && !r->bad) {
            snap_fail(r, "stream %s: a partition without runs", s->name);
        }
    }
    return r->bad ? VPL_ESNAPSHOT : 0;
}
