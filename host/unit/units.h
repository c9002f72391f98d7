/* The running units, and how /units and /metrics show them. */
#ifndef GUST_UNIT_UNITS_H
#define GUST_UNIT_UNITS_H

#include <stddef.h>

#include "../common/buf.h"
#include "consumer.h"

struct gust_units {
    struct gust_consumer **v;
    size_t n;
};

/* Appends c (owned from here on). */
int gust_units_add(struct gust_units *u, struct gust_consumer *c);
/* Stops every unit (each between batches), then frees them. */
void gust_units_destroy(struct gust_units *u);
/* {"units": [{name, kind, source, state, counters..., last_error}]} */
void gust_units_render_json(struct gust_units *u, struct gust_buf *out);
/* Prometheus text, one series per unit and counter. */
void gust_units_render_metrics(struct gust_units *u, struct gust_buf *out);

#endif
