#include "topology.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bus/bus.h"
#include "../common/json_out.h"
#include "../common/tally.h"
#include "consumer.h"
#include "detect.h"
#include "edge.h"
#include "handlers.h"
#include "units.h"

#define RATE_MIN_MS 2000 /* a rate spans at least this much time */
#define ERRORS_SPAN_MS 60000
#define SPARK_STEP 3 /* ring samples per sparkline point: 60 points of 15 s */

/* The cumulative counters of a node at one moment. */
struct sample {
    int64_t t; /* CLOCK_MONOTONIC ms */
    uint64_t in, out, failed, dead;
    int64_t backlog; /* -1: unknown */
};

struct subj {
    char subject[GUST_TALLY_SUBJECT];
    uint64_t count; /* at the last sample */
    double rate;    /* over the last interval */
};

struct node {
    char id[232]; /* "<kind>:<name>" */
    int64_t seen_ms;
    struct sample ring[GUST_TOPO_RING];
    size_t n, head;    /* samples held; where the next goes */
    struct subj *subj; /* a producer's subjects, allocated at its first */
    size_t nsubj;
};

struct gust_topology {
    struct node **v;
    size_t n;
};

/* What a node is now: read from the registry (under its lock) or from the front's. */
struct view {
    char id[232];
    const char *kind, *name, *state;
    struct sample now;
    struct gust_consumer *c;  /* a unit, else NULL */
    struct gust_tally *tally; /* a producer's subjects, else NULL */
    const char *only;         /* a webhook's one subject */
};

struct gust_topology *gust_topology_create(void)
{
    return calloc(1, sizeof(struct gust_topology));
}

void gust_topology_destroy(struct gust_topology *t)
{
    if (t == NULL) {
        return;
    }
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i]->subj);
        free(t->v[i]);
    }
    free(t->v);
    free(t);
}

static struct node *node_find(struct gust_topology *t, const char *id)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->v[i]->id, id) == 0) {
            return t->v[i];
        }
    }
    return NULL;
}

static struct node *node_add(struct gust_topology *t, const char *id)
{
    struct node **v = realloc(t->v, (t->n + 1) * sizeof(*v));
    if (v == NULL) {
        return NULL;
    }
    t->v = v;
    struct node *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        return NULL;
    }
    snprintf(n->id, sizeof(n->id), "%s", id);
    v[t->n++] = n;
    return n;
}

/* The k-th newest sample (0: the newest); k < n->n. */
static const struct sample *ring_at(const struct node *n, size_t k)
{
    return &n->ring[(n->head + GUST_TOPO_RING - 1 - k) % GUST_TOPO_RING];
}

/* A counter's growth from a to b; a unit started again (a reload) counts from zero. */
static uint64_t grown(uint64_t a, uint64_t b)
{
    return b >= a ? b - a : b;
}

static uint64_t tally_total(struct gust_tally *tally, const char *only);

struct total {
    const char *only;
    uint64_t sum;
};

static void add_count(void *ud, const char *subject, uint64_t count)
{
    struct total *s = ud;
    if (s->only == NULL || strcmp(s->only, subject) == 0) {
        s->sum += count;
    }
}

static uint64_t tally_total(struct gust_tally *tally, const char *only)
{
    struct total s = {.only = only};
    uint64_t others = gust_tally_each(tally, add_count, &s);
    return s.sum + (only == NULL ? others : 0);
}

/* A unit's view: "in" is what it took (handled or failed, each attempt), "out" what it
 * published, or for a sink what it delivered. */
