/* Open addressing on the sequence, linear probing, backward-shift deletion. */
#include "waits.h"

#include <stdlib.h>

static size_t home(const struct gust_waits *w, uint64_t seq)
{
    return (size_t)(seq * 0x9e3779b97f4a7c15ull >> 20) & (w->cap - 1);
}

static size_t find(const struct gust_waits *w, uint64_t seq)
{
    size_t i = home(w, seq);
    while (w->seq[i] != 0 && w->seq[i] != seq) {
        i = (i + 1) & (w->cap - 1);
    }
    return i;
}

uint32_t gust_waits_get(const struct gust_waits *w, uint64_t seq)
{
    if (w->count == 0 || seq == 0) {
        return 0;
    }
    size_t i = find(w, seq);
    return w->seq[i] == seq ? w->n[i] : 0;
}

static void delete_at(struct gust_waits *w, size_t i)
{
    w->seq[i] = 0;
    w->count--;
    for (size_t j = (i + 1) & (w->cap - 1); w->seq[j] != 0; j = (j + 1) & (w->cap - 1)) {
        size_t h = home(w, w->seq[j]);
        /* Move j back into the hole when its home is not in (i, j]. */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            w->seq[i] = w->seq[j];
            w->n[i] = w->n[j];
            w->seq[j] = 0;
            i = j;
        }
    }
}

static int grow(struct gust_waits *w)
{
    size_t cap = w->cap ? w->cap * 2 : 64;
    uint64_t *seq = calloc(cap, sizeof(*seq));
    uint32_t *n = calloc(cap, sizeof(*n));
    if (seq == NULL || n == NULL) {
        free(seq);
        free(n);
        return -1;
    }
    struct gust_waits old = *w;
    *w = (struct gust_waits){seq, n, cap, 0};
    for (size_t i = 0; i < old.cap; i++) {
        if (old.seq[i] != 0) {
            size_t k = find(w, old.seq[i]);
            w->seq[k] = old.seq[i];
            w->n[k] = old.n[i];
            w->count++;
        }
    }
    free(old.seq);
    free(old.n);
    return 0;
}

void gust_waits_add(struct gust_waits *w, uint64_t seq)
{
    if (seq == 0) {
        return;
    }
    if (w->count >= GUST_WAITS_MAX) {
        /* Full: forget one (the first found), which then gets more attempts. */
        for (size_t i = 0; i < w->cap; i++) {
            if (w->seq[i] != 0) {
                delete_at(w, i);
                break;
            }
        }
    }
    if ((w->count + 1) * 2 > w->cap && grow(w) != 0) {
        return;
    }
    size_t i = find(w, seq);
    if (w->seq[i] == 0) {
        w->seq[i] = seq;
        w->n[i] = 0;
        w->count++;
    }
    w->n[i]++;
}

void gust_waits_forget(struct gust_waits *w, uint64_t seq)
{
    if (w->count == 0 || seq == 0) {
        return;
    }
    size_t i = find(w, seq);
    if (w->seq[i] == seq) {
        delete_at(w, i);
    }
}

void gust_waits_free(struct gust_waits *w)
{
    free(w->seq);
    free(w->n);
    *w = (struct gust_waits){0};
}
