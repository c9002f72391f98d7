#include "value.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

/* A deep copy is laid out in two regions: the arrays and maps of a value (vval and
 * vkv records, 8-byte aligned) and, after them, the bytes of its strings and map keys,
 * packed without padding. */
struct deep {
    size_t boxes; /* bytes of arrays and maps */
    size_t bytes; /* bytes of strings and map keys */
};

static void deep_size(const struct vval *v, struct deep *d)
{
    switch (v->t) {
    case V_STR:
        d->bytes += v->n;
        break;
    case V_ARR:
        d->boxes += (size_t)v->n * sizeof(struct vval);
        for (uint32_t i = 0; i < v->n; i++) {
            deep_size(&v->u.a[i], d);
        }
        break;
    case V_MAP:
        d->boxes += (size_t)v->n * sizeof(struct vkv);
        for (uint32_t i = 0; i < v->n; i++) {
            d->bytes += v->u.m[i].klen;
            deep_size(&v->u.m[i].v, d);
        }
        break;
    default:
        break;
    }
}

struct cursor {
    char *box;  /* next array or map record */
    char *byte; /* next string byte */
};

static const char *copy_bytes(struct cursor *cur, const char *s, uint32_t n)
{
    char *out = cur->byte;
    if (n > 0) {
        memcpy(out, s, n);
        cur->byte += n;
    }
    return out;
}

/* Copies what v points to at cur and returns the copy's view. */
static struct vval deep_copy(const struct vval *v, struct cursor *cur)
{
    struct vval out = *v;
    switch (v->t) {
    case V_STR:
        out.u.s = copy_bytes(cur, v->u.s, v->n);
        break;
    case V_ARR: {
        struct vval *a = (struct vval *)cur->box;
        cur->box += (size_t)v->n * sizeof(*a);
        for (uint32_t i = 0; i < v->n; i++) {
            a[i] = deep_copy(&v->u.a[i], cur);
        }
        out.u.a = a;
        break;
    }
    case V_MAP: {
        struct vkv *m = (struct vkv *)cur->box;
        cur->box += (size_t)v->n * sizeof(*m);
        for (uint32_t i = 0; i < v->n; i++) {
            m[i].k = copy_bytes(cur, v->u.m[i].k, v->u.m[i].klen);
            m[i].klen = v->u.m[i].klen;
            m[i].v = deep_copy(&v->u.m[i].v, cur);
        }
        out.u.m = m;
        break;
    }
    default:
        break;
    }
    return out;
}

static size_t event_head_size(uint32_t room)
{
    return sizeof(struct vpl_event) + (size_t)room * (sizeof(struct vval) + sizeof(uint32_t));
}

struct vpl_event *event_new(struct arena *a, uint32_t room)
{
    struct vpl_event *ev = arena_alloc(a, event_head_size(room));
    if (ev != NULL) {
        memset(ev, 0, sizeof(*ev));
    }
    return ev;
}

void event_seal(struct vpl_event *ev, uint32_t room, uint32_t n)
{
    if (n < room && n > 0) {
        memmove(ev->vals + n, event_keys_room(ev, room), (size_t)n * sizeof(uint32_t));
    }
    ev->nf = n;
}

static int kept(const struct fieldset *keep, uint32_t sym)
{
    for (uint32_t i = 0; i < keep->n; i++) {
        if (keep->sym[i] == sym) {
            return 1;
        }
    }
    return 0;
}

