/* host/unit/topology.c (included, for its statics) and host/common/tally.c: the subject
 * filters an edge is drawn by, the tally's bound, and the sampler's rates, errors and
 * sparklines from the ring, on a registry with no unit and the front's producers only
 * (the units themselves are drawn by e2e_console against a real bus). */
#include "../../../host/unit/topology.c"

#include "../../check.h"

static void filters(void)
{
    static const struct {
        const char *filter, *subject;
        int want;
    } cases[] = {
        {"ev.orders", "ev.orders", 1},
        {"ev.orders", "ev.orders.out", 0},
        {"ev.*", "ev.orders", 1},
        {"ev.*", "ev.orders.out", 0},
        {"ev.>", "ev.orders.out", 1},
        {"ev.>", "ev", 0},
        {"ev.*.out", "ev.orders.out", 1},
        {"ev.*.out", "ev.orders.in", 0},
        {"ev.orders.out", "ev.orders", 0},
        {"ev.ord", "ev.orders", 0},
        {">", "ev", 1},
        {"*", "ev.x", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK(filter_matches(cases[i].filter, cases[i].subject) == cases[i].want, "%s against %s",
              cases[i].filter, cases[i].subject);
    }
}

static void count(void *ud, const char *subject, uint64_t n)
{
    (void)subject;
    *(uint64_t *)ud += n;
}

static void tally_bound(void)
{
    struct gust_tally t;
    gust_tally_init(&t);
    char s[64];
    for (int i = 0; i < GUST_TALLY_MAX + 10; i++) {
        snprintf(s, sizeof(s), "ev.k.%d", i);
        gust_tally_add(&t, s, 2);
    }
    gust_tally_add(&t, "ev.k.0", 1);
    char lng[GUST_TALLY_SUBJECT + 10];
    memset(lng, 'a', sizeof(lng) - 1);
    lng[sizeof(lng) - 1] = '\0';
    gust_tally_add(&t, lng, 1); /* too long to keep: with the others */
    uint64_t kept = 0;
    uint64_t others = gust_tally_each(&t, count, &kept);
    CHECK(t.n == GUST_TALLY_MAX, "%zu kept", t.n);
    CHECK(kept == 2 * GUST_TALLY_MAX + 1, "%llu", (unsigned long long)kept);
    CHECK(others == 2 * 10 + 1, "%llu", (unsigned long long)others);
    gust_tally_destroy(&t);
}

static void sampler(void)
{
    struct gust_units u;
    gust_units_init(&u);
    struct gust_tally ingested;
    gust_tally_init(&ingested);
    struct gust_topo_extra x = {.kind = "ingest", .name = "ingest", .state = "running", .tally = &ingested};
    struct gust_topology *t = gust_topology_create();
    int64_t now = gust_clock_mono_ms() - 600000; /* samples 5 s apart, ten minutes ago on */
    for (int i = 0; i < 40; i++) {
        gust_tally_add(&ingested, "ev.a", 50); /* 10 a second */
        gust_topology_sample(t, &u, &x, 1, now + i * GUST_TOPO_INTERVAL_MS);
    }
    CHECK(t->n == 2, "ingest and the DLQ: %zu", t->n);
    struct node *n = node_find(t, "ingest:ingest");
    CHECK(n != NULL && n->n == 40 && n->nsubj == 1);
    CHECK(n != NULL && n->subj[0].rate > 9.99 && n->subj[0].rate < 10.01, "%f",
          n != NULL ? n->subj[0].rate : 0);
    struct gust_buf out = {0};
    gust_topology_render(t, &u, &x, 1, "dlq.", 1, &out);
    gust_buf_append(&out, "", 1);
    CHECK(strstr(out.data,
                 "\"id\":\"ingest:ingest\",\"kind\":\"ingest\",\"name\":\"ingest\",\"state\":\"running\"") !=
              NULL,
          "%s", out.data);
    CHECK(strstr(out.data, "\"outputs\":[\"ev.a\"]") != NULL, "%s", out.data);
    CHECK(strstr(out.data, "\"id\":\"dlq:dlq\"") != NULL);
    CHECK(strstr(out.data, "\"edges\":[]") != NULL, "no consumer: no edge");
    /* 13 sparkline points of 15 s from 40 samples, each 10/s. */
    const char *spark = strstr(out.data, "\"out\":[");
    CHECK(spark != NULL && strncmp(spark, "\"out\":[10,10,10,10,10,10,10,10,10,10,10,10,10]", 46) == 0, "%s",
          spark);
    gust_buf_free(&out);
    /* A producer unseen for a whole ring is forgotten. */
    gust_topology_sample(t, &u, NULL, 0, now + (40 + GUST_TOPO_RING + 1) * GUST_TOPO_INTERVAL_MS);
    CHECK(t->n == 1 && node_find(t, "ingest:ingest") == NULL);
    gust_topology_destroy(t);
    gust_tally_destroy(&ingested);
}

int main(void)
{
    filters();
    tally_bound();
    sampler();
    return check_result("topology");
}
