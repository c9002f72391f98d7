#define _GNU_SOURCE /* memmem, memrchr */
#include "builtins.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------- */

static char *scratch(const struct ectx *c, size_t n)
{
    return eval_alloc(c, n);
}

static int is_utf8_cont(unsigned char b)
{
    return (b & 0xC0) == 0x80;
}

/* Byte offset of character index ci in s (clamped to n). */
static uint32_t char_offset(const char *s, uint32_t n, int64_t ci)
{
    uint32_t i = 0;
    while (ci > 0 && i < n) {
        i++;
        while (i < n && is_utf8_cont((unsigned char)s[i])) {
            i++;
        }
        ci--;
    }
    return i;
}

static int64_t char_count(const char *s, uint32_t n)
{
    int64_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        k += !is_utf8_cont((unsigned char)s[i]);
    }
    return k;
}

static struct vval make_arr(const struct ectx *c, uint32_t n, struct vval **items)
{
    struct vval v = {.t = V_ARR, .n = n};
    *items = (struct vval *)scratch(c, (size_t)n * sizeof(struct vval));
    v.u.a = *items;
    return *items ? v : v_missing();
}

/* A NUL-terminated copy of a string value. */
static char *cstr(const struct ectx *c, const struct vval *v)
{
    char *p = scratch(c, (size_t)v->n + 1);
    if (p != NULL) {
        memcpy(p, v->u.s, v->n);
        p[v->n] = '\0';
    }
    return p;
}

#define STR1                                                                                                 \
    if (a[0].t != V_STR)                                                                                     \
    return v_missing()
#define STR2                                                                                                 \
    if (a[0].t != V_STR || a[1].t != V_STR)                                                                  \
    return v_missing()

/* ---- strings -------------------------------------------------------------------- */

/* The ASCII letters of the eight bytes in w (little-endian or not) with their case
 * flipped when they are upper (upper == 0) or lower (upper == 1) case: a byte is in
 * the range when its low seven bits reach the first letter and not past the last, and
 * its high bit is clear. */
static inline uint64_t case_map8(uint64_t w, int upper)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t low7 = w & ~high;
    uint64_t from = low7 + ones * (0x80 - (upper ? 'a' : 'A'));
    uint64_t past = low7 + ones * (0x80 - (upper ? 'z' : 'Z') - 1);
    uint64_t in = (from ^ past) & ~w & high;
    return w ^ (in >> 2); /* 0x80 >> 2 is the case bit, 0x20 */
}

static struct vval case_map(const struct ectx *c, const struct vval *a, int upper)
{
    STR1;
    char *p = scratch(c, a[0].n);
    if (p == NULL) {
        return v_missing();
    }
    /* ASCII only: other characters pass through unchanged. Eight bytes a step, then
     * one at a time. */
    uint32_t i = 0;
    for (; i + 8 <= a[0].n; i += 8) {
        uint64_t w;
        memcpy(&w, a[0].u.s + i, 8);
        w = case_map8(w, upper);
        memcpy(p + i, &w, 8);
    }
    for (; i < a[0].n; i++) {
        char ch = a[0].u.s[i];
        if (upper && ch >= 'a' && ch <= 'z') {
            ch = (char)(ch - 32);
        } else if (!upper && ch >= 'A' && ch <= 'Z') {
            ch = (char)(ch + 32);
        }
        p[i] = ch;
    }
    return v_str(p, a[0].n);
}

static struct vval f_lower(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    return case_map(c, a, 0);
}

static struct vval f_upper(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    return case_map(c, a, 1);
}

static struct vval f_trim(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    STR1;
    const char *s = a[0].u.s;
    uint32_t b = 0, e = a[0].n;
    while (b < e && strchr(" \t\r\n\f\v", s[b]) != NULL) {
        b++;
    }
    while (e > b && strchr(" \t\r\n\f\v", s[e - 1]) != NULL) {
        e--;
    }
    return v_str(s + b, e - b);
}

