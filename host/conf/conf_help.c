/* gust_schema_print_help: the key tables of `gust --help`. */
#include "conf_schema.h"

#include <inttypes.h>
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
    case GUST_T_NAME:
        return "name";
    case GUST_T_RATE:
        return "rate";
    case GUST_T_URL:
        return "url";
    case GUST_T_RATIO:
        return "ratio";
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

/* v in the largest unit of its type that writes it exactly: 64k, 1500ms, 2m. */
static void fmt_amount(enum gust_type t, int64_t v, char *buf, size_t size)
{
    static const struct {
        const char *suffix;
        int64_t scale;
    } sizes[] = {{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}}, durations[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}};
    const char *unit = t == GUST_T_DURATION ? "ms" : "";
    int n = t == GUST_T_SIZE ? 3 : t == GUST_T_DURATION ? 3 : 0;
    for (int i = 0; i < n && v != 0; i++) {
        int64_t scale = t == GUST_T_SIZE ? sizes[i].scale : durations[i].scale;
        if (v % scale == 0) {
            snprintf(buf, size, "%" PRId64 "%s", v / scale, t == GUST_T_SIZE ? sizes[i].suffix : durations[i].suffix);
            return;
        }
    }
    snprintf(buf, size, "%" PRId64 "%s", v, unit);
}

const char *gust_schema_bounds_text(const struct gust_schema_key *k, char *buf, size_t size)
{
    char lo[32], hi[32];
    const char *zero = (k->flags & GUST_K_ZERO_OFF) ? "0 (off) or " : "";

    buf[0] = '\0';
    if (k->choices != NULL && k->type == GUST_T_STR) {
        snprintf(buf, size, "one of %s", k->choices);
    } else if (k->choices != NULL && k->type == GUST_T_URL) {
        snprintf(buf, size, "a URL of scheme %s", k->choices);
    } else if ((k->flags & GUST_K_RANGE) &&
               (k->type == GUST_T_INT || k->type == GUST_T_SIZE || k->type == GUST_T_DURATION)) {
        fmt_amount(k->type, k->min, lo, sizeof(lo));
        fmt_amount(k->type, k->max, hi, sizeof(hi));
        if (k->max == INT64_MAX) {
            snprintf(buf, size, "%sat least %s", zero, lo);
        } else {
            snprintf(buf, size, "%swithin %s..%s", zero, lo, hi);
        }
    }
    return buf;
}

const char *gust_schema_flag_names(unsigned flags, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%s", (flags & GUST_K_REQUIRED) ? "required," : "",
             (flags & GUST_K_RELOADABLE) ? "reloadable," : "",
             (flags & GUST_K_SECRET) ? "secret," : "", (flags & GUST_K_TEMPLATE) ? "template," : "");
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
        char bounds[96];
        gust_schema_bounds_text(k, bounds, sizeof(bounds));
        fprintf(out, "  %-*s  %-*s  %-*s  %-*s  %s%s%s%s\n", wkey, k->key, wtype, gust_schema_type_name(k->type),
                wdef, gust_schema_shown_default(k), wflags, gust_schema_flag_names(k->flags, flags, sizeof(flags)),
                k->help ? k->help : "", bounds[0] ? " (" : "", bounds, bounds[0] ? ")" : "");
    }
}
