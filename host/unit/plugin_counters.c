#include "plugin_counters.h"

#include <inttypes.h>
#include <string.h>

size_t gust_plugin_counters_read(gust_plugin_counters_fn fn, void *ctx, struct gust_plugin_counter *c)
{
    size_t n = fn(ctx, c, GUST_PLUGIN_COUNTERS_MAX);
    return n < GUST_PLUGIN_COUNTERS_MAX ? n : GUST_PLUGIN_COUNTERS_MAX; /* a plugin may say more than it wrote */
}

void gust_plugin_counters_json(struct gust_buf *out, const struct gust_plugin_counter *c, size_t n,
                               int always_object)
{
    if (n == 0 && !always_object) {
        return;
    }
    gust_buf_append(out, ",\"plugin\":{", 11);
    for (size_t i = 0; i < n; i++) {
        gust_buf_printf(out, "%s", i > 0 ? "," : "");
        gust_json_append_string(out, c[i].name, strlen(c[i].name));
        gust_buf_printf(out, ":%" PRIu64, c[i].value);
    }
    gust_buf_append(out, "}", 1);
}

void gust_plugin_counters_metrics(struct gust_buf *out, const char *unit, const struct gust_plugin_counter *c,
                                  size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gust_buf_printf(out, "gust_plugin_value{unit=\"%s\",name=\"%s\"} %" PRIu64 "\n", unit, c[i].name,
                        c[i].value);
    }
}
