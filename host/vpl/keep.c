#include "keep.h"

#include <stdlib.h>
#include <string.h>

/* The fields read from each slot of one pattern: read[slot * nsyms + sym]. */
struct reads {
    const struct pattern *pat;
    uint32_t nsyms;
    uint8_t *read;
};

static void mark(struct reads *r, int32_t slot, uint32_t sym)
{
    if (slot >= 0 && (uint32_t)slot < r->pat->nsteps && sym < r->nsyms) {
        r->read[(size_t)slot * r->nsyms + sym] = 1;
    }
}

static void walk(struct reads *r, const struct expr *x)
{
    if (x == NULL) {
        return;
    }
    switch (x->kind) {
    case X_ALIAS_FIELD: {
        /* An empty closure's alias reads the step before (eval.c, alias_event). */
        int32_t slot = x->slot;
        while (slot >= 0 && r->pat->steps[slot].kleene) {
            mark(r, slot--, x->id);
        }
        mark(r, slot, x->id);
        break;
    }
    case X_KLEENE_AT:
        mark(r, x->slot, x->id);
        break;
    case X_KLEENE_AGG:
        if (x->id2 != SYM_NONE) {
            mark(r, x->slot, x->id2);
        }
        break;
    default:
        break;
    }
    for (uint16_t i = 0; i < x->n; i++) {
        walk(r, x->kid[i]);
    }
}

static void walk_negs(struct reads *r, const struct neg *n, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        walk(r, n[i].pred);
    }
}

static int keep_pattern(struct vpl_program *p, const struct stream *s, struct pattern *pat)
{
    struct reads r = {.pat = pat, .nsyms = p->syms.n};
    r.read = calloc((size_t)pat->nsteps * (r.nsyms ? r.nsyms : 1), 1);
    if (r.read == NULL) {
        return VPL_ENOMEM;
    }
    for (uint32_t k = 0; k < pat->nsteps; k++) {
        walk(&r, pat->steps[k].pred);
        walk_negs(&r, pat->steps[k].negs, pat->steps[k].nnegs);
    }
    walk_negs(&r, pat->absent, pat->nabsent);
    walk_negs(&r, pat->cancel, pat->ncancel);
    for (uint32_t i = 0; i < pat->nfirst_where; i++) {
        walk(&r, pat->first_where[i]);
    }
    for (uint32_t i = 0; i < s->npost; i++) {
        for (uint32_t j = 0; j < s->post[i].n; j++) {
            walk(&r, s->post[i].e[j]);
        }
    }
    int rc = 0;
    for (uint32_t k = 0; k < pat->nsteps && rc == 0; k++) {
        pat->steps[k].keep = NULL;
        if (pat->nabsent > 0 && k + 1 == pat->nsteps) {
            continue; /* the match itself: kept whole */
        }
        const uint8_t *row = r.read + (size_t)k * r.nsyms;
        uint32_t n = 0;
        for (uint32_t f = 0; f < r.nsyms; f++) {
            n += row[f];
        }
        struct fieldset *fs = arena_alloc(&p->arena, sizeof(*fs) + n * sizeof(fs->sym[0]));
        if (fs == NULL) {
            rc = VPL_ENOMEM;
            break;
        }
        fs->n = 0;
        for (uint32_t f = 0; f < r.nsyms; f++) {
            if (row[f]) {
                fs->sym[fs->n++] = f;
            }
        }
        pat->steps[k].keep = fs;
    }
    free(r.read);
    return rc;
}

int keep_program(struct vpl_program *p)
{
    for (uint32_t i = 0; i < p->nstreams; i++) {
        struct stream *s = &p->streams[i];
        if (s->pat != NULL && keep_pattern(p, s, s->pat) != 0) {
            return VPL_ENOMEM;
        }
    }
    return 0;
}