/* One block: header, values, keys, then the values' arrays and maps, then their bytes. */
struct vpl_event *event_freeze(const struct vpl_event *ev, const struct fieldset *keep)
{
    struct deep d = {0};
    const uint32_t *keys = event_keys(ev);
    uint32_t nf = 0;
    for (uint32_t i = 0; i < ev->nf; i++) {
        if (keep == NULL || kept(keep, keys[i])) {
            deep_size(&ev->vals[i], &d);
            nf++;
        }
    }
    size_t head = event_head_size(nf);
    size_t boxes_at = d.boxes ? ALIGN8(head) : head;
    size_t size = boxes_at + d.boxes + d.bytes;
    char *blk = malloc(size);
    if (blk == NULL) {
        return NULL;
    }
    struct vpl_event *out = (struct vpl_event *)blk;
    out->refs = 1;
    out->nf = nf;
    out->time = ev->time;
    out->size = size; /* shares its place with `frozen`, which a frozen event never reads */
    struct cursor cur = {.box = blk + boxes_at, .byte = blk + boxes_at + d.boxes};
    uint32_t *k = event_keys_room(out, nf);
    for (uint32_t i = 0, j = 0; i < ev->nf; i++) {
        if (keep == NULL || kept(keep, keys[i])) {
            k[j] = keys[i];
            out->vals[j++] = deep_copy(&ev->vals[i], &cur);
        }
    }
    return out;
}

int value_copy(struct arena *a, const struct vval *v, struct vval *out)
{
    struct deep d = {0};
    deep_size(v, &d);
    size_t n = d.boxes + d.bytes;
    char *blk = n ? arena_alloc(a, n) : NULL;
    if (n && blk == NULL) {
        return VPL_ENOMEM;
    }
    struct cursor cur = {.box = blk, .byte = blk ? blk + d.boxes : NULL};
    *out = deep_copy(v, &cur);
    return 0;
}

int value_eq(const struct vval *a, const struct vval *b)
{
    if (a->t == V_MISSING || b->t == V_MISSING) {
        return 0;
    }
    if (v_num(a) && v_num(b)) {
        if (a->t == V_INT && b->t == V_INT) {
            return a->u.i == b->u.i;
        }
        return v_as_f(a) == v_as_f(b);
    }
    if (a->t != b->t) {
        return 0;
    }
    switch (a->t) {
    case V_NULL:
        return 1;
    case V_BOOL:
        return a->u.i == b->u.i;
    case V_STR:
        return a->n == b->n && (a->n == 0 || memcmp(a->u.s, b->u.s, a->n) == 0);
    case V_ARR:
        if (a->n != b->n) {
            return 0;
        }
        for (uint32_t i = 0; i < a->n; i++) {
            if (!value_eq(&a->u.a[i], &b->u.a[i])) {
                return 0;
            }
        }
        return 1;
    case V_MAP:
        if (a->n != b->n) {
            return 0;
        }
        for (uint32_t i = 0; i < a->n; i++) {
            const struct vkv *x = &a->u.m[i];
            uint32_t j = 0;
            while (j < b->n && !(b->u.m[j].klen == x->klen && memcmp(b->u.m[j].k, x->k, x->klen) == 0)) {
                j++;
            }
            if (j == b->n || !value_eq(&x->v, &b->u.m[j].v)) {
                return 0;
            }
        }
        return 1;
    default:
        return 0;
    }
}

int value_order(const struct vval *a, const struct vval *b, int *out)
{
    if (v_num(a) && v_num(b)) {
        if (a->t == V_INT && b->t == V_INT) {
            *out = (a->u.i > b->u.i) - (a->u.i < b->u.i);
            return 1;
        }
        double x = v_as_f(a), y = v_as_f(b);
        if (isnan(x) || isnan(y)) {
            return 0;
        }
        *out = (x > y) - (x < y);
        return 1;
    }
    if (a->t == V_STR && b->t == V_STR) {
        uint32_t n = a->n < b->n ? a->n : b->n;
        int c = n ? memcmp(a->u.s, b->u.s, n) : 0;
        if (c == 0) {
            c = (a->n > b->n) - (a->n < b->n);
        }
        *out = (c > 0) - (c < 0);
        return 1;
    }
    return 0;
}