/* memmem, with memchr for the common one-byte separator (memmem's setup cost more than
 * the search on short strings). */
static const char *find_sep(const char *s, size_t n, const char *sep, size_t slen)
{
    return slen == 1 ? memchr(s, sep[0], n) : memmem(s, n, sep, slen);
}

static struct vval f_split(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    STR2;
    const char *s = a[0].u.s, *sep = a[1].u.s;
    uint32_t len = a[0].n, slen = a[1].n;
    uint32_t parts = 1;
    /* The parts are counted before the array is made; the first separators found are
     * kept, so most strings are searched once. */
    const char *seen[8];
    if (slen > 0) {
        for (const char *p = s; (p = find_sep(p, len - (uint32_t)(p - s), sep, slen)) != NULL; p += slen) {
            if (parts <= 8) {
                seen[parts - 1] = p;
            }
            parts++;
        }
    }
    struct vval *items;
    struct vval out = make_arr(c, parts, &items);
    if (out.t == V_MISSING) {
        return out;
    }
    const char *start = s;
    for (uint32_t i = 0; i + 1 < parts; i++) {
        const char *p = i < 8 ? seen[i] : find_sep(start, len - (uint32_t)(start - s), sep, slen);
        items[i] = v_str(start, (uint32_t)(p - start));
        start = p + slen;
    }
    items[parts - 1] = v_str(start, len - (uint32_t)(start - s));
    return out;
}

/* split(s, sep).first() and split(s, sep).last() without the array (fold.c rewrites
 * the calls): the part before the first separator, after the last one (separators
 * found left to right, as split finds them), or s when there is none. */
static struct vval f_split_first(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    STR2;
    const char *p = a[1].n > 0 ? find_sep(a[0].u.s, a[0].n, a[1].u.s, a[1].n) : NULL;
    return p != NULL ? v_str(a[0].u.s, (uint32_t)(p - a[0].u.s)) : a[0];
}

static struct vval f_split_last(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    STR2;
    const char *s = a[0].u.s, *sep = a[1].u.s, *start = s;
    uint32_t len = a[0].n, slen = a[1].n;
    if (slen == 1) {
        const char *p = memrchr(s, sep[0], len);
        start = p != NULL ? p + 1 : s;
    } else if (slen > 1) {
        for (const char *p = s; (p = find_sep(p, len - (uint32_t)(p - s), sep, slen)) != NULL; p += slen) {
            start = p + slen;
        }
    }
    return v_str(start, len - (uint32_t)(start - s));
}

static struct vval f_join(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)x;
    if (a[0].t != V_ARR || (n > 1 && a[1].t != V_STR)) {
        return v_missing();
    }
    struct buf b = {0};
    int rc = 0;
    for (uint32_t i = 0; i < a[0].n && rc == 0; i++) {
        if (i > 0 && n > 1) {
            rc = buf_put(&b, a[1].u.s, a[1].n);
        }
        if (rc == 0) {
            rc = value_text(&b, &a[0].u.a[i]);
        }
    }
    char *p = rc == 0 ? scratch(c, b.len) : NULL;
    if (p != NULL && b.len > 0) {
        memcpy(p, b.p, b.len);
    }
    struct vval v = p ? v_str(p, (uint32_t)b.len) : v_missing();
    buf_free(&b);
    return v;
}

static struct vval f_replace(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    if (a[0].t != V_STR || a[1].t != V_STR || a[2].t != V_STR) {
        return v_missing();
    }
    if (a[1].n == 0) {
        return a[0];
    }
    struct buf b = {0};
    const char *s = a[0].u.s, *end = s + a[0].n, *p;
    int rc = 0;
    while (rc == 0 && (p = memmem(s, (size_t)(end - s), a[1].u.s, a[1].n)) != NULL) {
        rc |= buf_put(&b, s, (size_t)(p - s));
        rc |= buf_put(&b, a[2].u.s, a[2].n);
        s = p + a[1].n;
    }
    rc |= buf_put(&b, s, (size_t)(end - s));
    char *out = rc == 0 ? scratch(c, b.len) : NULL;
    if (out != NULL && b.len > 0) {
        memcpy(out, b.p, b.len);
    }
    struct vval v = out && b.len <= UINT32_MAX ? v_str(out, (uint32_t)b.len) : v_missing();
    buf_free(&b);
    return v;
}

