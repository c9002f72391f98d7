/* Every host.conf key, from the schemas: the tables of `gust --help`, and the same keys
 * as roff for gust-host.conf(5) (man/gust-host.conf.5.in), so the two cannot drift. */
#ifndef GUST_CORE_HELP_H
#define GUST_CORE_HELP_H

#include <stdio.h>

enum gust_help_format { GUST_HELP_TEXT, GUST_HELP_ROFF };

/* The host's blocks, then the types of every plugin in the default plugin directory. */
void gust_help_keys(FILE *out, enum gust_help_format format);

#endif
