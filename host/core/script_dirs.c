#include "script_dirs.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/buf.h"
#include "kind.h"

#define MAX_DIRS 64

struct dirs {
    char v[MAX_DIRS][PATH_MAX];
    size_t n;
};

/* Adds the real path of dir (when it exists), once. */
static void add_dir(struct dirs *d, const char *dir)
{
    char real[PATH_MAX];
    if (dir == NULL || d->n >= MAX_DIRS || realpath(dir, real) == NULL) {
        return;
    }
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->v[i], real) == 0) {
            return;
        }
    }
    snprintf(d->v[d->n++], PATH_MAX, "%s", real);
}

static void collect(const struct gust_config *c, struct dirs *d)
{
    d->n = 0;
    add_dir(d, gust_config_lua_path(c, NULL));
    for (size_t i = 0; i < c->nunits; i++) {
        const struct gust_unit_conf *u = &c->units[i];
        if ((u->kind->flags & GUST_KIND_LUA) == 0) {
            continue;
        }
        add_dir(d, gust_config_lua_path(c, u));
        if (u->k.script != NULL) {
            char copy[PATH_MAX];
            snprintf(copy, sizeof(copy), "%s", u->k.script);
            add_dir(d, dirname(copy));
        }
    }
}

static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') {
        return 1;
    }
    return strncmp(path, dir, n) == 0 && path[n] == '/';
}

int gust_script_path_resolve(const struct gust_config *c, const char *base_dir, const char *path, char *out,
                             size_t size, struct gust_err *err)
{
    struct dirs *d = malloc(sizeof(*d));
    if (d == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    collect(c, d);
    char joined[PATH_MAX], real[PATH_MAX];
    int rc = 0;
    if (path[0] == '/' || base_dir == NULL || base_dir[0] == '\0') {
        snprintf(joined, sizeof(joined), "%s", path);
    } else {
        snprintf(joined, sizeof(joined), "%s/%s", base_dir, path);
    }
    struct stat st;
    int found = realpath(joined, real) != NULL;
    int inside = 0;
    for (size_t i = 0; found && i < d->n && !inside; i++) {
        inside = under(real, d->v[i]);
    }
    if (!inside) {
        /* One answer whether the file exists or not: the API says nothing about files
         * outside. */
        struct gust_buf list = {0};
        for (size_t i = 0; i < d->n; i++) {
            gust_buf_printf(&list, "%s%s", i > 0 ? ", " : "", d->v[i]);
        }
        rc = gust_err_set(err, GUST_EINVAL,
                          "script_path %s: not a file under the script directories (%s): the directories "
                          "of the flows' scripts and lua_path",
                          path, list.len > 0 ? list.data : "none");
        gust_buf_free(&list);
    } else if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = gust_err_set(err, GUST_EINVAL, "script_path %s: not a regular file", path);
    } else if (strlen(real) >= size) {
        rc = gust_err_set(err, GUST_EINVAL, "script_path %s: path too long", path);
    } else {
        memcpy(out, real, strlen(real) + 1);
    }
    free(d);
    return rc;
}
