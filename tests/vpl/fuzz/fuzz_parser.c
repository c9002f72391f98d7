/* libFuzzer target: any bytes as a VPL program. A program that compiles is also run
 * over a few events, so the checker's promises (every name resolved, contexts right)
 * are exercised by the evaluator. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vpl.h"

static const char *events[] = {
    "{\"event_type\":\"A\",\"ts\":1000,\"x\":1,\"id\":\"a\",\"k\":\"p\",\"v\":2.5}",
    "{\"event_type\":\"B\",\"ts\":2000,\"x\":2,\"id\":\"a\",\"k\":\"p\",\"s\":\"str\"}",
    "{\"event_type\":\"C\",\"ts\":3000,\"x\":3,\"id\":\"b\",\"m\":{\"a\":[1,2]}}",
    "{\"event_type\":\"A\",\"ts\":900000,\"x\":-1,\"id\":\"b\",\"k\":\"q\"}",
    "{\"event_type\":\"B\",\"ts\":900001,\"x\":0,\"id\":\"b\",\"k\":\"q\"}",
};

static void sink(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)ud, (void)stream, (void)topic, (void)json, (void)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vpl_program *prog = NULL;
    struct vpl_error err;
    if (vpl_program_compile((const char *)data, size, "fuzz.vpl", &prog, &err) != 0)
        return 0;
    struct vpl_engine *eng = NULL;
    if (vpl_engine_create(prog, NULL, &eng, &err) == 0) {
        for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
            vpl_engine_feed_json(eng, events[i], strlen(events[i]), "A", 0, sink, NULL);
        vpl_engine_destroy(eng);
    }
    vpl_program_destroy(prog);
    return 0;
}
