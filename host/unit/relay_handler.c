#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "handlers.h"

/* Forwards every message unchanged, headers included, to one subject: a bridge between
 * subjects, and the baseline the flow benchmarks compare with (the consumer core with no
 * work in it). */
struct relay {
    char *to;
    struct gust_header *kept; /* room for one message's forwarded headers */
    size_t kept_cap;
};

/* The headers forwarded: all but Nats-* ones. JetStream acts on those (an expected
 * sequence, a rollup), and the emit gets its own Nats-Msg-Id from the core, so that a
 * redelivered input is stored once. */
static int forwarded(struct relay *r, const struct gust_msg *m, size_t *n)
{
    *n = 0;
    if (m->nheaders > r->kept_cap) {
        struct gust_header *v = realloc(r->kept, m->nheaders * sizeof(*v));
        if (v == NULL) {
            return GUST_ENOMEM;
        }
        r->kept = v;
        r->kept_cap = m->nheaders;
    }
    for (size_t i = 0; i < m->nheaders; i++) {
        if (strncasecmp(m->headers[i].name, "Nats-", 5) != 0) {
            r->kept[(*n)++] = m->headers[i];
        }
    }
    return 0;
}

static void relay_run_batch(void *impl, struct gust_batch *b)
{
    struct relay *r = impl;
    for (size_t i = 0; i < b->n; i++) {
        const struct gust_msg *m = &b->msgs[i];
        size_t nh = 0;
        if (forwarded(r, m, &nh) != 0 ||
            gust_emits_push_with_headers(&b->emits, r->to, m->data, m->len, nh ? r->kept : NULL, nh) != 0) {
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
        free(r->kept);
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
    return (struct gust_handler){
        .kind = "relay", .impl = r, .wants_headers = 1, .run_batch = relay_run_batch, .destroy = relay_destroy};
}