static void unit_view(struct gust_units *u, struct gust_consumer *c, struct view *v)
{
    memset(v, 0, sizeof(*v));
    v->c = c;
    v->kind = gust_consumer_kind(c);
    v->name = gust_consumer_name(c);
    v->state = gust_consumer_stuck_ms(c) > 0 ? "stuck" : gust_consumer_state(c);
    snprintf(v->id, sizeof(v->id), "%s:%s", v->kind, v->name);
    const struct gust_unit_stats *st = gust_consumer_stats(c);
    uint64_t ok = atomic_load((atomic_uint_fast64_t *)&st->events_ok);
    v->now.failed = atomic_load((atomic_uint_fast64_t *)&st->events_failed);
    v->now.dead = atomic_load((atomic_uint_fast64_t *)&st->dead_letters);
    v->now.in = ok + v->now.failed;
    v->now.out = strcmp(v->kind, "sink") == 0 ? ok : atomic_load((atomic_uint_fast64_t *)&st->emits);
    v->now.backlog = -1;
    if (u->bus != NULL && gust_consumer_durable(c)) {
        char durable[160];
        snprintf(durable, sizeof(durable), "%s_%s", v->kind, v->name);
        v->now.backlog = gust_bus_backlog(u->bus, durable);
    }
    v->tally = gust_consumer_emitted(c);
}

static void source_view(struct gust_units_source *s, struct view *v)
{
    memset(v, 0, sizeof(*v));
    v->kind = "source";
    v->name = s->name;
    v->state = "running"; /* listed while it runs here */
    snprintf(v->id, sizeof(v->id), "source:%s", s->name);
    v->tally = s->published;
    v->now.out = v->tally != NULL ? tally_total(v->tally, NULL) : 0;
    v->now.backlog = -1;
}

static void extra_view(const struct gust_topo_extra *x, struct view *v)
{
    memset(v, 0, sizeof(*v));
    v->kind = x->kind;
    v->name = x->name;
    v->state = x->state;
    snprintf(v->id, sizeof(v->id), "%s:%s", x->kind, x->name);
    v->tally = x->tally;
    v->only = x->only;
    v->now.out = x->tally != NULL ? tally_total(x->tally, x->only) : 0;
    v->now.backlog = -1;
}

/* Every node but the DLQ's, each with fn, under the registry's lock. */
static void each_view(struct gust_units *u, const struct gust_topo_extra *extra, size_t nextra,
                      void (*fn)(void *ud, struct view *v), void *ud)
{
    struct view v;
    for (size_t i = 0; i < nextra; i++) {
        extra_view(&extra[i], &v);
        fn(ud, &v);
    }
    pthread_mutex_lock(&u->lock);
    for (size_t i = 0; i < u->nsources; i++) {
        source_view(&u->sources[i], &v);
        fn(ud, &v);
    }
    for (size_t i = 0; i < u->n; i++) {
        unit_view(u, u->v[i], &v);
        fn(ud, &v);
    }
    pthread_mutex_unlock(&u->lock);
}

struct sampling {
    struct gust_topology *t;
    int64_t now;
    struct sample dlq;
    struct node *node; /* the one whose subjects are being read */
    double dt;         /* seconds since its last sample, 0: none */
};

static void sample_subject(void *ud, const char *subject, uint64_t count)
{
    struct sampling *s = ud;
    struct node *n = s->node;
    size_t i = 0;
    while (i < n->nsubj && strcmp(n->subj[i].subject, subject) != 0) {
        i++;
    }
    if (i == n->nsubj) {
        if (n->subj == NULL && (n->subj = calloc(GUST_TALLY_MAX, sizeof(*n->subj))) == NULL) {
            return;
        }
        if (n->nsubj == GUST_TALLY_MAX) {
            return;
        }
        snprintf(n->subj[i].subject, sizeof(n->subj[i].subject), "%s", subject);
        n->subj[i].count = 0;
        n->nsubj++;
    }
    n->subj[i].rate = s->dt > 0 ? (double)grown(n->subj[i].count, count) / s->dt : 0;
    n->subj[i].count = count;
}

static void push(struct sampling *s, const char *id, const struct sample *now, struct gust_tally *tally)
{
    struct node *n = node_find(s->t, id);
    if (n == NULL && (n = node_add(s->t, id)) == NULL) {
        return;
    }
    s->node = n;
    s->dt = n->n > 0 ? (double)(s->now - ring_at(n, 0)->t) / 1e3 : 0;
    if (tally != NULL) {
        gust_tally_each(tally, sample_subject, s);
    }
    n->ring[n->head] = *now;
    n->ring[n->head].t = s->now;
    n->head = (n->head + 1) % GUST_TOPO_RING;
    n->n += n->n < GUST_TOPO_RING;
    n->seen_ms = s->now;
}

