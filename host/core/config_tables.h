/* The lookup tables host.conf names (`table NAME { file PATH; key FIELD; }`), loaded
 * into a set for the flows (../flow/tables.h). */
#ifndef GUST_CORE_CONFIG_TABLES_H
#define GUST_CORE_CONFIG_TABLES_H

#include "../flow/tables.h"
#include "config.h"

/* Loads every table of c into t (borrowed), skipping names t has already (the inline
 * tables of a golden test). Errors name the table file and line, and the block. */
int gust_config_tables_load(const struct gust_config *c, struct gust_tables *t, struct gust_err *err);

#endif
