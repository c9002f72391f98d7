/* The relay kind, the smallest: every message of `source` forwarded unchanged to `to`
 * (unit/relay_handler.c). The worked example of docs/ARCHITECTURE.md's "Add a unit
 * kind". */
#include "../unit/handlers.h"
#include "kind.h"
#include "unit_start.h"

static const struct gust_schema_key relay_schema[] = {
    GUST_UNIT_KEY(source, FILTER, NULL, GUST_K_REQUIRED, "subject consumed"),
    GUST_UNIT_KEY(to, SUBJECT, NULL, GUST_K_REQUIRED, "subject every message is forwarded to, unchanged"),
    GUST_UNIT_KEY(batch, INT, "256", 0, "messages fetched at once"),
    GUST_KEY_END,
};

static int start_relay(struct gust_host *host, const struct gust_unit_conf *u, struct gust_bus *bus, void **state,
                       struct gust_err *err)
{
    (void)state;
    struct gust_handler h = gust_relay_handler(u->k.to);
    if (h.impl == NULL) {
        return gust_err_set(err, GUST_ENOMEM, "out of memory");
    }
    struct gust_unit_start s = {.filter = u->k.source, .batch = u->k.batch};
    return gust_unit_start(host, u, &s, h, bus, err);
}

const struct gust_kind gust_kind_relay = {
    .name = "relay",
    .help = "",
    .schema = relay_schema,
    .start = start_relay,
};