static struct vval f_starts_with(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    STR2;
    return v_bool(a[1].n <= a[0].n && memcmp(a[0].u.s, a[1].u.s, a[1].n) == 0);
}

static struct vval f_ends_with(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    STR2;
    return v_bool(a[1].n <= a[0].n && memcmp(a[0].u.s + a[0].n - a[1].n, a[1].u.s, a[1].n) == 0);
}

static struct vval f_contains(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (a[0].t == V_ARR) {
        for (uint32_t i = 0; i < a[0].n; i++) {
            if (value_eq(&a[0].u.a[i], &a[1])) {
                return v_bool(1);
            }
        }
        return v_bool(0);
    }
    STR2;
    return v_bool(a[1].n == 0 || memmem(a[0].u.s, a[0].n, a[1].u.s, a[1].n) != NULL);
}

static struct vval f_substring(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)x;
    if (a[0].t != V_STR || a[1].t != V_INT || (n > 2 && a[2].t != V_INT)) {
        return v_missing();
    }
    int64_t from = a[1].u.i < 0 ? 0 : a[1].u.i;
    uint32_t b = char_offset(a[0].u.s, a[0].n, from);
    uint32_t e = a[0].n;
    if (n > 2) {
        e = a[2].u.i <= from ? b : char_offset(a[0].u.s, a[0].n, a[2].u.i);
    }
    return v_str(a[0].u.s + b, e - b);
}

static struct vval f_len(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (a[0].t == V_STR) {
        return v_int(char_count(a[0].u.s, a[0].n));
    }
    if (a[0].t == V_ARR || a[0].t == V_MAP) {
        return v_int(a[0].n);
    }
    return v_missing();
}

static struct vval f_regex_match(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n;
    STR2;
    void *re = x->aux;
    char err[128];
    if (re == NULL && (re = regex_compile(a[1].u.s, a[1].n, err, sizeof(err))) == NULL) {
        return v_missing();
    }
    char *s = cstr(c, &a[0]);
    int hit = s != NULL && regexec(re, s, 0, NULL, 0) == 0;
    if (re != x->aux) {
        regex_destroy(re);
    }
    return s ? v_bool(hit) : v_missing();
}

/* ---- conversion ----------------------------------------------------------------- */