static void sample_view(void *ud, struct view *v)
{
    struct sampling *s = ud;
    s->dlq.in += v->now.dead;
    push(s, v->id, &v->now, v->tally);
}

void gust_topology_sample(struct gust_topology *t, struct gust_units *u, const struct gust_topo_extra *extra,
                          size_t nextra, int64_t now_ms)
{
    struct sampling s = {.t = t, .now = now_ms, .dlq = {.backlog = -1}};
    each_view(u, extra, nextra, sample_view, &s);
    push(&s, "dlq:dlq", &s.dlq, NULL);
    /* Forget what has not been seen for a whole ring. */
    size_t kept = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (now_ms - t->v[i]->seen_ms > (int64_t)GUST_TOPO_RING * GUST_TOPO_INTERVAL_MS) {
            free(t->v[i]->subj);
            free(t->v[i]);
        } else {
            t->v[kept++] = t->v[i];
        }
    }
    t->n = kept;
}

/* ---- render ---- */

static void put_rate(struct gust_buf *out, const char *key, double r)
{
    gust_buf_printf(out, ",\"%s\":%.3f", key, r);
}

/* Rates from now back to the newest sample at least RATE_MIN_MS old (0 when none), and
 * the failed and handled events of the last minute (back to the newest sample a minute
 * old, or the oldest). */
struct window {
    double in_per_s, out_per_s;
    uint64_t errors, handled;
};

static void window_of(const struct node *n, const struct sample *now, int64_t t_now, struct window *w)
{
    const struct sample *base = NULL;
    for (size_t k = 0; n != NULL && k < n->n; k++) {
        if (t_now - ring_at(n, k)->t >= RATE_MIN_MS) {
            base = ring_at(n, k);
            break;
        }
    }
    double dt = base != NULL ? (double)(t_now - base->t) / 1e3 : 0;
    w->in_per_s = dt > 0 ? (double)grown(base->in, now->in) / dt : 0;
    w->out_per_s = dt > 0 ? (double)grown(base->out, now->out) / dt : 0;
    w->errors = now->failed;
    w->handled = now->in;
    if (n != NULL && n->n > 0) {
        const struct sample *old = ring_at(n, n->n - 1);
        for (size_t k = 0; k < n->n; k++) {
            if (t_now - ring_at(n, k)->t >= ERRORS_SPAN_MS) {
                old = ring_at(n, k);
                break;
            }
        }
        w->errors = grown(old->failed, now->failed);
        w->handled = grown(old->in, now->in);
    }
}

/* Per point of SPARK_STEP samples, oldest first: rates in and out, and the backlog. */
static void render_spark(const struct node *n, struct gust_buf *out)
{
    static const char *const series[] = {"in", "out", "backlog"};
    gust_buf_append(out, ",\"spark\":{", 10);
    for (int s = 0; s < 3; s++) {
        gust_buf_printf(out, "%s\"%s\":[", s > 0 ? "," : "", series[s]);
        size_t points = n != NULL && n->n > SPARK_STEP ? (n->n - 1) / SPARK_STEP : 0;
        for (size_t p = points; p-- > 0;) {
            const struct sample *b = ring_at(n, p * SPARK_STEP);
            const struct sample *a = ring_at(n, p * SPARK_STEP + SPARK_STEP);
            double dt = (double)(b->t - a->t) / 1e3;
            if (s == 2) {
                gust_buf_printf(out, "%" PRId64, b->backlog);
            } else {
                gust_buf_printf(out, "%.3g",
                                dt > 0 ? (double)grown(s == 0 ? a->in : a->out, s == 0 ? b->in : b->out) / dt
                                       : 0.0);
            }
            if (p > 0) {
                gust_buf_append(out, ",", 1);
            }
        }
        gust_buf_append(out, "]", 1);
    }
    gust_buf_append(out, "}", 1);
}

