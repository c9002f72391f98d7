/* A plugin built against the recorded ABI 1.0 headers (v1_0/gust/, never edited): the
 * loader test proves that this host, of a newer minor, still loads and runs it.
 *   old_once  a source that publishes `payload` to `subject` once when started
 *   old_file  a sink that appends "subject seq attempt len payload" lines to `path`;
 *             a payload holding "reject" is refused with that error text
 * Each type has several keys, so a host that read 1.0's schema, type or message arrays
 * with its own element sizes would see garbage. Keys are read by name, as in 1.0. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gust/plugin.h"

#if GUST_ABI_MINOR != 0
#error "build this against tests/plugins/abi/v1_0, not the current headers"
#endif

static const struct gust_host_api *api;

static const struct gust_schema_key once_schema[] = {
    {"subject", GUST_T_SUBJECT, NULL, GUST_K_REQUIRED, "where to publish"},
    {"payload", GUST_T_STR, "{\"old\":true}", 0, "what to publish"},
    {"label", GUST_T_STR, "old", 0, "logged at start"},
    {NULL, 0, NULL, 0, NULL},
};

static const struct gust_schema_key file_schema[] = {
    {"path", GUST_T_PATH, NULL, GUST_K_REQUIRED, "file the lines are appended to"},
    {"prefix", GUST_T_STR, "", 0, "written before each line"},
    {"limit", GUST_T_INT, "1000", 0, "messages accepted at most"},
    {NULL, 0, NULL, 0, NULL},
};

struct inst {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
    long delivered;
};

static int old_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx,
                      struct gust_err *err)
{
    (void)err;
    struct inst *o = calloc(1, sizeof(*o));
    o->inst = inst;
    o->cfg = cfg;
    *ctx = o;
    return 0;
}

static int once_start(void *ctx, struct gust_err *err)
{
    (void)err;
    struct inst *o = ctx;
    const char *payload = api->cfg_str(o->cfg, "payload");
    api->log(o->inst, GUST_LOG_INFO, "ABI 1.0 plugin (%s) publishing once to %s",
             api->cfg_str(o->cfg, "label"), api->cfg_str(o->cfg, "subject"));
    return api->publish(o->inst, api->cfg_str(o->cfg, "subject"), payload, strlen(payload), NULL, NULL);
}

static int file_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    struct inst *o = ctx;
    FILE *f = fopen(api->cfg_str(o->cfg, "path"), "a");
    if (f == NULL) {
        return GUST_EIO;
    }
    for (size_t i = 0; i < n; i++) {
        const struct gust_msg *m = &msgs[i];
        if (memmem(m->data, m->len, "reject", 6) != NULL) {
            results[i].status = GUST_REJECTED;
            snprintf(results[i].error, sizeof(results[i].error), "old_file refuses seq %llu",
                     (unsigned long long)m->stream_seq);
            continue;
        }
        fprintf(f, "%s%s %llu %u %zu %.*s\n", api->cfg_str(o->cfg, "prefix"), m->subject,
                (unsigned long long)m->stream_seq, m->attempt, m->len, (int)m->len, (const char *)m->data);
        results[i].status = o->delivered++ < api->cfg_int(o->cfg, "limit") ? GUST_DELIVERED : GUST_RETRY;
    }
    fclose(f);
    return 0;
}

static void old_destroy(void *ctx)
{
    free(ctx);
}

static const struct gust_plugin_type types[] = {
    {.name = "old_once",
     .kind = GUST_PLUGIN_SOURCE,
     .schema = once_schema,
     .create = old_create,
     .start = once_start,
     .destroy = old_destroy},
    {.name = "old_file",
     .kind = GUST_PLUGIN_SINK,
     .schema = file_schema,
     .create = old_create,
     .deliver = file_deliver,
     .destroy = old_destroy},
};

static const struct gust_plugin_desc desc = {
    .struct_size = sizeof(struct gust_plugin_desc),
    .abi_major = GUST_ABI_MAJOR,
    .abi_minor = GUST_ABI_MINOR,
    .name = "test_old_minor",
    .version = "1.0",
    .types = types,
    .ntypes = 2,
};

GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *host)
{
    api = host;
    return &desc;
}