/* Strict parse of a whole string as a number, like Rust's str::parse. */
static int parse_num(const struct ectx *c, const struct vval *v, int want_int, struct vval *out)
{
    if (v->n == 0 || v->n > 400) {
        return 0;
    }
    double fast;
    if (!want_int && decimal_to_double(v->u.s, v->n, &fast)) {
        /* What strtod returns, without the copy and its cost; a plain decimal has none
         * of what the checks below refuse. */
        *out = v_float(fast);
        return 1;
    }
    if (memchr(v->u.s, 'x', v->n) || memchr(v->u.s, 'X', v->n) || strchr(" \t\r\n\f\v", v->u.s[0]) != NULL) {
        return 0;
    }
    char *s = cstr(c, v), *end;
    if (s == NULL) {
        return 0;
    }
    errno = 0;
    if (want_int) {
        long long i = strtoll(s, &end, 10);
        if (*end == '\0' && errno == 0) {
            *out = v_int(i);
            return 1;
        }
    }
    errno = 0;
    double f = strtod(s, &end);
    if (*end != '\0') {
        return 0;
    }
    if (want_int) {
        if (!isfinite(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0) {
            return 0;
        }
        *out = v_int((int64_t)f);
    } else {
        *out = v_float(f);
    }
    return 1;
}

static struct vval f_to_float(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    struct vval out;
    switch (a[0].t) {
    case V_INT:
        return v_float((double)a[0].u.i);
    case V_FLOAT:
        return a[0];
    case V_BOOL:
        return v_float(a[0].u.i ? 1.0 : 0.0);
    case V_STR:
        return parse_num(c, &a[0], 0, &out) ? out : v_missing();
    default:
        return v_missing();
    }
}

static struct vval f_to_int(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    struct vval out;
    switch (a[0].t) {
    case V_INT:
        return a[0];
    case V_FLOAT:
        if (!isfinite(a[0].u.f) || a[0].u.f >= 9223372036854775808.0 || a[0].u.f < -9223372036854775808.0) {
            return v_missing();
        }
        return v_int((int64_t)a[0].u.f);
    case V_BOOL:
        return v_int(a[0].u.i);
    case V_STR:
        return parse_num(c, &a[0], 1, &out) ? out : v_missing();
    default:
        return v_missing();
    }
}

static struct vval f_to_string(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    if (a[0].t == V_STR) {
        return a[0];
    }
    struct buf b = {0};
    if (a[0].t == V_NULL ? buf_puts(&b, "null") : value_text(&b, &a[0])) {
        return v_missing();
    }
    char *p = scratch(c, b.len);
    if (p != NULL && b.len) {
        memcpy(p, b.p, b.len);
    }
    struct vval v = p ? v_str(p, (uint32_t)b.len) : v_missing();
    buf_free(&b);
    return v;
}

/* ---- arrays --------------------------------------------------------------------- */

static struct vval f_first(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    return a[0].t == V_ARR && a[0].n ? a[0].u.a[0] : v_missing();
}

static struct vval f_last(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    return a[0].t == V_ARR && a[0].n ? a[0].u.a[a[0].n - 1] : v_missing();
}

static int cmp_vals(const void *x, const void *y)
{
    int o = 0;
    value_order(x, y, &o);
    return o;
}

static struct vval f_sort(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    if (a[0].t != V_ARR) {
        return v_missing();
    }
    int o;
    for (uint32_t i = 1; i < a[0].n; i++) {
        if (!value_order(&a[0].u.a[0], &a[0].u.a[i], &o)) {
            return v_missing(); /* mixed or unorderable elements */
        }
    }
    struct vval *items;
    struct vval out = make_arr(c, a[0].n, &items);
    if (out.t == V_MISSING) {
        return out;
    }
    memcpy(items, a[0].u.a, a[0].n * sizeof(*items));
    qsort(items, a[0].n, sizeof(*items), cmp_vals);
    return out;
}

static struct vval f_reverse(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    if (a[0].t == V_STR) {
        char *p = scratch(c, a[0].n);
        if (p == NULL) {
            return v_missing();
        }
        /* Reverse characters, keeping each UTF-8 sequence in order. */
        uint32_t o = a[0].n;
        for (uint32_t i = 0; i < a[0].n;) {
            uint32_t j = i + 1;
            while (j < a[0].n && is_utf8_cont((unsigned char)a[0].u.s[j])) {
                j++;
            }
            o -= j - i;
            memcpy(p + o, a[0].u.s + i, j - i);
            i = j;
        }
        return v_str(p, a[0].n);
    }
    if (a[0].t != V_ARR) {
        return v_missing();
    }
    struct vval *items;
    struct vval out = make_arr(c, a[0].n, &items);
    for (uint32_t i = 0; out.t != V_MISSING && i < a[0].n; i++) {
        items[i] = a[0].u.a[a[0].n - 1 - i];
    }
    return out;
}

static struct vval f_unique(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)n, (void)x;
    if (a[0].t != V_ARR) {
        return v_missing();
    }
    struct vval *items;
    struct vval out = make_arr(c, a[0].n, &items);
    if (out.t == V_MISSING) {
        return out;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < a[0].n; i++) {
        uint32_t j = 0;
        while (j < k && !value_eq(&items[j], &a[0].u.a[i])) {
            j++;
        }
        if (j == k) {
            items[k++] = a[0].u.a[i];
        }
    }
    out.n = k;
    return out;
}

