/* Snapshots and slices against the engine itself as the oracle.
 *
 * usage: vpl-test-snapshot CASE_DIR...   (each with program.vpl and events.jsonl)
 *
 * For each case, the events and ticks (the case's lines, then three more rounds of them, so that
 * state carries across rounds) are fed to one engine, uninterrupted: its alerts are the
 * reference. Then:
 *  - restored: every k events (k = 1, 2, 3, 5) the engine is snapshot, destroyed, and
 *    a new engine restored from the snapshot goes on: the alerts must be the same, in
 *    the same order, byte for byte (timestamps included: event time is deterministic
 *    here, arrival being the line number);
 *  - sliced: 2 and 3 engines, each fed every event, each keeping one slice: together
 *    they must deliver, event by event, the same alerts (as a multiset), also when
 *    each is snapshot and restored every 2 events; a program that cannot be sliced
 *    must be refused by vpl_engine_set_slice with a message, never run wrongly. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vpl.h"

#define ROUNDS 4

struct alerts {
    char **v;
    size_t *event; /* the input each alert came from */
    size_t n, cap;
    size_t cur;
};

static void on_alert(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)stream;
    (void)topic;
    struct alerts *a = ud;
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = realloc(a->v, a->cap * sizeof(*a->v));
        a->event = realloc(a->event, a->cap * sizeof(*a->event));
        if (a->v == NULL || a->event == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
    }
    a->v[a->n] = strndup(json, len);
    a->event[a->n++] = a->cur;
}

static void alerts_free(struct alerts *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    free(a->event);
    memset(a, 0, sizeof(*a));
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (p != NULL && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p != NULL) {
        p[n] = '\0';
        *len = (size_t)n;
    }
    return p;
}

struct events {
    char **line;
    size_t n;
};

static int load_events(const char *path, struct events *ev)
{
    size_t len;
    char *text = slurp(path, &len);
    if (text == NULL)
        return -1;
    size_t count = 0;
    for (char *p = text; *p; p++)
        count += *p == '\n';
    ev->line = calloc((count + 1) * ROUNDS, sizeof(*ev->line));
    ev->n = 0;
    for (int r = 0; r < ROUNDS; r++) {
        char *save = NULL, *copy = strdup(text);
        for (char *l = strtok_r(copy, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save))
            if (strspn(l, " \t\r") != strlen(l))
                ev->line[ev->n++] = strdup(l);
        free(copy);
    }
    free(text);
    return 0;
}

static struct vpl_engine *engine(const struct vpl_program *prog, uint32_t slice, uint32_t nslices)
{
    struct vpl_engine *e = NULL;
    struct vpl_error err;
    if (vpl_engine_create(prog, NULL, &e, &err) != 0 ||
        (nslices > 1 && vpl_engine_set_slice(e, slice, nslices, &err) != 0)) {
        fprintf(stderr, "engine: %s\n", err.msg);
        exit(2);
    }
    return e;
}

/* A line is an event or a stored tick ({"@tick": ms}, {"@timer": ms}), as vpl-run reads it. */
static void feed(struct vpl_engine *e, const struct events *ev, size_t i, struct alerts *out)
{
    int kind;
    int64_t ms;
    out->cur = i;
    if (vpl_tick_of(ev->line[i], strlen(ev->line[i]), &kind, &ms)) {
        vpl_engine_tick(e, kind, ms, on_alert, out);
        return;
    }
    vpl_engine_feed_json(e, ev->line[i], strlen(ev->line[i]), NULL, (int64_t)(i + 1) * 1000, on_alert, out);
}

/* Snapshot, destroy, restore into a new engine. */
static int cycle(const struct vpl_program *prog, struct vpl_engine **e, uint32_t slice, uint32_t nslices,
                 const char *name)
{
    void *snap = NULL;
    size_t len = 0;
    struct vpl_error err;
    if (vpl_engine_snapshot(*e, &snap, &len, &err) != 0) {
        printf("FAIL %s: snapshot: %s\n", name, err.msg);
        return -1;
    }
    vpl_engine_destroy(*e);
    *e = engine(prog, slice, nslices);
    int rc = vpl_engine_restore(*e, snap, len, &err);
    free(snap);
    if (rc != 0) {
        printf("FAIL %s: restore: %s\n", name, err.msg);
        return -1;
    }
    return 0;
}