/* What the %.15g/%.16g/%.17g round-trip loop below prints for a non-integral f that
 * has a short exact decimal form (m / 10^k, m < 2^51, 1e-4 <= |f| < 1e15), without
 * snprintf and strtod: 0 when f has none (the loop then runs).
 *
 * For the smallest k whose nearest k-decimal m / 10^k reads back as f (that division
 * rounds once, so it is what strtod returns), m has the fewest significant digits of
 * any decimal that reads back, so %.Ng with the loop's N prints exactly m's digits:
 * N = 15 rounds to the only 15-digit decimal in f's rounding interval when one exists,
 * and N = 16 or 17 rounds to the nearest, which is m. */
static int short_fraction(double f, char out[32])
{
    static const double p10[18] = {1e0, 1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,
                                   1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17};
    double a = fabs(f);
    if (!(a >= 1e-4 && a < 1e15)) {
        return 0;
    }
    for (int k = 1; k <= 17; k++) {
        /* Below 2^51 the doubles that read back as a, scaled by 10^k, span less than
         * half a unit (an ulp of a times 10^k is under twice an ulp of x, at most 1/4):
         * only the integer m nearest a*10^k can be the k-digit form, and only when it
         * is within 1/4 of it. r is that distance, exact (fma rounds once, and the
         * difference is small). */
        double x = a * p10[k];
        if (x >= 2251799813685248.0) {
            return 0;
        }
        double m = nearbyint(x);
        double r = fma(a, p10[k], -m);
        if (fabs(r) > 0.25 || m / p10[k] != a) {
            continue;
        }
        uint64_t u = (uint64_t)m, scale = (uint64_t)p10[k];
        uint64_t ip = u / scale, fp = u % scale;
        char tmp[40], *q = u64_digits(fp, tmp + sizeof(tmp), k);
        *--q = '.';
        q = u64_digits(ip, q, 1);
        if (f < 0) {
            *--q = '-';
        }
        int n = (int)(tmp + sizeof(tmp) - q);
        memcpy(out, q, (size_t)n);
        out[n] = '\0';
        return n;
    }
    return 0;
}

size_t format_double(double f, char out[32], int json)
{
    if (!isfinite(f)) {
        /* JSON has no NaN or infinity; null is what a reader can still parse. */
        strcpy(out, json ? "null" : (isnan(f) ? "NaN" : (f > 0 ? "inf" : "-inf")));
        return strlen(out);
    }
    int n = 0;
    /* The range test first: converting a double beyond int64 is undefined. */
    if (fabs(f) < 1e15 && f == (double)(int64_t)f && !(f == 0 && signbit(f))) {
        /* Integral: the digits %.15g prints (no exponent below 1e15), without snprintf
         * and the strtod round trip, about 6k instructions a number. */
        char tmp[24], *e = tmp + sizeof(tmp);
        int64_t i = (int64_t)f;
        char *q = u64_digits(i < 0 ? 0 - (uint64_t)i : (uint64_t)i, e, 1);
        if (i < 0) {
            *--q = '-';
        }
        n = (int)(e - q);
        memcpy(out, q, (size_t)n);
        if (json) {
            out[n++] = '.';
            out[n++] = '0';
        }
        out[n] = '\0';
        return (size_t)n;
    }
    if ((n = short_fraction(f, out)) > 0) {
        return (size_t)n;
    }
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, 32, "%.*g", prec, f);
        if (strtod(out, NULL) == f) {
            break;
        }
    }
    if (json && strpbrk(out, ".eE") == NULL) {
        out[n++] = '.';
        out[n++] = '0';
        out[n] = '\0';
    }
    return (size_t)n;
}

int value_text(struct buf *b, const struct vval *v)
{
    char tmp[32];
    switch (v->t) {
    case V_MISSING:
        return 0;
    case V_STR:
        return buf_put(b, v->u.s, v->n);
    case V_INT:
        snprintf(tmp, sizeof(tmp), "%" PRId64, v->u.i);
        return buf_puts(b, tmp);
    case V_FLOAT:
        return buf_put(b, tmp, format_double(v->u.f, tmp, 0));
    default:
        return json_write_value(b, v);
    }
}
