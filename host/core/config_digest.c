#include "config_digest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kind.h"

/* 64-bit FNV-1a: this tells configurations apart, it does not defend against anyone. */
struct digest {
    uint64_t h;
};

static void add(struct digest *d, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        d->h = (d->h ^ p[i]) * 1099511628211u;
    }
}

/* Each piece with its length first, so that "ab"+"c" and "a"+"bc" differ. */
static void add_piece(struct digest *d, const void *data, size_t len)
{
    uint64_t n = len;
    add(d, &n, sizeof(n));
    add(d, data, len);
}

static void add_str(struct digest *d, const char *s)
{
    add_piece(d, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

static void add_file(struct digest *d, const char *path)
{
    FILE *f = path != NULL ? fopen(path, "rb") : NULL;
    if (f == NULL) {
        add_str(d, strerror(errno));
        return;
    }
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        add(d, chunk, got);
    }
    fclose(f);
}

/* Whether name is one of the unit's kind's file keys. */
static int is_file_key(const struct gust_unit_conf *unit, const char *name)
{
    for (const char *const *k = unit->kind->file_keys; k != NULL && *k != NULL; k++) {
        if (strcmp(name, *k) == 0) {
            return 1;
        }
    }
    return 0;
}

/* A block or statement as written. The files a unit's kind names (a flow's script, a
 * detect unit's rules) count by their contents: nodes may keep the same files at
 * different paths. */
static void add_node(struct digest *d, const struct gust_conf_node *n, const struct gust_unit_conf *unit)
{
    add_str(d, n->name);
    uint64_t counts[2] = {n->nargs, n->nchildren};
    add(d, counts, sizeof(counts));
    for (size_t i = 0; i < n->nargs; i++) {
        add_str(d, n->args[i]);
    }
    for (size_t i = 0; i < n->nchildren; i++) {
        const struct gust_conf_node *c = &n->children[i];
        if (unit != NULL && is_file_key(unit, c->name)) {
            add_str(d, c->name);
            add_file(d, gust_cfg_str(unit->cfg, c->name));
        } else {
            add_node(d, c, NULL);
        }
    }
}

void gust_config_digest(const struct gust_config *config, char out[GUST_DIGEST_LEN + 1])
{
    struct digest d = {14695981039346656037u};
    for (size_t i = 0; i < config->nunits; i++) {
        add_node(&d, config->units[i].node, &config->units[i]);
    }
    snprintf(out, GUST_DIGEST_LEN + 1, "%016" PRIx64, d.h);
}

void gust_unit_digest(const struct gust_unit_conf *u, char out[GUST_DIGEST_LEN + 1])
{
    struct digest d = {14695981039346656037u};
    add_node(&d, u->node, u);
    snprintf(out, GUST_DIGEST_LEN + 1, "%016" PRIx64, d.h);
}