static int same_sequence(const struct alerts *want, const struct alerts *got, const char *name, const char *how)
{
    for (size_t i = 0; i < want->n || i < got->n; i++) {
        const char *w = i < want->n ? want->v[i] : "(none)";
        const char *g = i < got->n ? got->v[i] : "(none)";
        if (strcmp(w, g) != 0) {
            printf("FAIL %s (%s): alert %zu: want %s, got %s\n", name, how, i + 1, w, g);
            return -1;
        }
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Per input event, the multiset of alerts must agree. */
static int same_per_event(const struct alerts *want, const struct alerts *got, size_t nevents,
                          const char *name, const char *how)
{
    char **a = malloc((want->n + 1) * sizeof(*a)), **b = malloc((got->n + 1) * sizeof(*b));
    int rc = 0;
    for (size_t ev = 0; ev < nevents && rc == 0; ev++) {
        size_t na = 0, nb = 0;
        for (size_t i = 0; i < want->n; i++)
            if (want->event[i] == ev)
                a[na++] = want->v[i];
        for (size_t i = 0; i < got->n; i++)
            if (got->event[i] == ev)
                b[nb++] = got->v[i];
        qsort(a, na, sizeof(*a), cmp_str);
        qsort(b, nb, sizeof(*b), cmp_str);
        for (size_t i = 0; i < na || i < nb; i++) {
            if (i >= na || i >= nb || strcmp(a[i], b[i]) != 0) {
                printf("FAIL %s (%s): event %zu: want %zu alerts, got %zu (first difference: want %s, got %s)\n",
                       name, how, ev + 1, na, nb, i < na ? a[i] : "(none)", i < nb ? b[i] : "(none)");
                rc = -1;
                break;
            }
        }
    }
    free(a);
    free(b);
    return rc;
}

static int run_sliced(const struct vpl_program *prog, const struct events *ev, const struct alerts *ref,
                      uint32_t nslices, int restore_every, const char *name)
{
    struct vpl_engine *e[8];
    struct alerts got = {0};
    char how[64];
    snprintf(how, sizeof(how), "%u slices%s", nslices, restore_every ? ", restored every 2" : "");
    for (uint32_t s = 0; s < nslices; s++)
        e[s] = engine(prog, s, nslices);
    int rc = 0;
    for (size_t i = 0; i < ev->n && rc == 0; i++) {
        for (uint32_t s = 0; s < nslices; s++)
            feed(e[s], ev, i, &got);
        if (restore_every && i % 2 == 1)
            for (uint32_t s = 0; s < nslices && rc == 0; s++)
                rc = cycle(prog, &e[s], s, nslices, name);
    }
    if (rc == 0)
        rc = same_per_event(ref, &got, ev->n, name, how);
    for (uint32_t s = 0; s < nslices; s++)
        vpl_engine_destroy(e[s]);
    alerts_free(&got);
    return rc;
}

static int run_case(const char *dir)
{
    char path[4096];
    const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    if (*name == '\0')
        name = dir;
    snprintf(path, sizeof(path), "%s/program.vpl", dir);
    size_t len;
    char *src = slurp(path, &len);
    struct events ev = {0};
    snprintf(path, sizeof(path), "%s/events.jsonl", dir);
    if (src == NULL || load_events(path, &ev) != 0) {
        free(src);
        printf("skip %s: no program.vpl or events.jsonl\n", name);
        return 0;
    }
    struct vpl_program *prog = NULL;
    struct vpl_error err;
    if (vpl_program_compile(src, len, "program.vpl", &prog, &err) != 0) {
        free(src);
        printf("skip %s: does not compile (%s)\n", name, err.msg);
        return 0;
    }
    struct alerts ref = {0};
    struct vpl_engine *e = engine(prog, 0, 1);
    for (size_t i = 0; i < ev.n; i++)
        feed(e, &ev, i, &ref);
    vpl_engine_destroy(e);

    int rc = 0;
    static const size_t every[] = {1, 2, 3, 5};
    for (size_t k = 0; k < sizeof(every) / sizeof(every[0]) && rc == 0; k++) {
        struct alerts got = {0};
        e = engine(prog, 0, 1);
        for (size_t i = 0; i < ev.n && rc == 0; i++) {
            feed(e, &ev, i, &got);
            if ((i + 1) % every[k] == 0)
                rc = cycle(prog, &e, 0, 1, name);
        }
        char how[64];
        snprintf(how, sizeof(how), "restored every %zu", every[k]);
        if (rc == 0)
            rc = same_sequence(&ref, &got, name, how);
        vpl_engine_destroy(e);
        alerts_free(&got);
    }
    const char *sliced = "sliced";
    struct vpl_engine *probe = engine(prog, 0, 1);
    if (rc == 0 && vpl_engine_set_slice(probe, 1, 3, &err) != 0) {
        sliced = "not sliceable";
        if (err.msg[0] == '\0') {
            printf("FAIL %s: refused to slice without a reason\n", name);
            rc = -1;
        }
    } else {
        for (uint32_t n = 2; n <= 3 && rc == 0; n++)
            for (int restore_every = 0; restore_every <= 1 && rc == 0; restore_every++)
                rc = run_sliced(prog, &ev, &ref, n, restore_every, name);
    }
    vpl_engine_destroy(probe);
    if (rc == 0)
        printf("ok %s: %zu events, %zu alerts, %s\n", name, ev.n, ref.n, sliced);
    alerts_free(&ref);
    for (size_t i = 0; i < ev.n; i++)
        free(ev.line[i]);
    free(ev.line);
    vpl_program_destroy(prog);
    free(src);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: vpl-test-snapshot CASE_DIR...\n");
        return 2;
    }
    int failed = 0;
    for (int i = 1; i < argc; i++)
        failed += run_case(argv[i]) != 0;
    printf("%d case(s), %d failed\n", argc - 1, failed);
    return failed ? 1 : 0;
}
