/* The event decoder as it was on yajl 2.1 (host/vpl/json.c before the decoder of its
 * own), kept as the reference of fuzz_decoder_diff.c: the new decoder must accept and
 * reject the same inputs and build the same events. Test-only.
 *
 * Before yajl, the text goes through the flow decoder's check (host/common/json_text.c):
 * what yajl lets through and RFC 8259 forbids (\f and \v as white space, UTF-8 that
 * is not well formed) is refused, and lone surrogate escapes become \ufffd, the rule
 * both decoders follow. */
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "../../../host/common/json_text.h"
#include "json.h"
#include "ref_decoder.h"
#include "rfc3339.h"

enum ref_special { SP_NONE, SP_TYPE, SP_ATTS, SP_TS, SP_TIMESTAMP };

/* One value waiting on the stack for its container to close. */
struct ref_item {
    struct vval v;
    const char *k; /* key inside a nested map */
    uint32_t klen;
    uint32_t sym; /* key at the top level */
};

struct ref_frame {
    uint32_t base;   /* first item of this container on the stack */
    uint8_t is_map;
    uint8_t drop;    /* top level: the pending key is not kept as a field */
    uint8_t special; /* top level: what the pending key means to the decoder */
    const char *k;   /* pending key of a nested map */
    uint32_t klen;
    uint32_t sym;
};

struct ref_decoder {
    const struct symtab *syms;
    struct vpl_limits lim;
    struct arena *arena;
    struct ref_item *st;
    uint32_t nst, cap;
    struct ref_frame *fr; /* lim.max_depth + 1 frames */
    uint32_t depth;
    uint32_t skip; /* > 0 while inside a dropped container */
    int seen;
    int oom;
    const char *type;
    uint32_t type_len;
    int64_t t_at, t_ts, t_timestamp;
    uint8_t has_at, has_ts, has_timestamp;
    uint64_t truncated;
    struct vpl_event *ev;
};

/* yajl allocates through the scratch arena: its handle, lexer and stacks then cost
 * no malloc per event and vanish with the arena. Each block records its size so
 * realloc can copy. */
static void *ya_malloc(void *ctx, size_t sz)
{
    size_t *p = arena_alloc(ctx, sz + 16);
    if (p == NULL)
        return NULL;
    p[0] = sz;
    return (char *)p + 16;
}

static void *ya_realloc(void *ctx, void *old, size_t sz)
{
    void *p = ya_malloc(ctx, sz);
    if (p != NULL && old != NULL) {
        size_t was = *(size_t *)((char *)old - 16);
        memcpy(p, old, was < sz ? was : sz);
    }
    return p;
}

static void ya_free(void *ctx, void *p)
{
    (void)ctx;
    (void)p;
}

struct ref_decoder *ref_decoder_create(const struct symtab *syms, const struct vpl_limits *limits)
{
    struct ref_decoder *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    d->syms = syms;
    d->lim = *limits;
    d->fr = calloc(d->lim.max_depth + 1, sizeof(*d->fr));
    if (d->fr == NULL) {
        free(d);
        return NULL;
    }
    return d;
}

void ref_decoder_destroy(struct ref_decoder *d)
{
    if (d == NULL)
        return;
    free(d->st);
    free(d->fr);
    free(d);
}

static int push(struct ref_decoder *d, struct vval v)
{
    if (d->nst == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 64;
        struct ref_item *st = realloc(d->st, cap * sizeof(*st));
        if (st == NULL) {
            d->oom = 1;
            return 0;
        }
        d->st = st;
        d->cap = cap;
    }
    struct ref_frame *f = &d->fr[d->depth - 1];
    struct ref_item *it = &d->st[d->nst++];
    it->v = v;
    it->k = f->k;
    it->klen = f->klen;
    it->sym = f->sym;
    return 1;
}

/* Decides whether the value starting now is kept. A container that is not kept is
 * skipped whole. */
static int keep_value(struct ref_decoder *d)
{
    d->seen = 1;
    if (d->skip > 0 || d->depth == 0)
        return 0;
    struct ref_frame *f = &d->fr[d->depth - 1];
    if (f->drop)
        return 0;
    uint32_t max = d->depth == 1 ? d->lim.max_fields : d->lim.max_array;
    if (d->nst - f->base >= max) {
        d->truncated++;
        return 0;
    }
    return 1;
}

static int on_null(void *ctx)
{
    struct ref_decoder *d = ctx;
    return keep_value(d) ? push(d, v_null()) : 1;
}

