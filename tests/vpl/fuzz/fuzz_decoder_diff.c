/* libFuzzer target: the engine's event decoder against the yajl-based decoder it
 * replaced (ref_decoder.c). Both must accept or reject the same bytes and, when they
 * accept, yield the same event: fields in order, values bit for bit (strings after
 * escapes, int or float, -0.0), type, event time and truncation count. (yajl took a
 * complete value followed by an unterminated string, `{} "abc`; the reference's check
 * before yajl, host/common/json_text.c, refuses it now, as the decoder does.) The first
 * byte picks small or default limits so the truncation paths are reached too.
 *
 * Values the program does not read are skipped by a loop of their own (skip_value), so
 * each input is also decoded as the value of a read key (`{"m":...}`) and of an unread
 * one (`{"q":...}`, `{"q":[...]}`): each against the reference, and the first two
 * against each other, error message and byte included, so skipping rejects exactly
 * what decoding rejects, where it does. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "program.h"
#include "ref_decoder.h"
#include "vpl.h"

static const char program[] =
    "event A:\n  x: int\n"
    "stream F = A.where(x > 1 or s == \"a\" or m.k == 1 or len(arr) > 0 or ts > 0\n"
    "    or timestamp > 0 or f > 1.5 or b or n == null)\n"
    "    .emit(x: x, s: s)\n";

static struct vpl_program *prog;

static int same_val(const struct vval *a, const struct vval *b)
{
    if (a->t != b->t || a->n != b->n)
        return 0;
    switch (a->t) {
    case V_BOOL:
    case V_INT:
    case V_FLOAT:
        return memcmp(&a->u, &b->u, sizeof(a->u)) == 0;
    case V_STR:
        return a->n == 0 || memcmp(a->u.s, b->u.s, a->n) == 0;
    case V_ARR:
        for (uint32_t i = 0; i < a->n; i++)
            if (!same_val(&a->u.a[i], &b->u.a[i]))
                return 0;
        return 1;
    case V_MAP:
        for (uint32_t i = 0; i < a->n; i++)
            if (a->u.m[i].klen != b->u.m[i].klen ||
                memcmp(a->u.m[i].k, b->u.m[i].k, a->u.m[i].klen) != 0 ||
                !same_val(&a->u.m[i].v, &b->u.m[i].v))
                return 0;
        return 1;
    default:
        return 1;
    }
}

static void check(int ok, const char *what, const uint8_t *data, size_t size)
{
    if (ok)
        return;
    fprintf(stderr, "decoders differ (%s) on %zu bytes: %.*s\n", what, size, (int)size,
            (const char *)data);
    abort();
}

/* data decoded by both decoders, compared; the decoder's result and error message in
 * *rc and en[0..256). */
static void diff(struct decoder *nd, struct ref_decoder *rd, const uint8_t *data, size_t size,
                 int *rc, char *en)
{
    struct arena an, ar;
    arena_init(&an, 4096);
    arena_init(&ar, 4096);
    struct decoded dn, dr;
    char er[256];
    const char *json = (const char *)data;
    int rn = decoder_run(nd, &an, json, size, &dn, en, 256);
    *rc = rn;
    int rr = ref_decoder_run(rd, &ar, json, size, &dr, er, sizeof(er));
    check(rn == rr, "accepted by one only", data, size);
    if (rn == 0) {
        check((dn.type == NULL) == (dr.type == NULL), "event_type present", data, size);
        check(dn.type == NULL || (dn.type_len == dr.type_len &&
                                  memcmp(dn.type, dr.type, dn.type_len) == 0),
              "event_type", data, size);
        check(dn.has_time == dr.has_time && (!dn.has_time || dn.ev->time == dr.ev->time),
              "event time", data, size);
        check(dn.truncated == dr.truncated, "truncated", data, size);
        check(dn.ev->nf == dr.ev->nf, "field count", data, size);
        for (uint32_t i = 0; i < dn.ev->nf; i++) {
            check(event_keys(dn.ev)[i] == event_keys(dr.ev)[i], "field key", data, size);
            check(same_val(&dn.ev->vals[i], &dr.ev->vals[i]), "field value", data, size);
        }
    }
    arena_free(&an);
    arena_free(&ar);
}

/* data as the value of key in an object: `{"key":` data `}`, with open and close around
 * data when they are not NULL. */
static uint8_t *wrap(const char *key, const char *open, const uint8_t *data, size_t size,
                     const char *close, size_t *len)
{
    char head[16];
    int h = snprintf(head, sizeof(head), "{\"%s\":%s", key, open ? open : "");
    size_t c = close ? strlen(close) : 0;
    uint8_t *w = malloc((size_t)h + size + c + 1);
    if (w == NULL)
        abort();
    memcpy(w, head, (size_t)h);
    if (size > 0)
        memcpy(w + h, data, size);
    memcpy(w + h + size, close ? close : "", c);
    w[h + size + c] = '}';
    *len = (size_t)h + size + c + 1;
    return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vpl_error err;
    if (prog == NULL && vpl_program_compile(program, sizeof(program) - 1, "fuzz", &prog, &err) != 0)
        abort();
    struct vpl_limits lim = vpl_limits_default();
    if (size > 0 && (data[0] & 1)) {
        lim.max_depth = 3;
        lim.max_string = 8;
        lim.max_fields = 4;
        lim.max_array = 4;
    }
    struct decoder *nd = decoder_create(&prog->syms, &lim);
    struct ref_decoder *rd = ref_decoder_create(&prog->syms, &lim);
    int rc, rk, rs;
    char e[256], ek[256], es[256];
    /* e and rc: the raw input's and the array's results, not compared with others */
    diff(nd, rd, data, size, &rc, e);

    size_t nk, ns, na;
    uint8_t *kept = wrap("m", NULL, data, size, NULL, &nk);
    uint8_t *skipped = wrap("q", NULL, data, size, NULL, &ns);
    uint8_t *in_array = wrap("q", "[", data, size, "]", &na);
    diff(nd, rd, kept, nk, &rk, ek);
    diff(nd, rd, skipped, ns, &rs, es);
    diff(nd, rd, in_array, na, &rc, e);
    check(rk == rs, "kept and skipped value: accepted by one only", skipped, ns);
    check(rk == 0 || strcmp(ek, es) == 0, "kept and skipped value: the error", skipped, ns);
    free(kept);
    free(skipped);
    free(in_array);
    decoder_destroy(nd);
    ref_decoder_destroy(rd);
    return 0;
}