struct rendering {
    struct gust_topology *t;
    struct gust_buf *out;
    const char *dlq_prefix;
    int spark;
    int64_t now;
    size_t nodes;
    struct sample dlq;
    struct gust_buf edges; /* the "edges" array's members, built as the nodes go by */
    size_t nedges;
    /* Producers and consumers, for the edges once every node is seen. */
    struct end {
        char id[232];
        char subject[GUST_TALLY_SUBJECT];
        double rate;
    } * outs, *ins;
    size_t nouts, nins, outs_cap, ins_cap;
    struct view *cur;
};

static void add_end(struct end **v, size_t *n, size_t *cap, const char *id, const char *subject, double rate)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 32;
        struct end *m = realloc(*v, c * sizeof(*m));
        if (m == NULL) {
            return;
        }
        *v = m;
        *cap = c;
    }
    struct end *e = &(*v)[(*n)++];
    snprintf(e->id, sizeof(e->id), "%s", id);
    snprintf(e->subject, sizeof(e->subject), "%s", subject);
    e->rate = rate;
}

static void json_str(struct gust_buf *out, const char *s)
{
    gust_json_append_string(out, s, strlen(s));
}

/* One of the node's output subjects: in the JSON and among the producers. */
static void render_output(void *ud, const char *subject, uint64_t count)
{
    (void)count;
    struct rendering *r = ud;
    struct view *v = r->cur;
    if (v->only != NULL && strcmp(v->only, subject) != 0) {
        return;
    }
    const struct node *n = node_find(r->t, v->id);
    double rate = 0;
    for (size_t i = 0; n != NULL && i < n->nsubj; i++) {
        if (strcmp(n->subj[i].subject, subject) == 0) {
            rate = n->subj[i].rate;
        }
    }
    add_end(&r->outs, &r->nouts, &r->outs_cap, v->id, subject, rate);
}

