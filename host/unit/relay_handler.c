#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"

/* Forwards every message unchanged to one subject: a bridge between subjects, and the
 * baseline the flow benchmarks compare with (the consumer core with no work in it). */
struct relay {
    char *to;
};

static void relay_run_batch(void *impl, struct gust_batch *b)
{
    struct relay *r = impl;
    for (size_t i = 0; i < b->n; i++) {
        if (gust_emits_push(&b->emits, r->to, b->msgs[i].data, b->msgs[i].len) != 0) {
            b->outcome[i] = GUST_OUTCOME_RETRY;
            snprintf(b->error[i], GUST_ERROR_MAX, "out of memory");
        }
        b->emit_end[i] = b->emits.n;
    }
}

static void relay_destroy(void *impl)
{
    struct relay *r = impl;
    if (r != NULL) {
        free(r->to);
        free(r);
    }
}

struct gust_handler gust_relay_handler(const char *to)
{
    struct relay *r = calloc(1, sizeof(*r));
    if (r != NULL && (r->to = strdup(to)) == NULL) {
        free(r);
        r = NULL;
    }
    return (struct gust_handler){.kind = "relay", .impl = r, .run_batch = relay_run_batch, .destroy = relay_destroy};
}
