/* A well-formed source plugin for the loader tests. Variants are selected at build
 * time, so each refused case is a real shared object with one defect:
 *   TEST_ABI_MAJOR  another ABI major
 *   TEST_ABI_MINOR  a minor newer than the host's
 *   TEST_FAIL_INIT  init fails
 *   TEST_NO_ENTRY   the entry symbol is not exported
 * The good build publishes `payload` to `subject` once when started. */
#include <stdlib.h>
#include <string.h>

#include "gust/plugin.h"
#include "gust/sdk.h"

#ifndef TEST_ABI_MAJOR
#define TEST_ABI_MAJOR GUST_ABI_MAJOR
#endif
#ifndef TEST_ABI_MINOR
#define TEST_ABI_MINOR GUST_ABI_MINOR
#endif

static const struct gust_host_api *api;

struct once_conf {
    const char *subject;
    const char *payload;
};

struct once {
    struct gust_instance *inst;
    struct once_conf conf;
};

static const struct gust_schema_key schema[] = {
    GUST_KEY(struct once_conf, subject, SUBJECT, NULL, GUST_K_REQUIRED, "where to publish"),
    GUST_KEY(struct once_conf, payload, STR, "{\"hello\":\"world\"}", 0, "what to publish"),
    GUST_KEY_END,
};

static int inits; /* init runs once per process, however many generations use the plugin */

static int once_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    struct once *o = calloc(1, sizeof(*o));
    o->inst = inst;
    if (gust_sdk_bind(api, cfg, schema, &o->conf, err) != 0) {
        free(o);
        return GUST_EINVAL;
    }
    *ctx = o;
    return 0;
}

static int once_start(void *ctx, struct gust_err *err)
{
    (void)err;
    struct once *o = ctx;
    api->log(o->inst, GUST_LOG_INFO, "publishing once to %s (init ran %d time(s))", o->conf.subject, inits);
    return api->publish(o->inst, o->conf.subject, o->conf.payload, strlen(o->conf.payload), NULL, NULL);
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
    inits++;
    return 0;
#endif
}

static const struct gust_plugin_desc desc = {
    /* GUST_PLUGIN_DESC_INIT written out, for the TEST_ABI_ variants */
    .struct_size = sizeof(struct gust_plugin_desc),
    .abi_major = TEST_ABI_MAJOR,
    .abi_minor = TEST_ABI_MINOR,
    .type_size = sizeof(struct gust_plugin_type),
    .key_size = sizeof(struct gust_schema_key),
    .msg_size = sizeof(struct gust_msg),
    .result_size = sizeof(struct gust_result),
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