static struct vval f_sum(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (a[0].t != V_ARR) {
        return v_missing();
    }
    /* Integers stay an integer sum unless a float is present or it overflows. */
    int64_t is = 0;
    double fs = 0;
    int all_int = 1;
    for (uint32_t i = 0; i < a[0].n; i++) {
        const struct vval *v = &a[0].u.a[i];
        if (!v_num(v)) {
            continue;
        }
        fs += v_as_f(v);
        if (all_int && (v->t != V_INT || __builtin_add_overflow(is, v->u.i, &is))) {
            all_int = 0;
        }
    }
    return all_int ? v_int(is) : v_float(fs);
}

static struct vval f_avg(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (a[0].t != V_ARR) {
        return v_missing();
    }
    double s = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < a[0].n; i++) {
        if (v_num(&a[0].u.a[i])) {
            s += v_as_f(&a[0].u.a[i]);
            k++;
        }
    }
    return k ? v_float(s / k) : v_null();
}

/* ---- math ----------------------------------------------------------------------- */

static struct vval f_abs(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (a[0].t == V_INT) {
        return a[0].u.i == INT64_MIN ? v_float(9223372036854775808.0)
                                     : v_int(a[0].u.i < 0 ? -a[0].u.i : a[0].u.i);
    }
    return a[0].t == V_FLOAT ? v_float(fabs(a[0].u.f)) : v_missing();
}

static struct vval f_round(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)x;
    if (n > 1 && a[1].t != V_INT) {
        return v_missing();
    }
    if (a[0].t == V_INT && n == 1) {
        return a[0];
    }
    if (!v_num(&a[0])) {
        return v_missing();
    }
    double f = v_as_f(&a[0]);
    if (n == 1) {
        return v_float(round(f));
    }
    int64_t d = a[1].u.i < -20 ? -20 : (a[1].u.i > 20 ? 20 : a[1].u.i);
    double m = pow(10.0, (double)d);
    return v_float(round(f * m) / m);
}

static struct vval f_floor(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (a[0].t == V_INT) {
        return a[0];
    }
    return a[0].t == V_FLOAT ? v_float(floor(a[0].u.f)) : v_missing();
}

static struct vval f_ceil(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (a[0].t == V_INT) {
        return a[0];
    }
    return a[0].t == V_FLOAT ? v_float(ceil(a[0].u.f)) : v_missing();
}

static struct vval f_sqrt(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (!v_num(&a[0]) || v_as_f(&a[0]) < 0) {
        return v_missing();
    }
    return v_float(sqrt(v_as_f(&a[0])));
}

static struct vval f_pow(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    if (!v_num(&a[0]) || !v_num(&a[1])) {
        return v_missing();
    }
    return v_float(pow(v_as_f(&a[0]), v_as_f(&a[1])));
}

/* min/max of the arguments, or of one array argument. */
static struct vval extreme(const struct vval *a, uint32_t n, int want)
{
    struct vval best = v_missing();
    for (uint32_t i = 0; i < n; i++) {
        int o;
        if (!v_num(&a[i]) && a[i].t != V_STR) {
            continue;
        }
        if (best.t == V_MISSING || (value_order(&a[i], &best, &o) && o == want)) {
            best = a[i];
        }
    }
    return best;
}

static struct vval f_min(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)x;
    if (n == 1 && a[0].t == V_ARR) {
        return extreme(a[0].u.a, a[0].n, -1);
    }
    return extreme(a, n, -1);
}

static struct vval f_max(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)x;
    if (n == 1 && a[0].t == V_ARR) {
        return extreme(a[0].u.a, a[0].n, 1);
    }
    return extreme(a, n, 1);
}

static struct vval f_clamp(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    int o;
    if (!v_num(&a[0]) || !v_num(&a[1]) || !v_num(&a[2])) {
        return v_missing();
    }
    if (value_order(&a[0], &a[1], &o) && o < 0) {
        return a[1];
    }
    if (value_order(&a[0], &a[2], &o) && o > 0) {
        return a[2];
    }
    return a[0];
}

