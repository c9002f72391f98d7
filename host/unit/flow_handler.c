#include "../flow/flow.h"
#include "handlers.h"

#include <stdio.h>

static void flow_run_batch(void *impl, struct gust_batch *b)
{
    struct gust_flow *flow = impl;
    for (size_t i = 0; i < b->n; i++) {
        struct gust_err err = {{0}};
        int rc = gust_flow_run(flow, b->msgs[i].data, b->msgs[i].len, &b->emits, &err);
        if (rc != 0) {
            /* Undecodable input can never succeed; a script failure may be transient. */
            b->outcome[i] = rc == GUST_EINVAL ? GUST_OUTCOME_DEAD : GUST_OUTCOME_RETRY;
            snprintf(b->error[i], GUST_ERROR_MAX, "%s", err.msg);
        }
        b->emit_end[i] = b->emits.n;
    }
}

static void flow_destroy(void *impl)
{
    gust_flow_destroy(impl);
}

struct gust_handler gust_flow_handler(struct gust_flow *flow)
{
    return (struct gust_handler){.kind = "flow", .impl = flow, .run_batch = flow_run_batch, .destroy = flow_destroy};
}