static void render_node(void *ud, struct view *v)
{
    struct rendering *r = ud;
    struct gust_buf *out = r->out;
    r->dlq.in += v->now.dead;
    const struct node *n = node_find(r->t, v->id);
    gust_buf_append(out, ",{\"id\":" + (r->nodes == 0), r->nodes == 0 ? 6 : 7);
    r->nodes++;
    json_str(out, v->id);
    gust_buf_printf(out, ",\"kind\":\"%s\",\"name\":", v->kind);
    json_str(out, v->name);
    struct window w;
    window_of(n, &v->now, r->now, &w);
    /* A unit that runs but failed every event it took in the last minute is failing
     * too (a sink whose endpoint refuses everything). */
    const char *state = v->state;
    if (strcmp(state, "running") == 0 && w.errors > 0 && w.errors >= w.handled) {
        state = "failing";
    }
    gust_buf_printf(out, ",\"state\":\"%s\"", state);
    put_rate(out, "in_per_s", w.in_per_s);
    put_rate(out, "out_per_s", w.out_per_s);
    gust_buf_printf(out, ",\"errors_1m\":%" PRIu64, w.errors);
    if (v->now.backlog >= 0) {
        gust_buf_printf(out, ",\"backlog\":%" PRId64, v->now.backlog);
    } else {
        gust_buf_append(out, ",\"backlog\":null", 15);
    }
    gust_buf_printf(out,
                    ",\"events_in\":%" PRIu64 ",\"events_out\":%" PRIu64 ",\"events_failed\":%" PRIu64
                    ",\"dead_letters\":%" PRIu64,
                    v->now.in, v->now.out, v->now.failed, v->now.dead);
    /* Inputs: a unit's filter, a detect unit's subjects, or the source of its edge. */
    gust_buf_append(out, ",\"inputs\":[", 11);
    if (v->c != NULL) {
        struct gust_edge *e = gust_consumer_edge(v->c);
        const struct gust_handler *h = gust_consumer_handler(v->c);
        if (e != NULL) {
            add_end(&r->ins, &r->nins, &r->ins_cap, v->id, "", 0);
            snprintf(r->ins[r->nins - 1].subject, sizeof(r->ins[0].subject), "@edge:%s", gust_edge_source(e));
            json_str(out, "(edge)");
        } else if (strcmp(h->kind, "detect") == 0) {
            const struct detect *d = h->impl;
            for (size_t i = 0; i < d->nbind; i++) {
                add_end(&r->ins, &r->nins, &r->ins_cap, v->id, d->bind[i].subject, 0);
                if (i > 0) {
                    gust_buf_append(out, ",", 1);
                }
                json_str(out, d->bind[i].subject);
            }
        } else {
            add_end(&r->ins, &r->nins, &r->ins_cap, v->id, gust_consumer_source(v->c), 0);
            json_str(out, gust_consumer_source(v->c));
        }
    }
    gust_buf_append(out, "],\"outputs\":[", 13);
    size_t first = r->nouts;
    if (v->tally != NULL) {
        r->cur = v;
        gust_tally_each(v->tally, render_output, r);
    }
    if (v->only != NULL && r->nouts == first) { /* a webhook before its first delivery */
        add_end(&r->outs, &r->nouts, &r->outs_cap, v->id, v->only, 0);
    }
    for (size_t i = first; i < r->nouts; i++) {
        if (i > first) {
            gust_buf_append(out, ",", 1);
        }
        json_str(out, r->outs[i].subject);
    }
    gust_buf_append(out, "]", 1);
    if (v->c != NULL) {
        if (v->now.dead > 0) { /* its dead letters: an arrow to the DLQ */
            char subject[GUST_TALLY_SUBJECT];
            snprintf(subject, sizeof(subject), "%s%s", r->dlq_prefix, v->name);
            add_end(&r->outs, &r->nouts, &r->outs_cap, v->id, subject, 0);
            r->outs[r->nouts - 1].rate = -1; /* marks a dead-letter arrow */
        }
        char err[GUST_ERROR_MAX];
        int64_t at_ms = 0;
        gust_consumer_last_error_at(v->c, err, sizeof(err), &at_ms);
        gust_buf_append(out, ",\"last_error\":", 14);
        if (err[0] != '\0') {
            json_str(out, err);
            char when[40];
            time_t secs = (time_t)(at_ms / 1000);
            struct tm tm;
            gmtime_r(&secs, &tm);
            strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
            gust_buf_printf(out, ",\"last_error_at\":\"%s.%03dZ\"", when, (int)(at_ms % 1000));
        } else {
            gust_buf_append(out, "null,\"last_error_at\":null", 25);
        }
        if (strcmp(v->kind, "flow") == 0) {
            uint64_t heap, failures;
            gust_flow_handler_memory(gust_consumer_handler(v->c)->impl, &heap, &failures);
            gust_buf_printf(out, ",\"heap_bytes\":%" PRIu64 ",\"memory_max\":%" PRIu64, heap,
                            gust_flow_handler_memory_max(gust_consumer_handler(v->c)->impl));
        }
    }
    if (r->spark) {
        render_spark(n, out);
    }
    gust_buf_append(out, "}", 1);
}

/* A NATS subject filter (tokens, '*' one token, '>' the rest) against a subject. */
static int filter_matches(const char *f, const char *s)
{
    for (;;) {
        if (f[0] == '>' && f[1] == '\0') {
            return *s != '\0';
        }
        const char *fe = strchr(f, '.'), *se = strchr(s, '.');
        size_t fl = fe != NULL ? (size_t)(fe - f) : strlen(f), sl = se != NULL ? (size_t)(se - s) : strlen(s);
        if (!(fl == 1 && f[0] == '*') && (fl != sl || memcmp(f, s, fl) != 0)) {
            return 0;
        }
        if (fe == NULL || se == NULL) {
            return fe == NULL && se == NULL;
        }
        f = fe + 1;
        s = se + 1;
    }
}

static void render_edge(struct rendering *r, const char *from, const char *to, const char *subject,
                        double rate)
{
    gust_buf_append(&r->edges, ",{\"from\":" + (r->nedges == 0), r->nedges == 0 ? 8 : 9);
    r->nedges++;
    json_str(&r->edges, from);
    gust_buf_append(&r->edges, ",\"to\":", 6);
    json_str(&r->edges, to);
    gust_buf_append(&r->edges, ",\"subject\":", 11);
    json_str(&r->edges, subject);
    gust_buf_printf(&r->edges, ",\"per_s\":%.3f}", rate);
}

