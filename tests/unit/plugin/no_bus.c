/* The plugin layer's tests run without a bus or an edge path: api.c needs their publish
 * functions only by name, and every publish through them is refused. */
#include "no_bus.h"

#include "../../../host/bus/port.h"
#include "../../../host/plugin/instance.h"

int gust_bus_publish(struct gust_bus *bus, const char *subject, const void *data, size_t len,
                     gust_publish_done_fn fn, void *ud, atomic_int *inflight)
{
    (void)bus, (void)subject, (void)data, (void)len, (void)fn, (void)ud, (void)inflight;
    return GUST_EINVAL;
}

int gust_bus_publish_msg(struct gust_bus *bus, const struct gust_pub *p, gust_publish_done_fn fn, void *ud,
                         atomic_int *inflight)
{
    (void)bus, (void)p, (void)fn, (void)ud, (void)inflight;
    return GUST_EINVAL;
}

int gust_edge_set_publish(struct gust_edge_set *set, const char *subject, const void *data, size_t len,
                          gust_publish_done_fn done, void *ud)
{
    (void)set, (void)subject, (void)data, (void)len, (void)done, (void)ud;
    return GUST_EINVAL;
}

int test_sink_create(struct gust_instance *inst, const struct gust_cfg *cfg, void **ctx, struct gust_err *err)
{
    (void)inst, (void)cfg, (void)err;
    *ctx = NULL;
    return 0;
}

void test_sink_destroy(void *ctx)
{
    (void)ctx;
}
