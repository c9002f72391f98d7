/* A sink in stream order (sink_handler.c, GUST_ORDER_STREAM): the batch is held and the
 * messages deliver() left GUST_RETRY are handed to it again, in order, until they went;
 * they are marked in progress while they wait; a rejection is dead-lettered at once; a
 * message seen again after it was settled is not sent again; a stop leaves the rest to
 * the bus. The plugin is a fake keeping the contract of gust/plugin.h (nothing is sent
 * after a message that failed). The bus and the edge path are stubbed (no_bus.c). */
#include <stdlib.h>
#include <string.h>

#include "../../check.h"

#include "../../../host/bus/port.h"
#include "../../../host/plugin/instance.h"
#include "../../../host/plugin/loader.h"
#include "no_bus.h"
#include "../../../host/plugin/sink_handler.h"

#define SEQS 16

static int fails[SEQS];    /* per stream sequence: deliveries left that fail (RETRY) */
static int rejects[SEQS];  /* per stream sequence: 1 when the far end refuses it */
static uint64_t sent[64];  /* what went, in order */
static size_t nsent, calls;

static int fake_deliver(void *ctx, const struct gust_msg *msgs, size_t n, struct gust_result *results)
{
    (void)ctx;
    calls++;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = msgs[i].stream_seq;
        if (fails[s] > 0) {
            fails[s]--;
            break; /* the rest stays RETRY, unsent */
        }
        results[i].status = rejects[s] ? GUST_REJECTED : GUST_DELIVERED;
        snprintf(results[i].error, sizeof(results[i].error), "%s", rejects[s] ? "http 400" : "");
        if (!rejects[s]) {
            sent[nsent++] = s;
        }
    }
    return 0;
}

static size_t marked[SEQS];
static const struct gust_msg *batch_msgs;

static void progress(void *ud, size_t i)
{
    (void)ud;
    marked[batch_msgs[i].stream_seq]++;
}

static uint64_t acked_early[16];
static size_t nacked_early;

static void ack_now(void *ud, size_t i)
{
    (void)ud;
    acked_early[nacked_early++] = batch_msgs[i].stream_seq;
}

struct run {
    struct gust_msg msgs[8];
    int outcome[8];
    char error[8][GUST_ERROR_MAX];
    size_t emit_end[8];
};

static void run(struct gust_handler *h, struct run *r, const uint64_t *seqs, size_t n, atomic_int *stopping)
{
    for (size_t i = 0; i < n; i++) {
        r->msgs[i] = (struct gust_msg){.subject = "ev.o", .data = "{}", .len = 2, .stream_seq = seqs[i], .attempt = 1};
        r->outcome[i] = GUST_OUTCOME_OK;
    }
    struct gust_batch b = {.msgs = r->msgs, .n = n, .outcome = r->outcome, .error = r->error,
                           .emit_end = r->emit_end, .stopping = stopping, .progress = progress,
                           .ack_now = ack_now};
    batch_msgs = r->msgs;
    h->run_batch(h->impl, &b);
}

int main(void)
{
    struct gust_ptype pt = {
        .t = {.name = "fake", .kind = GUST_PLUGIN_SINK, .create = test_sink_create, .deliver = fake_deliver,
              .destroy = test_sink_destroy},
        .msg_size = sizeof(struct gust_msg),
        .result_size = sizeof(struct gust_result),
    };
    struct gust_instance *inst = calloc(1, sizeof(*inst));
    CHECK(inst && gust_instance_create(inst, "sink", "o", &pt.t, NULL, NULL, NULL) == 0, "created");
    inst->started = 1;
    struct gust_sink_opts o = {.ack_wait_ms = 30, .retry_delay_ms = 20, .retry_max_delay_ms = 40,
                               .order = GUST_ORDER_STREAM};
    struct gust_handler h = gust_sink_handler(inst, &o);
    atomic_int stopping = 0;
    struct run r;

    /* 3 fails twice, 5 is refused: 1 2, then 3 alone until it goes, then 4 6. */
    fails[3] = 2;
    rejects[5] = 1;
    const uint64_t first[] = {1, 2, 3, 4, 5, 6};
    run(&h, &r, first, 6, &stopping);
    const uint64_t want[] = {1, 2, 3, 4, 6};
    CHECK(nsent == 5 && memcmp(sent, want, sizeof(want)) == 0, "sent in order, each once (%zu sent)", nsent);
    CHECK(calls == 3, "held and handed again twice: %zu calls", calls);
    for (size_t i = 0; i < 6; i++) {
        CHECK(r.outcome[i] == (i == 4 ? GUST_OUTCOME_DEAD : GUST_OUTCOME_OK), "outcome of seq %zu: %d", i + 1,
              r.outcome[i]);
    }
    CHECK(strcmp(r.error[4], "http 400") == 0, "the rejection's reason: %s", r.error[4]);
    CHECK(nacked_early == 2 && acked_early[0] == 1 && acked_early[1] == 2,
          "1 and 2 acked while 3 was held (%zu acked early)", nacked_early);
    CHECK(marked[3] > 0 && marked[6] > 0 && marked[1] == 0, "the held ones marked in progress (%zu, %zu, %zu)",
          marked[3], marked[6], marked[1]);

    /* 4 again (the bus delivered it again while the batch was held): acked, not sent. */
    const uint64_t again[] = {4, 9};
    run(&h, &r, again, 2, &stopping);
    CHECK(nsent == 6 && sent[5] == 9, "only 9 sent (%zu sent, last %llu)", nsent, (unsigned long long)sent[nsent - 1]);
    CHECK(r.outcome[0] == GUST_OUTCOME_OK && r.outcome[1] == GUST_OUTCOME_OK, "both settled");

    /* 7 comes after 9 (never settled here: its first delivery lost): sent, not dropped. */
    const uint64_t late[] = {7};
    run(&h, &r, late, 1, &stopping);
    CHECK(nsent == 7 && sent[6] == 7 && r.outcome[0] == GUST_OUTCOME_OK, "the late one sent (%zu sent)", nsent);

    /* 10 fails once; its copy (and 11's) in the same batch settle with it, unsent. */
    fails[10] = 1;
    const uint64_t copies[] = {10, 11, 10, 11};
    run(&h, &r, copies, 4, &stopping);
    CHECK(nsent == 9 && sent[7] == 10 && sent[8] == 11, "10 and 11 sent once each (%zu sent)", nsent);
    CHECK(r.outcome[2] == GUST_OUTCOME_OK && r.outcome[3] == GUST_OUTCOME_OK, "the copies acked");

    /* Stopping: what failed is left to the bus (WAIT), after one try, copies too. */
    fails[12] = 1000;
    atomic_store(&stopping, 1);
    size_t before = calls;
    const uint64_t last[] = {12, 13, 12};
    run(&h, &r, last, 3, &stopping);
    CHECK(calls == before + 1, "one try when stopping (%zu)", calls - before);
    CHECK(r.outcome[0] == GUST_OUTCOME_WAIT && r.outcome[1] == GUST_OUTCOME_WAIT && r.outcome[2] == GUST_OUTCOME_WAIT,
          "all back to the bus, the copy too");

    h.destroy(h.impl);
    return check_result("sink_order");
}
