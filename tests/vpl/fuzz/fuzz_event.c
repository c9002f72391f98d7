/* libFuzzer target: any bytes as input events. Each line is fed as one event to a
 * program with filters, sequences (Kleene, absence, cancellation) and windows of every
 * kind, so hostile payloads reach the decoder, the evaluator and the state. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_program.h"
#include "vpl.h"

static struct vpl_program *prog;

static void sink(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)ud, (void)stream, (void)topic, (void)json, (void)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vpl_error err;
    if (prog == NULL && vpl_program_compile(program, sizeof(program) - 1, "fuzz", &prog, &err) != 0)
        abort();
    struct vpl_limits lim = vpl_limits_default();
    lim.max_partitions = 64;
    lim.max_runs_per_partition = 64;
    lim.max_window_events = 64;
    lim.max_depth = 8;
    lim.max_string = 256;
    struct vpl_engine *eng = NULL;
    if (vpl_engine_create(prog, &lim, &eng, &err) != 0)
        abort();
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        vpl_engine_feed_json(eng, p, n, "A", 0, sink, NULL);
        p += n + 1;
    }
    struct vpl_stats st;
    vpl_engine_stats(eng, &st);
    vpl_engine_destroy(eng);
    return 0;
}
