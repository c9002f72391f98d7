/* libFuzzer target: snapshots, good and damaged.
 *
 * Input: event lines, a NUL, then damage. The events are fed to an engine of the fuzz
 * program, which is then snapshot and restored into a new engine; both are fed the
 * same probe events, and their alerts must agree (a restored engine behaves exactly as
 * the one it was taken from). Then the damage is applied to the snapshot: its first
 * byte says whether to recompute the checksum afterwards (so that the damage reaches
 * the parser instead of stopping at the hash) and whether to truncate (the next two
 * bytes: where), the rest are (2-byte position, xor byte) triples. The damaged
 * snapshot must be refused or restored, never read out of bounds, leak or crash; what
 * it restores must run. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_program.h"
#include "util.h"
#include "vpl.h"

static struct vpl_program *prog;

static const char *const probes[] = {
    "{\"event_type\":\"A\",\"ts\":900000,\"x\":5,\"k\":\"k1\",\"s\":\"az\"}",
    "{\"event_type\":\"B\",\"ts\":900500,\"x\":7,\"k\":\"k1\",\"s\":\"b\"}",
    "{\"event_type\":\"C\",\"ts\":901000,\"x\":1,\"k\":\"k1\"}",
    "{\"event_type\":\"B\",\"ts\":990000,\"x\":2,\"k\":\"k2\"}",
    "{\"event_type\":\"C\",\"ts\":2000000,\"x\":3,\"k\":\"k2\"}",
};

static void collect(void *ud, const char *stream, const char *topic, const char *json, size_t len)
{
    (void)stream, (void)topic;
    struct buf *b = ud;
    if (buf_put(b, json, len) != 0 || buf_putc(b, '\n') != 0)
        abort();
}

static struct vpl_engine *engine(void)
{
    struct vpl_limits lim = vpl_limits_default();
    lim.max_partitions = 64;
    lim.max_runs_per_partition = 64;
    lim.max_window_events = 64;
    lim.max_depth = 8;
    lim.max_string = 256;
    struct vpl_engine *e = NULL;
    struct vpl_error err;
    if (vpl_engine_create(prog, &lim, &e, &err) != 0)
        abort();
    return e;
}

static void probe(struct vpl_engine *e, struct buf *out)
{
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
        vpl_engine_feed_json(e, probes[i], strlen(probes[i]), NULL, 0, collect, out);
}

static void damage(uint8_t *snap, size_t *len, const uint8_t *d, size_t n)
{
    if (n == 0 || *len < 8)
        return;
    uint8_t flags = d[0];
    size_t i = 1;
    if ((flags & 2) && n >= 3) {
        *len = ((size_t)d[1] << 8 | d[2]) % (*len + 1);
        i = 3;
    }
    for (; i + 3 <= n && *len > 0; i += 3)
        snap[((size_t)d[i] << 8 | d[i + 1]) % *len] ^= d[i + 2];
    if ((flags & 1) && *len >= 8) {
        uint64_t h = hash_bytes(snap, *len - 8);
        for (int b = 0; b < 8; b++)
            snap[*len - 8 + b] = (uint8_t)(h >> (8 * b));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vpl_error err;
    if (prog == NULL && vpl_program_compile(program, sizeof(program) - 1, "fuzz", &prog, &err) != 0)
        abort();
    const uint8_t *nul = memchr(data, 0, size);
    size_t nev = nul ? (size_t)(nul - data) : size;
    struct vpl_engine *a = engine();
    struct buf first = {0};
    const char *p = (const char *)data, *end = p + nev;
    for (int64_t t = 1000; p < end; t += 1000) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        vpl_engine_feed_json(a, p, n, "A", t, collect, &first);
        p += n + 1;
    }
    buf_free(&first);
    void *snap = NULL;
    size_t len = 0;
    if (vpl_engine_snapshot(a, &snap, &len, &err) != 0)
        abort();

    struct vpl_engine *b = engine();
    if (vpl_engine_restore(b, snap, len, &err) != 0) {
        fprintf(stderr, "a good snapshot was refused: %s\n", err.msg);
        abort();
    }
    struct buf out_a = {0}, out_b = {0};
    probe(a, &out_a);
    probe(b, &out_b);
    if (out_a.len != out_b.len || (out_a.len && memcmp(out_a.p, out_b.p, out_a.len) != 0)) {
        fprintf(stderr, "restored engine differs:\n%s---\n%s", out_a.p ? out_a.p : "",
                out_b.p ? out_b.p : "");
        abort();
    }

    if (nul != NULL) {
        damage(snap, &len, nul + 1, size - nev - 1);
        struct vpl_engine *c = engine();
        int rc = vpl_engine_restore(c, snap, len, &err);
        if (rc != 0 && rc != VPL_ESNAPSHOT && rc != VPL_ENOMEM)
            abort();
        if (rc == 0) {
            struct buf out_c = {0};
            probe(c, &out_c);
            void *again = NULL;
            size_t n = 0;
            if (vpl_engine_snapshot(c, &again, &n, &err) == 0)
                free(again);
            buf_free(&out_c);
        }
        vpl_engine_destroy(c);
    }
    free(snap);
    buf_free(&out_a);
    buf_free(&out_b);
    vpl_engine_destroy(a);
    vpl_engine_destroy(b);
    return 0;
}
