/* The allocator of a flow's Lua state: it counts the heap's bytes and refuses what
 * would take them over memory_max, so LuaJIT raises its memory error ("not enough
 * memory") in the script instead of the process growing without bound. Past the run's
 * deadline it also refuses large allocations: a C function that builds a big string
 * (upper, rep, format, concat) then stops at its next one, and the count hook ends the
 * script soon after. Shrinking and freeing never fail (LuaJIT relies on that). */
#include <stdlib.h>
#include <time.h>

#include "flow_int.h"

/* Allocations at least this large look at the clock. */
#define ALLOC_CHECK_BYTES (256u * 1024u)

void *gust_flow_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct gust_flow_alloc *a = ud;
    if (nsize == 0) {
        free(ptr);
        a->used -= ptr != NULL ? osize : 0;
        return NULL;
    }
    size_t old = ptr != NULL ? osize : 0;
    if (nsize > old) {
        size_t more = nsize - old;
        if (a->max > 0 && a->used + more > a->max) {
            a->refused++;
            return NULL;
        }
        if (more >= ALLOC_CHECK_BYTES && a->deadline_ns != 0 && gust_clock_mono_ns() >= a->deadline_ns) {
            a->late++;
            return NULL;
        }
    }
    void *p = realloc(ptr, nsize);
    if (p == NULL) {
        if (nsize > old) {
            return NULL;
        }
        p = ptr; /* a shrink that failed: the block stays, a little larger than counted */
    }
    a->used = a->used - old + nsize;
    if (a->used > a->peak) {
        a->peak = a->used;
    }
    return p;
}
