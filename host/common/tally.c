#include "tally.h"

#include <stdio.h>
#include <string.h>

void gust_tally_init(struct gust_tally *t)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
}

void gust_tally_destroy(struct gust_tally *t)
{
    pthread_mutex_destroy(&t->lock);
}

void gust_tally_add(struct gust_tally *t, const char *subject, uint64_t n)
{
    pthread_mutex_lock(&t->lock);
    if (t->last < t->n && strcmp(t->v[t->last].subject, subject) == 0) {
        t->v[t->last].count += n;
        pthread_mutex_unlock(&t->lock);
        return;
    }
    size_t i = 0;
    while (i < t->n && strcmp(t->v[i].subject, subject) != 0) {
        i++;
    }
    /* A subject too long to keep whole is counted with the others: a cut one would
     * name a subject that does not exist. */
    if (i == t->n && (t->n == GUST_TALLY_MAX || strlen(subject) >= GUST_TALLY_SUBJECT)) {
        t->others += n;
    } else {
        if (i == t->n) {
            snprintf(t->v[i].subject, sizeof(t->v[i].subject), "%s", subject);
            t->v[i].count = 0;
            t->n++;
        }
        t->v[i].count += n;
        t->last = i;
    }
    pthread_mutex_unlock(&t->lock);
}

uint64_t gust_tally_each(struct gust_tally *t, void (*fn)(void *ud, const char *subject, uint64_t count),
                         void *ud)
{
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n; i++) {
        fn(ud, t->v[i].subject, t->v[i].count);
    }
    uint64_t others = t->others;
    pthread_mutex_unlock(&t->lock);
    return others;
}
