#include "plugin_counters.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void gust_plugin_note_init(struct gust_plugin_note *n)
{
    memset(n, 0, sizeof(*n));
    pthread_mutex_init(&n->lock, NULL);
}

void gust_plugin_note_destroy(struct gust_plugin_note *n)
{
    pthread_mutex_destroy(&n->lock);
}

void gust_plugin_note_set(struct gust_plugin_note *n, const char *text)
{
    pthread_mutex_lock(&n->lock);
    if (text == NULL || text[0] == '\0') {
        n->text[0] = '\0';
        n->at_ms = 0;
    } else if (strncmp(n->text, text, sizeof(n->text) - 1) != 0) {
        /* The time of the first report of this trouble: a plugin repeats it on every retry. */
        snprintf(n->text, sizeof(n->text), "%s", text);
        n->at_ms = gust_clock_wall_ms();
    }
    pthread_mutex_unlock(&n->lock);
}

void gust_plugin_note_json(struct gust_buf *out, struct gust_plugin_note *n)
{
    pthread_mutex_lock(&n->lock);
    if (n->text[0] == '\0') {
        gust_buf_printf(out, ",\"plugin_error\":null,\"plugin_error_at\":null");
    } else {
        char when[GUST_RFC3339_SIZE];
        gust_rfc3339_ms(n->at_ms, when);
        gust_buf_append(out, ",\"plugin_error\":", 16);
        gust_json_append_string(out, n->text, strlen(n->text));
        gust_buf_printf(out, ",\"plugin_error_at\":\"%s\"", when);
    }
    pthread_mutex_unlock(&n->lock);
}

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