/* ---- null ----------------------------------------------------------------------- */

static struct vval f_is_null(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)n, (void)x;
    return v_bool(a[0].t == V_NULL);
}

static struct vval f_coalesce(const struct ectx *c, const struct vval *a, uint32_t n, const struct expr *x)
{
    (void)c, (void)x;
    for (uint32_t i = 0; i < n; i++) {
        if (a[i].t != V_NULL) {
            return a[i];
        }
    }
    return v_null();
}

const struct builtin builtins[] = {
    {"lower", 1, 1, f_lower},
    {"upper", 1, 1, f_upper},
    {"trim", 1, 1, f_trim},
    {"split", 2, 2, f_split},
    {"join", 1, 2, f_join},
    {"replace", 3, 3, f_replace},
    {"starts_with", 2, 2, f_starts_with},
    {"ends_with", 2, 2, f_ends_with},
    {"contains", 2, 2, f_contains},
    {"substring", 2, 3, f_substring},
    {"len", 1, 1, f_len},
    {"regex_match", 2, 2, f_regex_match},
    {"to_float", 1, 1, f_to_float},
    {"to_int", 1, 1, f_to_int},
    {"to_string", 1, 1, f_to_string},
    {"first", 1, 1, f_first},
    {"last", 1, 1, f_last},
    {"sort", 1, 1, f_sort},
    {"reverse", 1, 1, f_reverse},
    {"unique", 1, 1, f_unique},
    {"sum", 1, 1, f_sum},
    {"avg", 1, 1, f_avg},
    {"abs", 1, 1, f_abs},
    {"round", 1, 2, f_round},
    {"floor", 1, 1, f_floor},
    {"ceil", 1, 1, f_ceil},
    {"sqrt", 1, 1, f_sqrt},
    {"pow", 2, 2, f_pow},
    {"min", 1, 255, f_min},
    {"max", 1, 255, f_max},
    {"clamp", 3, 3, f_clamp},
    {"is_null", 1, 1, f_is_null},
    {"coalesce", 1, 255, f_coalesce},
    /* Fused calls fold.c rewrites to; no program can name them (a name has no dot). */
    {"split.first", 2, 2, f_split_first},
    {"split.last", 2, 2, f_split_last},
    {NULL, 0, 0, NULL},
};

int builtin_find(const char *name, size_t len)
{
    for (int i = 0; builtins[i].name != NULL; i++) {
        if (strlen(builtins[i].name) == len && memcmp(builtins[i].name, name, len) == 0) {
            return i;
        }
    }
    return -1;
}

/* ---- regex ---------------------------------------------------------------------- */

/* glibc's regcomp copies a subexpression once per repetition ("x+" is "xx*",
 * "x{2,5}" five copies), so nested or stacked repetitions grow exponentially. Bound
 * the pattern length and the product of every repetition's copies, much as Rust's
 * regex bounds its compiled size; stacked quantifiers ("a++") are an error there too. */
#define REGEX_MAX_LEN 4096
#define REGEX_MAX_COPIES 10000

static int regex_too_big(const char *pat, size_t len)
{
    if (len > REGEX_MAX_LEN) {
        return 1;
    }
    uint64_t product = 1;
    int after_quantifier = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = pat[i];
        if (ch == '\\') {
            i++;
            after_quantifier = 0;
            continue;
        }
        uint64_t copies = 0;
        if (ch == '+') {
            copies = 2;
        } else if (ch == '*' || ch == '?') {
            copies = 1;
        } else if (ch == '{') {
            size_t j = i + 1;
            for (; j < len && pat[j] != '}'; j++) {
                if (pat[j] >= '0' && pat[j] <= '9') {
                    copies = copies * 10 + (uint64_t)(pat[j] - '0');
                } else if (pat[j] == ',') {
                    copies = 0; /* the upper bound counts; "{m,}" is m + 1 */
                }
                if (copies > REGEX_MAX_COPIES) {
                    return 1;
                }
            }
            copies = copies ? copies + 1 : 2;
            i = j;
        } else {
            after_quantifier = 0;
            continue;
        }
        /* A lazy '?' after a quantifier is dropped by the translation below. */
        if (after_quantifier && !(ch == '?')) {
            return 1;
        }
        after_quantifier = 1;
        product *= copies;
        if (product > REGEX_MAX_COPIES) {
            return 1;
        }
    }
    return 0;
}