static int on_bool(void *ctx, int b)
{
    struct ref_decoder *d = ctx;
    return keep_value(d) ? push(d, v_bool(b)) : 1;
}

static struct ref_frame *top_special(struct ref_decoder *d)
{
    if (d->skip == 0 && d->depth == 1 && d->fr[0].special != SP_NONE)
        return &d->fr[0];
    return NULL;
}

/* Beyond the largest double: the largest double of that sign (docs/VPL.md). */
static double clamp_double(double f)
{
    return f > DBL_MAX ? DBL_MAX : f < -DBL_MAX ? -DBL_MAX : f;
}

static int on_number(void *ctx, const char *s, size_t n)
{
    struct ref_decoder *d = ctx;
    char tmp[64];
    char *z = n < sizeof(tmp) ? tmp : arena_alloc(d->arena, n + 1);
    if (z == NULL) {
        d->oom = 1;
        return 0;
    }
    memcpy(z, s, n);
    z[n] = '\0';
    struct vval v;
    if (strpbrk(z, ".eE") == NULL) {
        errno = 0;
        long long i = strtoll(z, NULL, 10);
        /* Beyond i64 Varpulis reads a float (u64 included). */
        v = errno == ERANGE ? v_float(clamp_double(strtod(z, NULL))) : v_int(i);
    } else {
        v = v_float(clamp_double(strtod(z, NULL)));
    }
    struct ref_frame *f = top_special(d);
    if (f != NULL && v.t == V_INT) {
        if (f->special == SP_TS)
            d->t_ts = v.u.i, d->has_ts = 1;
        else if (f->special == SP_TIMESTAMP)
            d->t_timestamp = v.u.i, d->has_timestamp = 1;
    }
    return keep_value(d) ? push(d, v) : 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
    struct ref_decoder *d = ctx;
    struct ref_frame *f = top_special(d);
    if (f != NULL && f->special == SP_TYPE) {
        d->type = arena_strndup(d->arena, (const char *)s, n);
        d->type_len = (uint32_t)n;
        if (d->type == NULL)
            d->oom = 1;
        d->seen = 1;
        return d->type != NULL;
    }
    if (f != NULL && f->special == SP_ATTS) {
        int64_t ms;
        if (rfc3339_parse((const char *)s, n, &ms) == 0)
            d->t_at = ms, d->has_at = 1;
    }
    if (!keep_value(d))
        return 1;
    if (n > d->lim.max_string) {
        /* Cut on a UTF-8 character boundary so the value stays valid text. */
        n = d->lim.max_string;
        while (n > 0 && (s[n] & 0xC0) == 0x80)
            n--;
        d->truncated++;
    }
    char *p = arena_strndup(d->arena, (const char *)s, n);
    if (p == NULL) {
        d->oom = 1;
        return 0;
    }
    return push(d, v_str(p, (uint32_t)n));
}

static int open_container(struct ref_decoder *d, int is_map)
{
    if (d->depth == 0 && d->skip == 0 && !d->seen && is_map) {
        d->seen = 1; /* the top-level object */
    } else if (!keep_value(d)) {
        d->skip++;
        return 1;
    } else if (d->depth > d->lim.max_depth) {
        d->truncated++;
        d->skip++;
        return 1;
    }
    struct ref_frame *f = &d->fr[d->depth++];
    memset(f, 0, sizeof(*f));
    f->base = d->nst;
    f->is_map = (uint8_t)is_map;
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, 1);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, 0);
}

static int on_key(void *ctx, const unsigned char *s, size_t n)
{
    struct ref_decoder *d = ctx;
    if (d->skip > 0)
        return 1;
    struct ref_frame *f = &d->fr[d->depth - 1];
    if (d->depth > 1) {
        f->k = arena_strndup(d->arena, (const char *)s, n);
        f->klen = (uint32_t)n;
        if (f->k == NULL)
            d->oom = 1;
        return f->k != NULL;
    }
    const char *k = (const char *)s;
    f->special = SP_NONE;
    if (n == 10 && memcmp(k, "event_type", 10) == 0)
        f->special = SP_TYPE;
    else if (n == 10 && memcmp(k, "@timestamp", 10) == 0)
        f->special = SP_ATTS;
    else if (n == 2 && memcmp(k, "ts", 2) == 0)
        f->special = SP_TS;
    else if (n == 9 && memcmp(k, "timestamp", 9) == 0)
        f->special = SP_TIMESTAMP;
    const struct sym *sym = symtab_find(d->syms, k, n);
    f->drop = f->special == SP_TYPE || sym == NULL || !sym->field;
    f->sym = sym != NULL ? sym->id : SYM_NONE;
    return 1;
}

