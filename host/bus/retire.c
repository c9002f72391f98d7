#include "retire.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "gust/sdk.h"

struct retired {
    struct retired *next;
    natsConnection *nc;
    natsSubscription *sub;
    kvWatcher *watcher;
    int64_t free_at_ms;
};

/* A unit torn down retires one subscription, so the list holds what the last
 * GUST_RETIRE_MS retired: a short list, walked whole. */
static struct {
    pthread_mutex_t lock;
    struct retired *head;
} g = {PTHREAD_MUTEX_INITIALIZER, NULL};

/* Takes off the list the entries due by now_ms, or all of nc's when nc is not NULL. */
static struct retired *take(int64_t now_ms, const natsConnection *nc)
{
    struct retired *due = NULL;
    pthread_mutex_lock(&g.lock);
    for (struct retired **at = &g.head; *at != NULL;) {
        struct retired *r = *at;
        if (nc != NULL ? r->nc == nc : r->free_at_ms <= now_ms) {
            *at = r->next;
            r->next = due;
            due = r;
        } else {
            at = &r->next;
        }
    }
    pthread_mutex_unlock(&g.lock);
    return due;
}

static void destroy_list(struct retired *r)
{
    while (r != NULL) {
        struct retired *next = r->next;
        natsSubscription_Destroy(r->sub);
        kvWatcher_Destroy(r->watcher);
        free(r);
        r = next;
    }
}

static void retire(natsConnection *nc, natsSubscription *sub, kvWatcher *w)
{
    int64_t now = gust_clock_mono_ms();
    destroy_list(take(now, NULL));
    struct retired *r = malloc(sizeof(*r));
    if (r == NULL) {
        return; /* leaked rather than freed under a reader */
    }
    *r = (struct retired){.nc = nc, .sub = sub, .watcher = w, .free_at_ms = now + GUST_RETIRE_MS};
    pthread_mutex_lock(&g.lock);
    r->next = g.head;
    g.head = r;
    pthread_mutex_unlock(&g.lock);
}

void gust_retire_sub(natsConnection *nc, natsSubscription *sub)
{
    if (sub != NULL) {
        natsSubscription_Unsubscribe(sub);
        retire(nc, sub, NULL);
    }
}

void gust_retire_watcher(natsConnection *nc, kvWatcher *w)
{
    if (w != NULL) {
        kvWatcher_Stop(w);
        retire(nc, NULL, w);
    }
}

void gust_retire_closed(natsConnection *nc)
{
    if (nc != NULL) {
        destroy_list(take(0, nc));
    }
}
