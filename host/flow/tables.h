/* Lookup tables: read-only key -> JSON value maps a flow reads as tables.NAME[key].
 *
 * A set is built once (gust_tables_load_file, gust_tables_add_json), then shared:
 * every flow given it takes a reference, and nothing changes it any more, so units on
 * different threads read it at once without locks. A lookup finds the key in the set's
 * own index and decodes only that row into a fresh Lua table; nothing is copied per
 * flow or per event.
 *
 * Sources:
 *   - CSV (RFC 4180: a header row naming the columns, fields quoted with "..." when
 *     they hold commas, quotes ("") or line breaks; LF or CRLF; UTF-8, a leading BOM
 *     skipped): each row becomes an object of its columns, every value a string; `key`
 *     names the column whose value is the row's key.
 *   - JSON, an object: each member is a row, its name the key, its value any JSON.
 *   - JSON, an array of objects: `key` names the member whose value (a string, or a
 *     number, by its text) is the row's key.
 * Keys are unique and non-empty. Errors name file:line. */
#ifndef GUST_FLOW_TABLES_H
#define GUST_FLOW_TABLES_H

#include <stddef.h>

#include "gust/err.h"

#define GUST_TABLE_MAX_FILE (256u << 20) /* bytes per table file */

struct gust_tables;
struct gust_table;

/* An empty set, reference count 1. */
int gust_tables_create(struct gust_tables **out, struct gust_err *err);
/* Adds table `name` (letters, digits, '_' and '-') read from `path` (borrowed); the
 * format comes from the extension (.csv, .json). `key` is required for CSV and JSON
 * arrays and refused for a JSON object. `where` ("file:line" of the configuration, may
 * be NULL) prefixes errors about the configuration itself; errors in the file name the
 * file and line. GUST_ECONFIG, GUST_ENOMEM. */
int gust_tables_load_file(struct gust_tables *t, const char *name, const char *path, const char *key,
                          const char *where, struct gust_err *err);
/* Adds table `name` from JSON text (an object or an array of objects, as a file would
 * hold), named `what` in errors. */
int gust_tables_add_json(struct gust_tables *t, const char *name, const char *json, size_t len,
                         const char *key, const char *what, struct gust_err *err);
/* Whether the set has a table of that name. */
int gust_tables_has(const struct gust_tables *t, const char *name);

/* Reference counting (thread-safe); unref frees at zero. NULL is a no-op for both. */
struct gust_tables *gust_tables_ref(struct gust_tables *t);
void gust_tables_unref(struct gust_tables *t);

/* Reading (the flow's Lua binding): the number of tables and the i-th; a table's name,
 * number of rows, and the JSON text of the row of key[0..len) (NULL: none). */
size_t gust_tables_count(const struct gust_tables *t);
const struct gust_table *gust_tables_at(const struct gust_tables *t, size_t i);
const char *gust_table_name(const struct gust_table *tb);
size_t gust_table_rows(const struct gust_table *tb);
const char *gust_table_find(const struct gust_table *tb, const char *key, size_t len, size_t *json_len);

#endif