/* 1 when producer id is a source that feeds edge units: all it publishes goes to their
 * queues (plugin/api.c), none to the bus. */
static int feeds_edges(const struct rendering *r, const char *id)
{
    for (size_t i = 0; i < r->nins; i++) {
        const char *s = r->ins[i].subject;
        if (strncmp(s, "@edge:", 6) == 0 && strncmp(id, "source:", 7) == 0 && strcmp(s + 6, id + 7) == 0) {
            return 1;
        }
    }
    return 0;
}

static void render_edges(struct rendering *r)
{
    for (size_t o = 0; o < r->nouts; o++) {
        const struct end *p = &r->outs[o];
        if (p->rate < 0) {
            render_edge(r, p->id, "dlq:dlq", p->subject, 0);
            continue;
        }
        if (feeds_edges(r, p->id)) {
            continue;
        }
        for (size_t i = 0; i < r->nins; i++) {
            const struct end *c = &r->ins[i];
            if (strcmp(p->id, c->id) != 0 && c->subject[0] != '@' && filter_matches(c->subject, p->subject)) {
                render_edge(r, p->id, c->id, p->subject, p->rate);
            }
        }
    }
    /* The edge path: a source hands its messages to the unit in memory. */
    for (size_t i = 0; i < r->nins; i++) {
        const struct end *c = &r->ins[i];
        if (strncmp(c->subject, "@edge:", 6) == 0) {
            char from[232];
            snprintf(from, sizeof(from), "source:%s", c->subject + 6);
            render_edge(r, from, c->id, "(edge)", 0);
        }
    }
}

void gust_topology_render(struct gust_topology *t, struct gust_units *u, const struct gust_topo_extra *extra,
                          size_t nextra, const char *dlq_prefix, int spark, struct gust_buf *out)
{
    struct rendering r = {
        .t = t, .out = out, .dlq_prefix = dlq_prefix, .spark = spark, .now = gust_clock_mono_ms()};
    pthread_mutex_lock(&u->lock);
    uint64_t generation = u->generation;
    pthread_mutex_unlock(&u->lock);
    gust_buf_printf(out, "\"interval_s\":%d,\"generation\":%" PRIu64 ",\"nodes\":[",
                    GUST_TOPO_INTERVAL_MS / 1000, generation);
    each_view(u, extra, nextra, render_node, &r);
    struct view dlq = {.id = "dlq:dlq", .kind = "dlq", .name = "dlq", .state = "running", .now = r.dlq};
    dlq.now.backlog = -1;
    render_node(&r, &dlq);
    gust_buf_append(out, "],\"edges\":[", 11);
    render_edges(&r);
    gust_buf_append(out, r.edges.data != NULL ? r.edges.data : "", r.edges.len);
    gust_buf_append(out, "]", 1);
    gust_buf_free(&r.edges);
    free(r.outs);
    free(r.ins);
}

void gust_topology_render_flow_memory(struct gust_units *u, struct gust_buf *out)
{
    gust_buf_append(out, "\"flows\":[", 9);
    pthread_mutex_lock(&u->lock);
    size_t shown = 0;
    for (size_t i = 0; i < u->n; i++) {
        const struct gust_handler *h = gust_consumer_handler(u->v[i]);
        if (strcmp(h->kind, "flow") != 0) {
            continue;
        }
        uint64_t heap, failures;
        gust_flow_handler_memory(h->impl, &heap, &failures);
        gust_buf_append(out, ",{\"unit\":" + (shown == 0), shown == 0 ? 8 : 9);
        shown++;
        json_str(out, gust_consumer_name(u->v[i]));
        gust_buf_printf(
            out, ",\"heap_bytes\":%" PRIu64 ",\"memory_max\":%" PRIu64 ",\"memory_failures\":%" PRIu64 "}",
            heap, gust_flow_handler_memory_max(h->impl), failures);
    }
    pthread_mutex_unlock(&u->lock);
    gust_buf_append(out, "]", 1);
}
