/* The exec plugin: `plugin exec;` provides three types that run local commands.
 *   exec_source  run a command every interval, publish each JSON line of its stdout
 *   exec_stream  keep one child running, publish each JSON line, restart it with backoff
 *   exec_sink    run a command per message with the body on stdin; the exit code decides */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"

const struct gust_host_api *exec_host;


int exec_ratelog_ok(struct exec_ratelog *r, struct gust_instance *inst)
{
    int64_t now = gust_clock_mono_ms();

    if (now - r->window_start >= 10000) {
        if (r->suppressed) {
            exec_host->log(inst, GUST_LOG_WARN, "%llu more such messages not logged in the last 10 s",
                           (unsigned long long)r->suppressed);
        }
        r->window_start = now;
        r->n = 0;
        r->suppressed = 0;
    }
    if (r->n < 10) {
        r->n++;
        return 1;
    }
    r->suppressed++;
    return 0;
}

void exec_preview(const char *data, size_t len, char *buf, size_t size)
{
    size_t n = len < size - 1 ? len : size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)data[i];
        buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    buf[n] = '\0';
}

static const struct gust_plugin_type types[] = {
    {
        .name = "exec_source",
        .kind = GUST_PLUGIN_SOURCE,
        .schema = exec_source_schema,
        .create = exec_source_create,
        .start = exec_reader_start,
        .stop = exec_reader_stop,
        .destroy = exec_reader_destroy,
    },
    {
        .name = "exec_stream",
        .kind = GUST_PLUGIN_SOURCE,
        .schema = exec_stream_schema,
        .create = exec_stream_create,
        .start = exec_reader_start,
        .stop = exec_reader_stop,
        .destroy = exec_reader_destroy,
    },
    {
        .name = "exec_sink",
        .kind = GUST_PLUGIN_SINK,
        .schema = exec_sink_schema,
        .create = exec_sink_create,
        .start = exec_sink_start,
        .deliver = exec_sink_deliver,
        .stop = exec_sink_stop,
        .destroy = exec_sink_destroy,
    },
};

static const struct gust_plugin_desc desc = {
    GUST_PLUGIN_DESC_INIT,
    .name = "exec",
    .version = "0.1.0",
    .types = types,
    .ntypes = sizeof(types) / sizeof(types[0]),
    .init = NULL,
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *api)
{
    exec_host = api;
    return &desc;
}
