/* A well-formed source plugin for the loader tests. Variants are selected at build
 * time, so each refused case is a real shared object with one defect:
 *   TEST_ABI_MAJOR  another ABI major
 *   TEST_FAIL_INIT  init fails
 *   TEST_NO_ENTRY   the entry symbol is not exported
 * The good build publishes `payload` to `subject` once when started. */
#include <stdlib.h>
#include <string.h>

#include "gust/plugin.h"

#ifndef TEST_ABI_MAJOR
#define TEST_ABI_MAJOR GUST_ABI_MAJOR
#endif

static const struct gust_host_api *api;

struct once {
    struct gust_instance *inst;
    const struct gust_cfg *cfg;
};

static const struct gust_schema_key schema[] = {
    {"subject", GUST_T_SUBJECT, NULL, GUST_K_REQUIRED, "where to publish"},
    {"payload", GUST_T_STR, "{\"hello\":\"world\"}", 0, "what to publish"},
    {NULL, 0, NULL, 0, NULL},
};

static int once_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    (void)err;
    struct once *o = calloc(1, sizeof(*o));
    o->inst = inst;
    o->cfg = cfg;
    *ctx = o;
    return 0;
}

static int once_start(void *ctx, struct gust_err *err)
{
    (void)err;
    struct once *o = ctx;
    const char *payload = api->cfg_str(o->cfg, "payload");
    api->log(o->inst, GUST_LOG_INFO, "publishing once to %s", api->cfg_str(o->cfg, "subject"));
    return api->publish(o->inst, api->cfg_str(o->cfg, "subject"), payload, strlen(payload), NULL, NULL);
}

static void once_destroy(void *ctx)
{
    free(ctx);
}

static const struct gust_plugin_type types[] = {
    {.name = "test_once", .kind = GUST_PLUGIN_SOURCE, .schema = schema, .create = once_create,
     .start = once_start, .destroy = once_destroy},
};

static int test_init(const struct gust_host_api *host, struct gust_err *err)
{
    (void)host;
#ifdef TEST_FAIL_INIT
    strcpy(err->msg, "the test plugin refuses to start");
    return GUST_EINVAL;
#else
    (void)err;
    return 0;
#endif
}

static const struct gust_plugin_desc desc = {
    .struct_size = sizeof(struct gust_plugin_desc),
    .abi_major = TEST_ABI_MAJOR,
    .abi_minor = GUST_ABI_MINOR,
    .name = "test_source",
    .version = "1.0",
    .types = types,
    .ntypes = 1,
    .init = test_init,
};

#ifdef TEST_NO_ENTRY
const struct gust_plugin_desc *not_the_entry(const struct gust_host_api *host)
#else
GUST_PLUGIN_EXPORT const struct gust_plugin_desc *gust_plugin_entry(const struct gust_host_api *host)
#endif
{
    api = host;
    return &desc;
}
