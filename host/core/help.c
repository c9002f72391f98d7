#include "help.h"

#include <limits.h>
#include <string.h>

#include "../conf/conf_schema.h"
#include "../plugin/loader.h"
#include "config.h"
#include "kinds.h"

static const struct {
    const char *title;
    const struct gust_schema_key *schema;
} host_blocks[] = {
    {"top level", gust_top_schema},
    {"http { }", gust_http_schema},
    {"nats { }", gust_nats_schema},
    {"secrets { }", gust_secrets_schema},
    {"otlp { }", gust_otlp_schema},
};

/* The blocks after the unit kinds'. */
static const struct {
    const char *title;
    const struct gust_schema_key *schema;
} other_blocks[] = {
    {"table NAME { }", gust_table_schema},
    {"webhook NAME { }", gust_webhook_schema},
};

/* Text for roff: a leading . or ' would start a request, a backslash an escape. */
static void roff_text(FILE *out, const char *s)
{
    if (*s == '.' || *s == '\'') {
        fputs("\\&", out);
    }
    for (; *s != '\0'; s++) {
        if (*s == '\\') {
            fputs("\\e", out);
        } else if (*s == '-') {
            fputs("\\-", out);
        } else {
            fputc(*s, out);
        }
    }
}

/* One key as a tagged paragraph: its name, then "type, default X, flags", then its help. */
static void roff_block(FILE *out, const char *title, const struct gust_schema_key *schema)
{
    fputs(".SS ", out);
    roff_text(out, title);
    fputc('\n', out);
    for (const struct gust_schema_key *k = schema; k->key != NULL; k++) {
        char flags[64];
        fputs(".TP\n.B ", out);
        roff_text(out, k->key);
        fputs("\n\\fI", out);
        roff_text(out, gust_schema_type_name(k->type));
        fputs("\\fR, default \\fB", out);
        roff_text(out, gust_schema_shown_default(k));
        fputs("\\fR", out);
        const char *f = gust_schema_flag_names(k->flags, flags, sizeof(flags));
        if (strcmp(f, "-") != 0) {
            fputs(", ", out);
            roff_text(out, f);
        }
        char bounds[96];
        if (gust_schema_bounds_text(k, bounds, sizeof(bounds))[0] != '\0') {
            fputs(", ", out);
            roff_text(out, bounds);
        }
        fputs("\n.br\n", out);
        roff_text(out, k->help != NULL ? k->help : "");
        fputc('\n', out);
    }
}

static void print_block(FILE *out, enum gust_help_format format, const char *title,
                        const struct gust_schema_key *schema)
{
    if (format == GUST_HELP_ROFF) {
        roff_block(out, title, schema);
    } else {
        gust_schema_print_help(out, title, schema);
    }
}

struct plugin_help {
    FILE *out;
    enum gust_help_format format;
};

static void print_type(void *ud, const char *plugin, const struct gust_plugin_type *t)
{
    struct plugin_help *h = ud;
    char title[256];
    snprintf(title, sizeof(title), "%s NAME { use %s; } (plugin %s)",
             t->kind == GUST_PLUGIN_SINK ? "sink" : "source", t->name, plugin);
    static const struct gust_schema_key none[] = {GUST_KEY_END};
    print_block(h->out, h->format, title, t->schema != NULL ? t->schema : none);
}

void gust_help_keys(FILE *out, enum gust_help_format format)
{
    for (size_t i = 0; i < sizeof(host_blocks) / sizeof(host_blocks[0]); i++) {
        print_block(out, format, host_blocks[i].title, host_blocks[i].schema);
    }
    for (size_t i = 0; gust_kinds[i] != NULL; i++) {
        char title[160];
        snprintf(title, sizeof(title), "%s NAME { }%s", gust_kinds[i]->name, gust_kinds[i]->help);
        print_block(out, format, title, gust_kinds[i]->schema);
    }
    for (size_t i = 0; i < sizeof(other_blocks) / sizeof(other_blocks[0]); i++) {
        print_block(out, format, other_blocks[i].title, other_blocks[i].schema);
    }
    char dir[PATH_MAX];
    gust_plugins_default_dir(dir, sizeof(dir));
    struct plugin_help h = {out, format};
    gust_plugins_describe(dir, print_type, &h);
}
