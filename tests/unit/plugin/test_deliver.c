/* gust_instance_deliver with a plugin built with other element sizes than the host's:
 * its deliver() reads msgs[] and writes results[] with its own strides, as a plugin of
 * another minor would, and sees every field it knows at the right place. The bus and
 * the edge path are stubbed (no_bus.c). */
#include <stdio.h>
#include <string.h>

#include "../../check.h"

#include "../../../host/bus/port.h"
#include "../../../host/plugin/instance.h"
#include "../../../host/plugin/loader.h"
#include "no_bus.h"

/* The plugin's own layouts: a message with one more field at its end (a newer header),
 * and a result with a shorter error text (an older one). */
struct wide_msg {
    struct gust_msg m;
    uint64_t extra;
};
struct short_result {
    int status;
    char error[40];
};

static size_t seen;
static uint64_t seqs[8];
static uint64_t extras[8];
static char subjects[8][16];

static int wide_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    (void)ctx;
    const struct wide_msg *w = (const struct wide_msg *)(const void *)msgs;
    struct short_result *r = (struct short_result *)(void *)results;
    seen = n;
    for (size_t i = 0; i < n; i++) {
        seqs[i] = w[i].m.stream_seq;
        extras[i] = w[i].extra;
        snprintf(subjects[i], sizeof(subjects[i]), "%s", w[i].m.subject);
        CHECK(r[i].status == GUST_RETRY, "each result starts as the host set it");
        r[i].status = i % 2 ? GUST_REJECTED : GUST_DELIVERED;
        snprintf(r[i].error, sizeof(r[i].error), "why %zu", i);
    }
    return 0;
}

int main(void)
{
    struct gust_ptype pt = {
        .t = {.name = "wide", .kind = GUST_PLUGIN_SINK, .create = test_sink_create, .deliver = wide_deliver,
              .destroy = test_sink_destroy},
        .msg_size = sizeof(struct wide_msg),
        .result_size = sizeof(struct short_result),
    };
    struct gust_instance inst;
    CHECK(gust_instance_create(&inst, "sink", "w", &pt.t, NULL, NULL, NULL) == 0, "created");
    struct gust_msg msgs[3] = {
        {.subject = "ev.a", .data = "{}", .len = 2, .stream_seq = 11, .attempt = 1},
        {.subject = "ev.b", .data = "{}", .len = 2, .stream_seq = 12, .attempt = 2},
        {.subject = "ev.c", .data = "{}", .len = 2, .stream_seq = 13, .attempt = 3},
    };
    struct gust_result results[3];
    for (int round = 0; round < 2; round++) { /* the second reuses the scratch arrays */
        for (int i = 0; i < 3; i++) {
            results[i] = (struct gust_result){.status = GUST_RETRY};
        }
        CHECK(gust_instance_deliver(&inst, msgs, 3, results) == 0, "delivered");
        CHECK(seen == 3, "three messages");
        for (int i = 0; i < 3; i++) {
            CHECK(seqs[i] == (uint64_t)(11 + i), "each message's seq at the plugin's stride");
            CHECK(extras[i] == 0, "a field the host does not have reads zero");
            CHECK(strcmp(subjects[i], msgs[i].subject) == 0, "each message's subject");
        }
        CHECK(results[0].status == GUST_DELIVERED && results[1].status == GUST_REJECTED &&
                  results[2].status == GUST_DELIVERED,
              "each outcome back at the host's stride");
        CHECK(strcmp(results[1].error, "why 1") == 0 && strcmp(results[2].error, "why 2") == 0,
              "the error texts");
    }
    gust_instance_dispose(&inst);
    return check_result("deliver");
}