static int close_container(struct ref_decoder *d)
{
    if (d->skip > 0) {
        d->skip--;
        return 1;
    }
    struct ref_frame *f = &d->fr[d->depth - 1];
    uint32_t n = d->nst - f->base;
    struct ref_item *items = n > 0 ? &d->st[f->base] : NULL;
    if (d->depth == 1) {
        /* The event itself. A repeated key keeps its last value, as a JSON map would. */
        struct vpl_event *ev = event_new(d->arena, n);
        if (ev == NULL) {
            d->oom = 1;
            return 0;
        }
        uint32_t *keys = event_keys_room(ev, n);
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t j = 0;
            while (j < m && keys[j] != items[i].sym)
                j++;
            keys[j] = items[i].sym;
            ev->vals[j] = items[i].v;
            m += j == m;
        }
        event_seal(ev, n, m);
        d->ev = ev;
        d->nst = f->base;
        d->depth--;
        return 1;
    }
    struct vval v = {.t = f->is_map ? V_MAP : V_ARR, .n = n};
    if (f->is_map) {
        struct vkv *m = arena_alloc(d->arena, (n ? n : 1) * sizeof(*m));
        if (m == NULL) {
            d->oom = 1;
            return 0;
        }
        for (uint32_t i = 0; i < n; i++) {
            m[i].k = items[i].k;
            m[i].klen = items[i].klen;
            m[i].v = items[i].v;
        }
        v.u.m = m;
    } else {
        struct vval *a = arena_alloc(d->arena, (n ? n : 1) * sizeof(*a));
        if (a == NULL) {
            d->oom = 1;
            return 0;
        }
        for (uint32_t i = 0; i < n; i++)
            a[i] = items[i].v;
        v.u.a = a;
    }
    d->nst = f->base;
    d->depth--;
    return push(d, v);
}

static int on_end(void *ctx)
{
    return close_container(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

int ref_decoder_run(struct ref_decoder *d, struct arena *a, const char *json, size_t len,
                struct decoded *out, char *err, size_t errlen)
{
    d->arena = a;
    d->nst = d->depth = d->skip = 0;
    d->seen = d->oom = 0;
    d->type = NULL;
    d->type_len = 0;
    d->has_at = d->has_ts = d->has_timestamp = 0;
    d->truncated = 0;
    d->ev = NULL;

    struct gust_json_text t;
    int text = gust_json_text_check(json, len, &t);
    if (text < 0) {
        snprintf(err, errlen, "invalid JSON: %s at byte %zu", t.why, t.at);
        return VPL_EJSON;
    }
    if (text > 0) {
        char *fixed = arena_alloc(a, len + 1);
        if (fixed == NULL)
            return VPL_ENOMEM;
        gust_json_text_fix_lone(json, len, fixed);
        json = fixed;
    }
    yajl_alloc_funcs af = {ya_malloc, ya_realloc, ya_free, a};
    yajl_handle h = yajl_alloc(&callbacks, &af, d);
    if (h == NULL)
        return VPL_ENOMEM;
    yajl_status st = yajl_parse(h, (const unsigned char *)json, len);
    if (st == yajl_status_ok)
        st = yajl_complete_parse(h);
    if (d->oom)
        return VPL_ENOMEM;
    if (st != yajl_status_ok || !d->seen) {
        if (!d->seen && st == yajl_status_ok) {
            snprintf(err, errlen, "invalid JSON: empty input");
        } else {
            unsigned char *m = yajl_get_error(h, 0, (const unsigned char *)json, len);
            size_t n = m ? strcspn((char *)m, "\n") : 0;
            snprintf(err, errlen, "invalid JSON: %.*s", (int)n, m ? (char *)m : "");
        }
        return VPL_EJSON;
    }
    if (d->ev == NULL) {
        /* Not an object: Varpulis decodes it to an event without fields. */
        d->ev = arena_alloc(a, sizeof(*d->ev));
        if (d->ev == NULL)
            return VPL_ENOMEM;
        memset(d->ev, 0, sizeof(*d->ev));
    }
    out->ev = d->ev;
    out->type = d->type;
    out->type_len = d->type_len;
    out->has_time = 1;
    if (d->has_at)
        d->ev->time = d->t_at;
    else if (d->has_ts)
        d->ev->time = d->t_ts;
    else if (d->has_timestamp)
        d->ev->time = d->t_timestamp;
    else
        out->has_time = 0;
    out->truncated = d->truncated;
    return 0;
}

