/* Timed waits on gust_clock_mono_ms's clock (gust/sdk.h), so that a step of the wall
 * clock neither ends a wait early nor stretches it. Apart from gust/sdk.h because it
 * needs <pthread.h> (and so <time.h>), whose names a plugin may use for its own. */
#ifndef GUST_WAIT_H
#define GUST_WAIT_H

#include <pthread.h>
#include <stdint.h>

/* Makes a condition whose timed waits count on the monotonic clock; 0 or an errno. */
int gust_cond_init(pthread_cond_t *cond);

/* Waits on cond (made by gust_cond_init) under lock until at_ms, a gust_clock_mono_ms
 * time: 0 when woken (or spuriously: check the state again), ETIMEDOUT once at_ms has
 * passed. */
int gust_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t at_ms);

#endif
