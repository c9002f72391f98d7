/* Where a configuration's scripts live: the directory of each flow's script and every
 * lua_path (the top level's and the flows' own). POST /replay reads a candidate given by
 * path only under one of them, so that the admin API cannot be made to read any other
 * file of the machine. */
#ifndef GUST_CORE_SCRIPT_DIRS_H
#define GUST_CORE_SCRIPT_DIRS_H

#include <stddef.h>

#include "config.h"
#include "gust/err.h"

/* Resolves path (relative to base_dir unless absolute; symbolic links followed) and
 * checks that it names a regular file under one of c's script directories: 0 with the
 * real path in out, else GUST_EINVAL with why (naming the path and the directories,
 * never anything the file holds). */
int gust_script_path_resolve(const struct gust_config *c, const char *base_dir, const char *path, char *out,
                             size_t size, struct gust_err *err);

#endif
