#include "edges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"

int gust_edges_check(const struct gust_config *c, struct gust_err *err)
{
    for (size_t i = 0; i < c->nunits; i++) {
        const struct gust_unit_conf *u = &c->units[i];
        const char *edge = u->k.edge; /* bound only by the kinds whose schema has GUST_EDGE_KEYS */
        if (edge == NULL) {
            continue;
        }
        const char *kind = u->kind->name;
        if (u->k.source != NULL) {
            return gust_err_set(err, GUST_ECONFIG,
                                "%s: %s '%s': `edge` and `source` exclude each other (edge: in memory from a source "
                                "unit, at most once; source: from the bus)",
                                gust_cfg_where(u->cfg, "edge"), kind, u->name);
        }
        const struct gust_unit_conf *s = NULL;
        for (size_t k = 0; k < c->nunits && s == NULL; k++) {
            s = strcmp(c->units[k].name, edge) == 0 ? &c->units[k] : NULL;
        }
        if (s == NULL) {
            return gust_err_set(err, GUST_ECONFIG, "%s: %s '%s': edge '%s': no unit of that name (it must name a "
                                "`source` block)", gust_cfg_where(u->cfg, "edge"), kind, u->name, edge);
        }
        if ((s->kind->flags & GUST_KIND_FEEDS_EDGES) == 0) {
            return gust_err_set(err, GUST_ECONFIG, "%s: %s '%s': edge '%s' is a %s (%s), not a source",
                                gust_cfg_where(u->cfg, "edge"), kind, u->name, edge, s->kind->name,
                                s->where);
        }
    }
    return 0;
}

struct link {
    char *source;
    struct gust_edge_set set;
};

struct gust_edge_links {
    struct link *v;
    size_t n;
};

int gust_edge_links_add(struct gust_edge_links **links, const char *source, struct gust_edge *e)
{
    if (*links == NULL && (*links = calloc(1, sizeof(**links))) == NULL) {
        return GUST_ENOMEM;
    }
    struct gust_edge_links *ls = *links;
    struct link *l = NULL;
    for (size_t i = 0; i < ls->n && l == NULL; i++) {
        l = strcmp(ls->v[i].source, source) == 0 ? &ls->v[i] : NULL;
    }
    if (l == NULL) {
        struct link *v = realloc(ls->v, (ls->n + 1) * sizeof(*v));
        if (v == NULL) {
            return GUST_ENOMEM;
        }
        ls->v = v;
        l = &v[ls->n];
        *l = (struct link){.source = strdup(source)};
        if (l->source == NULL) {
            return GUST_ENOMEM;
        }
        ls->n++;
    }
    struct gust_edge **q = realloc(l->set.v, (l->set.n + 1) * sizeof(*q));
    if (q == NULL) {
        return GUST_ENOMEM;
    }
    l->set.v = q;
    q[l->set.n++] = e;
    return 0;
}

struct gust_edge_set *gust_edge_links_find(struct gust_edge_links *links, const char *source)
{
    for (size_t i = 0; links != NULL && i < links->n; i++) {
        if (strcmp(links->v[i].source, source) == 0) {
            return &links->v[i].set;
        }
    }
    return NULL;
}

void gust_edge_links_free(struct gust_edge_links *links)
{
    if (links == NULL) {
        return;
    }
    for (size_t i = 0; i < links->n; i++) {
        free(links->v[i].source);
        free(links->v[i].set.v);
    }
    free(links->v);
    free(links);
}