void *regex_compile(const char *pat, size_t len, char *err, size_t errlen)
{
    if (regex_too_big(pat, len)) {
        snprintf(err, errlen,
                 "pattern too large or with stacked repetitions (at most %d "
                 "bytes and %d repeated copies)",
                 REGEX_MAX_LEN, REGEX_MAX_COPIES);
        return NULL;
    }
    int flags = REG_EXTENDED | REG_NOSUB;
    if (len >= 4 && memcmp(pat, "(?i)", 4) == 0) {
        flags |= REG_ICASE;
        pat += 4;
        len -= 4;
    }
    /* Each input byte becomes at most 14 bytes ("[^[:alnum:]_]"). */
    char *out = malloc(len * 14 + 1);
    regex_t *re = malloc(sizeof(*re));
    if (out == NULL || re == NULL) {
        free(out);
        free(re);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t o = 0;
    int in_class = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = pat[i];
        if (ch == '\\' && i + 1 < len) {
            char e = pat[++i];
            const char *rep = NULL;
            switch (e) {
            case 'd':
                rep = in_class ? "0-9" : "[0-9]";
                break;
            case 'D':
                rep = in_class ? NULL : "[^0-9]";
                break;
            case 'w':
                rep = in_class ? "[:alnum:]_" : "[[:alnum:]_]";
                break;
            case 'W':
                rep = in_class ? NULL : "[^[:alnum:]_]";
                break;
            case 's':
                rep = in_class ? "[:space:]" : "[[:space:]]";
                break;
            case 'S':
                rep = in_class ? NULL : "[^[:space:]]";
                break;
            case 't':
                rep = "\t";
                break;
            case 'n':
                rep = "\n";
                break;
            default:
                break;
            }
            if (rep != NULL) {
                size_t rl = strlen(rep);
                memcpy(out + o, rep, rl);
                o += rl;
            } else if (in_class) {
                out[o++] = e; /* inside [...] a backslash is literal in POSIX */
                if (e == '\\') {
                    out[o++] = e;
                }
            } else {
                out[o++] = '\\';
                out[o++] = e;
            }
            continue;
        }
        if (in_class) {
            if (ch == ']') {
                in_class = 0;
            }
            out[o++] = ch;
            continue;
        }
        if (ch == '[') {
            in_class = 1;
            out[o++] = ch;
            if (i + 1 < len && pat[i + 1] == '^') {
                out[o++] = pat[++i];
            }
            if (i + 1 < len && pat[i + 1] == ']') {
                out[o++] = pat[++i];
            }
            continue;
        }
        if (ch == '(' && i + 2 < len && pat[i + 1] == '?' && pat[i + 2] == ':') {
            out[o++] = '(';
            i += 2;
            continue;
        }
        /* A lazy quantifier matches the same strings as the greedy one. */
        if (ch == '?' && o > 0 &&
            (out[o - 1] == '*' || out[o - 1] == '+' || out[o - 1] == '?' || out[o - 1] == '}')) {
            continue;
        }
        if (ch == '\0') {
            free(out);
            free(re);
            snprintf(err, errlen, "a regex cannot contain a NUL byte");
            return NULL;
        }
        out[o++] = ch;
    }
    out[o] = '\0';
    int rc = regcomp(re, out, flags);
    free(out);
    if (rc != 0) {
        regerror(rc, re, err, errlen);
        free(re);
        return NULL;
    }
    return re;
}

void regex_destroy(void *re)
{
    if (re != NULL) {
        regfree(re);
        free(re);
    }
}
