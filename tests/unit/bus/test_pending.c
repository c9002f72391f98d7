/* Unit test of the PubAck ring: it grows as entries wait, keeps each entry's callback
 * exactly once across growth, refuses entries past its bound, and expires in id order. */
#include <stdio.h>
#include <stdlib.h>

#include "../../check.h"

#include "../../../host/bus/pending.h"

#define N 3000

static int calls[N + 2];
static int statuses[N + 2];


static void done(void *ud, int status, uint64_t seq, const char *error)
{
    (void)seq;
    (void)error;
    size_t i = (size_t)(uintptr_t)ud;
    calls[i]++;
    statuses[i] = status;
}

int main(void)
{
    struct gust_pending p;
    atomic_int inflight = 0;
    CHECK(gust_pending_init(&p, N) == 0, "init");
    CHECK(p.size < N, "the ring starts small (%zu)", p.size);

    /* Fill it past its first size: it grows, ids stay sequential. */
    uint64_t ids[N + 1];
    for (size_t i = 1; i <= N; i++) {
        ids[i] = gust_pending_add(&p, 1000 + (int64_t)i, done, (void *)(uintptr_t)i, &inflight);
        CHECK(ids[i] == i, "entry %zu got id %llu", i, (unsigned long long)ids[i]);
    }
    CHECK(gust_pending_live(&p) == N, "live %zu", gust_pending_live(&p));
    CHECK(atomic_load(&inflight) == N, "inflight %d", atomic_load(&inflight));

    /* Past the bound (rounded up to 4096): refused. */
    size_t taken = N;
    while (gust_pending_add(&p, 0, done, (void *)(uintptr_t)(N + 1), NULL) != 0) {
        taken++;
    }
    CHECK(taken == 4096, "%zu entries taken before the ring refused one, want 4096", taken);
    CHECK(p.size == 4096, "size %zu at the bound", p.size);

    /* Complete every third entry out of order, one twice: one call each. */
    for (size_t i = N; i >= 1; i--) {
        if (i % 3 == 0) {
            gust_pending_complete(&p, ids[i], 0, i, NULL);
        }
    }
    gust_pending_complete(&p, ids[3], 0, 3, NULL);
    for (size_t i = 1; i <= N; i++) {
        CHECK(calls[i] == (i % 3 == 0), "entry %zu called %d times after completion", i, calls[i]);
    }

    /* Expire the ones due before 1000 + N/2: exactly those, in order; then all. */
    gust_pending_expire(&p, 1000 + N / 2, -1, "timeout");
    for (size_t i = 1; i <= N; i++) {
        int want = i % 3 == 0 || 1000 + (int64_t)i <= 1000 + N / 2;
        CHECK(calls[i] == want, "entry %zu called %d times after expiry at %d", i, calls[i], 1000 + N / 2);
        CHECK(i % 3 == 0 || !want || statuses[i] == -1, "entry %zu status %d", i, statuses[i]);
    }
    gust_pending_expire(&p, -1, -2, "closed");
    for (size_t i = 1; i <= N; i++) {
        CHECK(calls[i] == 1, "entry %zu called %d times in all", i, calls[i]);
    }
    CHECK(gust_pending_live(&p) == 0, "live %zu at the end", gust_pending_live(&p));
    CHECK(atomic_load(&inflight) == 0, "inflight %d at the end", atomic_load(&inflight));

    /* A drained ring takes new entries again. */
    uint64_t id = gust_pending_add(&p, 0, done, (void *)(uintptr_t)1, NULL);
    CHECK(id == 4097, "id %llu after the ring drained", (unsigned long long)id);
    gust_pending_dispose(&p);

    return check_result("pending");
}
