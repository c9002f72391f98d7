/* The map of deliveries that were not rejections (host/unit/waits.c) against a plain
 * array: random adds and forgets, growth, deletion that shifts entries back, and the
 * bound. */
#include <stdio.h>
#include <stdlib.h>

#include "../../host/unit/waits.h"

int main(void)
{
    struct gust_waits w = {0};
    enum { N = 5000 };
    static uint32_t want[N + 1];
    srand(7);
    for (int round = 0; round < 200000; round++) {
        uint64_t seq = 1 + (uint64_t)(rand() % N);
        if (rand() % 3 == 0) {
            gust_waits_forget(&w, seq);
            want[seq] = 0;
        } else {
            gust_waits_add(&w, seq);
            want[seq]++;
        }
        if (round % 997 == 0) {
            for (uint64_t s = 1; s <= N; s++) {
                if (gust_waits_get(&w, s) != want[s]) {
                    fprintf(stderr, "round %d: seq %llu: %u, want %u\n", round, (unsigned long long)s,
                            gust_waits_get(&w, s), want[s]);
                    return 1;
                }
            }
        }
    }
    /* The bound: past GUST_WAITS_MAX entries one is forgotten for each new one. */
    gust_waits_free(&w);
    for (uint64_t s = 1; s <= GUST_WAITS_MAX + 100; s++) {
        gust_waits_add(&w, s);
    }
    if (w.count != GUST_WAITS_MAX || gust_waits_get(&w, GUST_WAITS_MAX + 100) != 1) {
        fprintf(stderr, "bound: %zu entries\n", w.count);
        return 1;
    }
    gust_waits_free(&w);
    printf("waits: ok\n");
    return 0;
}
