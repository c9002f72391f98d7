#include "pending.h"

#include <stdlib.h>
#include <string.h>

#define INITIAL_SIZE 256

int gust_pending_init(struct gust_pending *p, size_t max_size)
{
    size_t max = 1;
    while (max < max_size) {
        max <<= 1;
    }
    memset(p, 0, sizeof(*p));
    p->size = max < INITIAL_SIZE ? max : INITIAL_SIZE;
    p->slots = calloc(p->size, sizeof(*p->slots));
    if (p->slots == NULL) {
        return -1;
    }
    p->max_size = max;
    p->next_id = 1;
    p->oldest_id = 1;
    pthread_mutex_init(&p->lock, NULL);
    return 0;
}

void gust_pending_dispose(struct gust_pending *p)
{
    free(p->slots);
    pthread_mutex_destroy(&p->lock);
}

/* Moves oldest_id past completed entries. Lock held. */
static void advance_oldest(struct gust_pending *p)
{
    while (p->oldest_id < p->next_id && p->slots[p->oldest_id & (p->size - 1)].id != p->oldest_id) {
        p->oldest_id++;
    }
}

/* Calls the entry's fn, then lets its owner know: the owner may be gone right after. */
static void finish(const struct gust_pending_slot *done, int status, uint64_t seq, const char *error)
{
    done->fn(done->ud, status, seq, error);
    if (done->inflight != NULL) {
        atomic_fetch_sub(done->inflight, 1);
    }
}

/* Doubles the ring. Live ids lie in [oldest_id, next_id), a span no longer than the old
 * size, so they land in distinct slots of the new one. Lock held. */
static int grow(struct gust_pending *p)
{
    size_t size = p->size * 2;
    struct gust_pending_slot *slots = calloc(size, sizeof(*slots));
    if (slots == NULL) {
        return -1;
    }
    for (uint64_t id = p->oldest_id; id < p->next_id; id++) {
        const struct gust_pending_slot *s = &p->slots[id & (p->size - 1)];
        if (s->id == id) {
            slots[id & (size - 1)] = *s;
        }
    }
    free(p->slots);
    p->slots = slots;
    p->size = size;
    return 0;
}

uint64_t gust_pending_add(struct gust_pending *p, int64_t deadline_ms, gust_publish_done_fn fn, void *ud,
                          atomic_int *inflight)
{
    pthread_mutex_lock(&p->lock);
    struct gust_pending_slot *s = &p->slots[p->next_id & (p->size - 1)];
    if (s->id != 0) {
        /* The slot still holds an older live entry: the ring is full. */
        if (p->size >= p->max_size || grow(p) != 0) {
            pthread_mutex_unlock(&p->lock);
            return 0;
        }
        s = &p->slots[p->next_id & (p->size - 1)];
    }
    uint64_t id = p->next_id++;
    *s = (struct gust_pending_slot){.id = id, .deadline_ms = deadline_ms, .fn = fn, .ud = ud, .inflight = inflight};
    p->live++;
    if (inflight != NULL) {
        atomic_fetch_add(inflight, 1);
    }
    pthread_mutex_unlock(&p->lock);
    return id;
}

void gust_pending_complete(struct gust_pending *p, uint64_t id, int status, uint64_t seq, const char *error)
{
    pthread_mutex_lock(&p->lock);
    struct gust_pending_slot *s = &p->slots[id & (p->size - 1)];
    if (id == 0 || s->id != id) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    struct gust_pending_slot done = *s;
    s->id = 0;
    p->live--;
    advance_oldest(p);
    pthread_mutex_unlock(&p->lock);
    finish(&done, status, seq, error);
}

void gust_pending_expire(struct gust_pending *p, int64_t now_ms, int status, const char *why)
{
    for (;;) {
        pthread_mutex_lock(&p->lock);
        advance_oldest(p);
        struct gust_pending_slot *s = &p->slots[p->oldest_id & (p->size - 1)];
        if (p->oldest_id == p->next_id || (now_ms >= 0 && s->deadline_ms > now_ms)) {
            pthread_mutex_unlock(&p->lock);
            return;
        }
        struct gust_pending_slot done = *s;
        s->id = 0;
        p->live--;
        pthread_mutex_unlock(&p->lock);
        finish(&done, status, 0, why);
    }
}

size_t gust_pending_live(struct gust_pending *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->live;
    pthread_mutex_unlock(&p->lock);
    return n;
}

uint32_t gust_pending_tag(const char *subject)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)subject; *c != '\0'; c++) {
        h = (h ^ *c) * 16777619u;
    }
    return h | 1;
}

void gust_pending_set_tag(struct gust_pending *p, uint64_t id, uint32_t tag)
{
    pthread_mutex_lock(&p->lock);
    struct gust_pending_slot *s = &p->slots[id & (p->size - 1)];
    if (id != 0 && s->id == id) {
        s->tag = tag;
    }
    pthread_mutex_unlock(&p->lock);
}

void gust_pending_fail_tag(struct gust_pending *p, uint32_t tag, int status, const char *why)
{
    for (;;) {
        pthread_mutex_lock(&p->lock);
        struct gust_pending_slot *found = NULL;
        for (uint64_t id = p->oldest_id; id < p->next_id; id++) {
            struct gust_pending_slot *s = &p->slots[id & (p->size - 1)];
            if (s->id == id && s->tag == tag) {
                found = s;
                break;
            }
        }
        if (found == NULL) {
            pthread_mutex_unlock(&p->lock);
            return;
        }
        struct gust_pending_slot done = *found;
        found->id = 0;
        p->live--;
        advance_oldest(p);
        pthread_mutex_unlock(&p->lock);
        finish(&done, status, 0, why); /* without the lock: fn may publish again */
    }
}
