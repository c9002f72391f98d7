#include "config_tables.h"

int gust_config_tables_load(const struct gust_config *c, struct gust_tables *t, struct gust_err *err)
{
    for (size_t i = 0; i < c->ntables; i++) {
        const struct gust_table_conf *tc = &c->tables[i];
        if (gust_tables_has(t, tc->name)) {
            continue;
        }
        int rc = gust_tables_load_file(t, tc->name, tc->k.file, tc->k.key, tc->where, err);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}
