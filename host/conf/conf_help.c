/* gust_schema_print_help: the key tables of `gust --help`. */
#include "conf_schema.h"

#include <string.h>

const char *gust_schema_type_name(enum gust_type t)
{
    switch (t) {
    case GUST_T_STR:
        return "string";
    case GUST_T_INT:
        return "int";
    case GUST_T_BOOL:
        return "bool";
    case GUST_T_SIZE:
        return "size";
    case GUST_T_DURATION:
        return "duration";
    case GUST_T_PATH:
        return "path";
    case GUST_T_SUBJECT:
        return "subject";
    case GUST_T_FILTER:
        return "filter";
    case GUST_T_LIST:
        return "list";
    case GUST_T_ADDR:
        return "addr";
    }
    return "?";
}

const char *gust_schema_shown_default(const struct gust_schema_key *k)
{
    if (k->def == NULL) {
        return "-";
    }
    return (k->flags & GUST_K_SECRET) ? "(hidden)" : k->def;
}

const char *gust_schema_flag_names(unsigned flags, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s", (flags & GUST_K_REQUIRED) ? "required," : "",
             (flags & GUST_K_RELOADABLE) ? "reloadable," : "",
             (flags & GUST_K_SECRET) ? "secret," : "");
    size_t n = strlen(buf);
    if (n == 0) {
        return "-";
    }
    buf[n - 1] = '\0'; /* the trailing comma */
    return buf;
}

void gust_schema_print_help(FILE *out, const char *title, const struct gust_schema_key *schema)
{
    int wkey = 3, wtype = 4, wdef = 7, wflags = 5;
    char flags[40];

    /* Size the columns to the table so that it reads as one. */
    for (const struct gust_schema_key *k = schema; k->key != NULL; k++) {
        int n = (int)strlen(k->key);
        wkey = n > wkey ? n : wkey;
        n = (int)strlen(gust_schema_type_name(k->type));
        wtype = n > wtype ? n : wtype;
        n = (int)strlen(gust_schema_shown_default(k));
        wdef = n > wdef ? n : wdef;
        n = (int)strlen(gust_schema_flag_names(k->flags, flags, sizeof(flags)));
        wflags = n > wflags ? n : wflags;
    }
    fprintf(out, "%s\n  %-*s  %-*s  %-*s  %-*s  %s\n", title, wkey, "KEY", wtype, "TYPE", wdef,
            "DEFAULT", wflags, "FLAGS", "DESCRIPTION");
    for (const struct gust_schema_key *k = schema; k->key != NULL; k++) {
        fprintf(out, "  %-*s  %-*s  %-*s  %-*s  %s\n", wkey, k->key, wtype, gust_schema_type_name(k->type),
                wdef, gust_schema_shown_default(k), wflags, gust_schema_flag_names(k->flags, flags, sizeof(flags)),
                k->help ? k->help : "");
    }
}
