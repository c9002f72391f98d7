/* What the plugin layer's tests share (no_bus.c): the bus and edge publishes refused,
 * and a sink type's create and destroy for a fake that keeps no state of its own. */
#ifndef GUST_TEST_PLUGIN_NO_BUS_H
#define GUST_TEST_PLUGIN_NO_BUS_H

#include "gust/plugin.h"

int test_sink_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err);
void test_sink_destroy(void *ctx);

#endif
