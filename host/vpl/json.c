#include "json.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "rfc3339.h"

enum special { SP_NONE, SP_TYPE, SP_ATTS, SP_TS, SP_TIMESTAMP };

/* A name the decoder recognises at the top level: a program symbol, one of the four
 * keys with a meaning of their own, or both. What a key means to the event (symid,
 * drop) is settled once, when the table is built. */
struct dname {
    uint32_t hash, len;
    const char *name;
    const struct sym *sym;
    uint32_t symid; /* sym's id, or SYM_NONE */
    uint8_t special;
    uint8_t drop; /* the value is not a field of the event */
};

/* What names_get answers for a key the table does not have. */
static const struct dname unknown_name = {.symid = SYM_NONE, .special = SP_NONE, .drop = 1};

/* One value waiting on the stack for its container to close. */
struct item {
    struct vval v;
    const char *k; /* key inside a nested map */
    uint32_t klen;
    uint32_t sym; /* key at the top level */
};

/* A container whose values are kept. Values that are not (unread keys, past the
 * limits) are skipped whole by skip_value, which needs only the kinds of the containers
 * it is inside, on a byte stack of their own, so hostile nesting costs one byte a level
 * and no recursion. */
struct frame {
    uint32_t base; /* first item of this container on the stack */
    uint8_t is_map;
    uint8_t drop;    /* top level: the pending key is not kept as a field */
    uint8_t special; /* top level: what the pending key means to the decoder */
    const char *k;   /* pending key of a nested map */
    uint32_t klen;
    uint32_t sym;
};

/* A name looked up before and what it resolved to (len UINT32_MAX: none yet); text
 * has room for two 16-byte loads. */
struct name_memo {
    const struct dname *nm;
    uint32_t len;
    char text[32];
};
#define SHAPE_KEYS 16

struct decoder {
    const struct symtab *syms;
    struct vpl_limits lim;
    struct dname *names; /* open addressing, power of two */
    uint32_t mask;
    struct arena *arena;
    struct item *st;
    uint32_t nst, cap;
    struct frame *fr; /* lim.max_depth + 1 frames */
    uint32_t depth;
    uint8_t *sk; /* skip_value's containers: 1 map, 0 array */
    size_t capsk;
    int oom;
    const char *type;
    uint32_t type_len;
    int64_t t_at, t_ts, t_timestamp;
    uint8_t has_at, has_ts, has_timestamp;
    uint64_t truncated;
    struct vpl_event *ev;
    /* Events of one kind repeat their keys in one order, and a feed its event type:
     * the i-th key is compared with the last event's i-th, the type with the last
     * type, instead of being hashed and probed. */
    struct name_memo shape[SHAPE_KEYS];
    uint32_t nkey; /* top-level keys read so far in this event */
    struct name_memo type_memo;
    const char *err; /* what was wrong */
    size_t errpos;
};

/* Keys are hashed a word at a time: a byte loop over every key of every event was a
 * visible share of decoding. */
static uint32_t name_hash(const char *s, size_t n)
{
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ull;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (n > 0) {
        uint64_t w = 0;
        for (size_t i = 0; i < n; i++) {
            w |= (uint64_t)(unsigned char)s[i] << (8 * i);
        }
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return (uint32_t)h ^ (uint32_t)(h >> 29);
}

static int names_add(struct decoder *d, const char *name, uint32_t len, const struct sym *sym,
                     uint8_t special)
{
    uint32_t h = name_hash(name, len);
    for (uint32_t i = h & d->mask;; i = (i + 1) & d->mask) {
        struct dname *n = &d->names[i];
        if (n->name == NULL) {
            n->hash = h;
            n->len = len;
            n->name = name;
            n->sym = sym;
            n->special = special;
            return 0;
        }
        if (n->hash == h && n->len == len && memcmp(n->name, name, len) == 0) {
            if (sym != NULL) {
                n->sym = sym;
            }
            if (special != SP_NONE) {
                n->special = special;
            }
            return 0;
        }
    }
}

static const struct dname *names_get(const struct decoder *d, const char *s, size_t n)
{
    uint32_t h = name_hash(s, n);
    for (uint32_t i = h & d->mask;; i = (i + 1) & d->mask) {
        const struct dname *e = &d->names[i];
        if (e->name == NULL) {
            return &unknown_name;
        }
        if (e->hash == h && e->len == n && memcmp(e->name, s, n) == 0) {
            return e;
        }
    }
}

struct decoder *decoder_create(const struct symtab *syms, const struct vpl_limits *limits)
{
    struct decoder *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return NULL;
    }
    d->syms = syms;
    d->lim = *limits;
    d->fr = calloc(d->lim.max_depth + 1, sizeof(*d->fr));
    uint32_t cap = 16;
    while (cap < 2 * (syms->n + 4)) {
        cap *= 2;
    }
    d->names = calloc(cap, sizeof(*d->names));
    d->mask = cap - 1;
    if (d->fr == NULL || d->names == NULL) {
        decoder_destroy(d);
        return NULL;
    }
    for (uint32_t i = 0; i < SHAPE_KEYS; i++) {
        d->shape[i].len = UINT32_MAX;
    }
    d->type_memo.len = UINT32_MAX;
    for (uint32_t i = 0; i < syms->n; i++) {
        names_add(d, syms->v[i]->node.key, syms->v[i]->node.klen, syms->v[i], SP_NONE);
    }
    names_add(d, "event_type", 10, NULL, SP_TYPE);
    names_add(d, "@timestamp", 10, NULL, SP_ATTS);
    names_add(d, "ts", 2, NULL, SP_TS);
    names_add(d, "timestamp", 9, NULL, SP_TIMESTAMP);
    for (uint32_t i = 0; i <= d->mask; i++) {
        struct dname *n = &d->names[i];
        n->symid = n->sym != NULL ? n->sym->id : SYM_NONE;
        n->drop = n->special == SP_TYPE || n->sym == NULL || !n->sym->field;
    }
    return d;
}

void decoder_destroy(struct decoder *d)
{
    if (d == NULL) {
        return;
    }
    free(d->st);
    free(d->fr);
    free(d->sk);
    free(d->names);
    free(d);
}

/* Whether s[0..n) is m's text: with SSE2 and 32 bytes to read at s (a key has its
 * value after it), one or two 16-byte compares instead of a call to memcmp. */
static inline int memo_hit(const struct name_memo *m, const char *s, size_t n, const char *end)
{
    if (m->len != n) {
        return 0;
    }
#if defined(__SSE2__)
    if (end - s >= 32) {
        const __m128i *a = (const __m128i *)(const void *)s, *b = (const __m128i *)(const void *)m->text;
        uint32_t eq = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(a), _mm_loadu_si128(b)));
        if (n <= 16) { /* most keys */
            return (~eq & ((UINT32_C(1) << n) - 1)) == 0;
        }
        eq |= (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(a + 1), _mm_loadu_si128(b + 1)))
              << 16;
        return (~eq & (n >= 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1)) == 0;
    }
#else
    (void)end;
#endif
    return memcmp(m->text, s, n) == 0;
}

/* names_get, remembered in m. */
static __attribute__((noinline)) const struct dname *memo_fill(const struct decoder *d, struct name_memo *m,
                                                               const char *s, size_t n)
{
    const struct dname *nm = names_get(d, s, n);
    if (n <= sizeof(m->text)) {
        memcpy(m->text, s, n);
        m->len = (uint32_t)n;
        m->nm = nm;
    }
    return nm;
}

/* names_get through m; s[0..n) is followed by more input up to end. */
static inline const struct dname *names_memo(const struct decoder *d, struct name_memo *m, const char *s,
                                             size_t n, const char *end)
{
    return memo_hit(m, s, n, end) ? m->nm : memo_fill(d, m, s, n);
}

const struct sym *decoder_find(struct decoder *d, const char *name, size_t len)
{
    return names_memo(d, &d->type_memo, name, len, name)->sym;
}

static int fail(struct decoder *d, const char *p, const char *what)
{
    if (d->err == NULL) {
        d->err = what;
        d->errpos = (size_t)(uintptr_t)p;
    }
    return -1;
}

static int push(struct decoder *d, struct vval v)
{
    if (d->nst == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 64;
        struct item *st = realloc(d->st, cap * sizeof(*st));
        if (st == NULL) {
            d->oom = 1;
            return -1;
        }
        d->st = st;
        d->cap = cap;
    }
    struct frame *f = &d->fr[d->depth - 1];
    struct item *it = &d->st[d->nst++];
    it->v = v;
    it->k = f->k;
    it->klen = f->klen;
    it->sym = f->sym;
    return 0;
}

/* Whether the value starting now in a kept container is kept (called once a value:
 * a value dropped by the limits is counted here). */
static int keep_value(struct decoder *d)
{
    struct frame *f = &d->fr[d->depth - 1];
    if (f->drop) {
        return 0;
    }
    uint32_t max = d->depth == 1 ? d->lim.max_fields : d->lim.max_array;
    if (d->nst - f->base >= max) {
        d->truncated++;
        return 0;
    }
    return 1;
}

/* The top-level frame while its direct value is being read, or NULL. */
static struct frame *top_special(struct decoder *d)
{
    if (d->depth == 1 && d->fr[0].special != SP_NONE) {
        return &d->fr[0];
    }
    return NULL;
}

/* ---- strings ---- */

/* Bytes a string can hold without a second look: printable ASCII but '"' and '\'. */
static const uint8_t plain[256] = {
#define R8(v) v, v, v, v, v, v, v, v
    R8(0), R8(0), R8(0), R8(0),                                  /* 0x00-0x1f: control characters */
    1,     1,     0,     1,     1, 1, 1, 1, R8(1), R8(1), R8(1), /* 0x20-0x3f, '"' at 0x22 */
    R8(1), R8(1), R8(1), 1,     1, 1, 1, 0, 1,     1,     1,     /* 0x40-0x5f, '\' at 0x5c */
    R8(1), R8(1), R8(1), R8(1),                                  /* 0x60-0x7f */
#undef R8
};

/* Length of the prefix of s[0..n) made of plain bytes, eight at a time (a little-
 * endian load): a byte is plain when it is not below 0x20, at or above 0x80, '"' or
 * '\\'. */
static inline __attribute__((always_inline)) size_t plain_run(const unsigned char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    size_t i = 0;
#if defined(__SSE2__)
    /* Sixteen at a time: a signed compare flags bytes below 0x20 and, as negative, the
     * ones at or above 0x80. */
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    for (; i + 16 <= n; i += 16) {
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, bslash)),
                                   _mm_cmplt_epi8(w, space));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        if (mask != 0) {
            return i + (size_t)__builtin_ctz(mask);
        }
    }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; i + 8 <= n; i += 8) {
        uint64_t w, q, b;
        memcpy(&w, s + i, 8);
        q = w ^ (ones * '"');
        b = w ^ (ones * '\\');
        uint64_t lt = (w - ones * 0x20) & ~w; /* exact for "some byte < 0x20" once */
        uint64_t zq = (q - ones) & ~q;        /* no byte has its high bit set */
        uint64_t zb = (b - ones) & ~b;
        uint64_t hit = (lt | zq | zb | w) & high;
        if (hit != 0) { /* the lowest flag is exact (borrows only run upwards) */
            return i + (size_t)(__builtin_ctzll(hit) >> 3);
        }
    }
#else
    (void)ones, (void)high;
#endif
    while (i < n && plain[s[i]]) {
        i++;
    }
    return i;
}

static int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The length of the UTF-8 sequence at p (a byte from 0x80), 0 when the input ends
 * inside it, -1 when it is not well formed: a lead byte and its continuation bytes, the
 * second one's range narrowed after E0, ED, F0 and F4 (Unicode's table 3-7), so no
 * overlong form, no surrogate, nothing above U+10FFFF. */
static inline long utf8_seq(const unsigned char *p, const unsigned char *e)
{
    unsigned c = *p;
    long more = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
    if (more == 0) {
        return -1;
    }
    unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80, hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    for (long i = 1; i <= more; i++) {
        if (p + i >= e) {
            return 0;
        }
        if ((p[i] >> 6) != 0x2 || (i == 1 && (p[1] < lo || p[1] > hi))) {
            return -1;
        }
    }
    return more + 1;
}

/* Checks the string whose opening quote is at *pp as yajl's lexer does (escapes,
 * control characters), and its UTF-8 as RFC 8259 wants it, well formed (yajl checks
 * only the lead and continuation bits), and leaves *pp after the closing quote. *body
 * and *blen: the raw bytes between the quotes; *esc: whether there is a backslash among
 * them. Out of line, and scan_string always inlined: when gcc kept a copy of
 * scan_string with this inlined into it, every string paid for the slow path's
 * registers (about 130 instructions an event on the orders program once the UTF-8
 * check grew; 730 fewer than before with the split, by callgrind). */
static __attribute__((noinline)) int scan_string_full(struct decoder *d, const char **pp, const char *end,
                                                      const char **body, size_t *blen, int *esc)
{
    const unsigned char *p = (const unsigned char *)*pp + 1, *e = (const unsigned char *)end;
    const unsigned char *start = p;
    *esc = 0;
    for (;;) {
        p += plain_run(p, (size_t)(e - p));
        if (p >= e) {
            return fail(d, (const char *)p, "unterminated string");
        }
        unsigned c = *p;
        if (c == '"') {
            break;
        }
        if (c == '\\') {
            *esc = 1;
            if (p + 1 >= e) {
                return fail(d, (const char *)p, "unterminated string");
            }
            unsigned x = p[1];
            if (x == 'u') {
                for (int i = 2; i < 6; i++) {
                    if (p + i >= e) {
                        return fail(d, (const char *)p, "unterminated string");
                    }
                    if (!is_hex(p[i])) {
                        return fail(d, (const char *)p + i, "a \\u escape needs four hex digits");
                    }
                }
                p += 6;
            } else if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' ||
                       x == 't') {
                p += 2;
            } else {
                return fail(d, (const char *)p + 1, "invalid escape in string");
            }
            continue;
        }
        if (c < 0x20) {
            return fail(d, (const char *)p, "control character in string");
        }
        long n = utf8_seq(p, e);
        if (n <= 0) {
            return fail(d, (const char *)p, n == 0 ? "unterminated string" : "invalid UTF-8 in string");
        }
        p += n;
    }
    *body = (const char *)start;
    *blen = (size_t)(p - start);
    *pp = (const char *)p + 1;
    return 0;
}

/* scan_string for the common case, inlined where tokens are read: printable ASCII up to
 * the closing quote. */
static inline __attribute__((always_inline)) int
scan_string(struct decoder *d, const char **pp, const char *end, const char **body, size_t *blen, int *esc)
{
    const char *p = *pp + 1;
    size_t n = plain_run((const unsigned char *)p, (size_t)(end - p));
    if (p + n < end && p[n] == '"') {
        *body = p;
        *blen = n;
        *esc = 0;
        *pp = p + n + 1;
        return 0;
    }
    /* Through locals: the caller's own stay in registers. */
    const char *q = *pp, *b = NULL;
    size_t bl = 0;
    int e = 0, rc = scan_string_full(d, &q, end, &b, &bl, &e);
    *pp = q, *body = b, *blen = bl, *esc = e;
    return rc;
}

static unsigned hex4(const unsigned char *s, const unsigned char *end)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = s + i < end ? s[i] : 0;
        if (c >= 'A') {
            c = (unsigned char)((c & ~0x20) - 7);
        }
        c = (unsigned char)(c - '0');
        v = (v << 4) | c;
    }
    return v;
}

static size_t put_utf8(unsigned cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)((cp >> 6) | 0xC0);
        o[1] = (char)((cp & 0x3F) | 0x80);
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)((cp >> 12) | 0xE0);
        o[1] = (char)(((cp >> 6) & 0x3F) | 0x80);
        o[2] = (char)((cp & 0x3F) | 0x80);
        return 3;
    }
    if (cp < 0x200000) {
        o[0] = (char)((cp >> 18) | 0xF0);
        o[1] = (char)(((cp >> 12) & 0x3F) | 0x80);
        o[2] = (char)(((cp >> 6) & 0x3F) | 0x80);
        o[3] = (char)((cp & 0x3F) | 0x80);
        return 4;
    }
    o[0] = '?';
    return 1;
}

/* The bytes of a scanned string (body[0..n), closing quote at body[n], the input
 * ending at end) with escapes decoded, into the arena, NUL-terminated. scan_string has
 * checked them, so every \u has four hex digits. A \u escape of a surrogate that is not
 * half of a pair (a high one not followed by a \u escape of a low one, or a low one
 * alone) becomes U+FFFD, the replacement character, and nothing after it is lost: the
 * rule of the flow decoder (gust_json_text_fix_lone), so both read the same text alike.
 * Only strings with a backslash come here: the hot path never does. */
static char *decode_string(struct decoder *d, const char *body, size_t n, const char *end, size_t *outlen)
{
    char *out = arena_alloc(d->arena, n + 8);
    if (out == NULL) {
        d->oom = 1;
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)body, *e = (const unsigned char *)end;
    size_t o = 0, beg = 0, i = 0;
    while (i < n) {
        if (s[i] != '\\') {
            i++;
            continue;
        }
        memcpy(out + o, s + beg, i - beg);
        o += i - beg;
        char u[4];
        const char *rep = "?";
        size_t rlen = 1, used = 2; /* bytes of the escape */
        switch (s[i + 1]) {
        case 'r':
            rep = "\r";
            break;
        case 'n':
            rep = "\n";
            break;
        case '\\':
            rep = "\\";
            break;
        case '/':
            rep = "/";
            break;
        case '"':
            rep = "\"";
            break;
        case 'f':
            rep = "\f";
            break;
        case 'b':
            rep = "\b";
            break;
        case 't':
            rep = "\t";
            break;
        case 'u': {
            unsigned cp = hex4(s + i + 2, e);
            used = 6;
            if ((cp & 0xF800) == 0xD800) {
                unsigned lo = i + 12 <= n && s[i + 6] == '\\' && s[i + 7] == 'u' ? hex4(s + i + 8, e) : 0;
                if (cp <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    used = 12;
                } else {
                    cp = 0xFFFD;
                }
            }
            rlen = put_utf8(cp, u);
            rep = u;
            break;
        }
        default:
            break;
        }
        memcpy(out + o, rep, rlen);
        o += rlen;
        i += used;
        beg = i;
    }
    if (n > beg) {
        memcpy(out + o, s + beg, n - beg);
        o += n - beg;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

/* ---- numbers ---- */

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Clinger's fast path: a mantissa up to 2^53 and a power of ten up to 1e22 are both
 * exact doubles, so one multiplication or division rounds once, correctly: the very
 * double strtod returns. 1 and *out, or 0 when m * 10^exp10 needs strtod. */
static inline int exact_decimal(uint64_t m, int exp10, int neg, double *out)
{
    if (m > (UINT64_C(1) << 53) || (m != 0 && (exp10 < -22 || exp10 > 22))) {
        return 0;
    }
    double f = (double)m;
    if (m != 0) {
        f = exp10 < 0 ? f / pow10_exact[-exp10] : f * pow10_exact[exp10];
    }
    *out = neg ? -f : f;
    return 1;
}

int decimal_to_double(const char *s, size_t n, double *out)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) {
        neg = s[i++] == '-';
    }
    /* Up to 19 digits, leading zeros included, fit m; more go to strtod. */
    uint64_t m = 0;
    size_t d0 = i;
    for (unsigned dg; i < n && (dg = (unsigned)(unsigned char)s[i] - '0') < 10; i++) {
        m = m * 10 + dg;
    }
    size_t digits = i - d0;
    int exp10 = 0;
    if (i < n && s[i] == '.') {
        size_t f0 = ++i;
        for (unsigned dg; i < n && (dg = (unsigned)(unsigned char)s[i] - '0') < 10; i++) {
            m = m * 10 + dg;
        }
        digits += i - f0;
        exp10 = -(int)(i - f0);
    }
    if (digits == 0 || digits > 19) {
        return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0, e = 0, edig = 0;
        if (i < n && (s[i] == '-' || s[i] == '+')) {
            eneg = s[i++] == '-';
        }
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, edig++) {
            if (e < 10000) {
                e = e * 10 + (s[i] - '0');
            }
        }
        if (edig == 0) {
            return 0;
        }
        exp10 += eneg ? -e : e;
    }
    return i == n && exact_decimal(m, exp10, neg, out);
}

/* Reads the JSON number at *pp (grammar checked as yajl's lexer does) and, when v is
 * not NULL, its value, in the same pass: the digits accumulate while they are checked.
 * An integer that fits i64 stays one (beyond, Varpulis reads a float, u64 included); a
 * decimal with at most 19 significant digits goes through exact_decimal, as in
 * decimal_to_double; anything else to strtod. */
static inline __attribute__((always_inline)) int scan_number(struct decoder *d, const char **pp,
                                                             const char *end, struct vval *v)
{
    const char *s = *pp, *p = s;
    /* m takes every significant digit, one comparison a digit; past 19 it wraps, and
     * digits sends the number to strtod. */
    uint64_t m = 0;
    size_t digits = 0; /* significant */
    int exp10 = 0, is_float = 0;
    int neg = p < end && *p == '-';
    p += neg;
    if (p >= end || *p < '0' || *p > '9') {
        return fail(d, p, "a digit is required after the minus sign");
    }
    if (*p == '0') {
        p++;
    } else {
        const char *d0 = p;
        for (unsigned dg; p < end && (dg = (unsigned)(unsigned char)*p - '0') < 10; p++) {
            m = m * 10 + dg;
        }
        digits = (size_t)(p - d0);
    }
    if (p < end && *p == '.') {
        is_float = 1;
        p++;
        if (p >= end || *p < '0' || *p > '9') {
            return fail(d, p, "a digit is required after the decimal point");
        }
        const char *f0 = p;
        if (m == 0) { /* leading zeros of the mantissa are not significant */
            while (p < end && *p == '0') {
                p++;
            }
        }
        const char *d0 = p;
        for (unsigned dg; p < end && (dg = (unsigned)(unsigned char)*p - '0') < 10; p++) {
            m = m * 10 + dg;
        }
        digits += (size_t)(p - d0);
        /* Bounded so a huge fraction cannot overflow it: past -1000 the number is 0 or
         * goes to strtod either way. */
        size_t places = (size_t)(p - f0);
        exp10 = places > 1000 ? -1000 : -(int)places;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_float = 1;
        p++;
        int eneg = p < end && (*p == '+' || *p == '-') ? *p++ == '-' : 0, e = 0;
        if (p >= end || *p < '0' || *p > '9') {
            return fail(d, p, "a digit is required after the exponent");
        }
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (e < 10000) {
                e = e * 10 + (*p - '0');
            }
        }
        exp10 += eneg ? -e : e;
    }
    *pp = p;
    if (v == NULL) {
        return 0;
    }
    if (digits <= 19 && !is_float && (neg ? m <= (UINT64_C(1) << 63) : m <= (uint64_t)INT64_MAX)) {
        *v = v_int(!neg ? (int64_t)m : m == (UINT64_C(1) << 63) ? INT64_MIN : -(int64_t)m);
        return 0;
    }
    double f;
    if (digits > 19 || !exact_decimal(m, exp10, neg, &f)) {
        size_t n = (size_t)(p - s);
        char tmp[64];
        char *z = n < sizeof(tmp) ? tmp : arena_alloc(d->arena, n + 1);
        if (z == NULL) {
            d->oom = 1;
            return -1;
        }
        memcpy(z, s, n);
        z[n] = '\0';
        f = strtod(z, NULL);
    }
    /* A number beyond the largest double (1e400) is read as the largest double of its
     * sign, not as an infinity, which JSON cannot write back (docs/VPL.md, Events). */
    *v = v_float(f > DBL_MAX ? DBL_MAX : f < -DBL_MAX ? -DBL_MAX : f);
    return 0;
}

/* ---- values and containers ---- */

/* A number: converted only when it is kept or is a time the decoder reads (f: the
 * top-level frame when its key means something to the decoder). */
static inline int on_number(struct decoder *d, const char **pp, const char *end, int keep, struct frame *f)
{
    struct vval v;
    if (scan_number(d, pp, end, keep || f != NULL ? &v : NULL) != 0) {
        return -1;
    }
    if (f != NULL && v.t == V_INT) {
        if (f->special == SP_TS) {
            d->t_ts = v.u.i, d->has_ts = 1;
        } else if (f->special == SP_TIMESTAMP) {
            d->t_timestamp = v.u.i, d->has_timestamp = 1;
        }
    }
    return keep ? push(d, v) : 0;
}

/* A string value: body[0..n) raw, esc when it has escapes; keep and f as on_number. */
static int on_string(struct decoder *d, const char *body, size_t n, int esc, const char *end, int keep,
                     struct frame *f)
{
    if (!keep && (f == NULL || (f->special != SP_TYPE && f->special != SP_ATTS))) {
        return 0;
    }
    const char *s = body;
    size_t len = n;
    if (esc) {
        if ((s = decode_string(d, body, n, end, &len)) == NULL) {
            return -1;
        }
    } else if (f != NULL && f->special == SP_TYPE) {
        if ((s = arena_strndup(d->arena, body, n)) == NULL) {
            d->oom = 1;
            return -1;
        }
    }
    if (f != NULL && f->special == SP_TYPE) {
        d->type = s;
        d->type_len = (uint32_t)len;
        return 0;
    }
    if (f != NULL && f->special == SP_ATTS) {
        int64_t ms;
        if (rfc3339_parse(s, len, &ms) == 0) {
            d->t_at = ms, d->has_at = 1;
        }
    }
    if (!keep) {
        return 0;
    }
    if (len > d->lim.max_string) {
        /* Cut on a UTF-8 character boundary so the value stays valid text. */
        size_t cut = d->lim.max_string;
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) {
            cut--;
        }
        len = cut;
        d->truncated++;
    }
    return push(d, v_str(s, (uint32_t)len)); /* a string without escapes stays in the input */
}

/* true, false or null at *pp: 1, *v and *pp after it, or 0. */
static inline int scan_literal(const char **pp, const char *end, struct vval *v)
{
    const char *p = *pp;
    if (*p == 't' && end - p >= 4 && memcmp(p, "true", 4) == 0) {
        *pp = p + 4, *v = v_bool(1);
    } else if (*p == 'f' && end - p >= 5 && memcmp(p, "false", 5) == 0) {
        *pp = p + 5, *v = v_bool(0);
    } else if (*p == 'n' && end - p >= 4 && memcmp(p, "null", 4) == 0) {
        *pp = p + 4, *v = v_null();
    } else {
        return 0;
    }
    return 1;
}

/* The scalar at p (a string, a number, true, false or null), checked, and handed to
 * on_string or on_number, or pushed, as keep and f say: what follows it, or NULL.
 * (Functions not inlined take and return the position instead of taking its address,
 * which would keep the caller's in memory.) */
static const char *scalar(struct decoder *d, const char *p, const char *end, int keep, struct frame *f)
{
    char c = *p;
    int rc;
    if (c == '"') {
        const char *body;
        size_t n;
        int esc;
        rc = scan_string(d, &p, end, &body, &n, &esc);
        if (rc == 0) {
            rc = on_string(d, body, n, esc, end, keep, f);
        }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        rc = on_number(d, &p, end, keep, f);
    } else {
        struct vval v;
        if (!scan_literal(&p, end, &v)) {
            return fail(d, p, "invalid character where a value was expected"), NULL;
        }
        rc = keep ? push(d, v) : 0;
    }
    return rc == 0 ? p : NULL;
}

static int skip_push(struct decoder *d, size_t depth, int is_map)
{
    if (depth == d->capsk) {
        size_t cap = d->capsk ? d->capsk * 2 : 64;
        uint8_t *sk = realloc(d->sk, cap);
        if (sk == NULL) {
            d->oom = 1;
            return -1;
        }
        d->sk = sk;
        d->capsk = cap;
    }
    d->sk[depth] = (uint8_t)is_map;
    return 0;
}

/* RFC 8259's white space: space, tab, LF and CR (yajl also takes \v and \f). One
 * compare and a bit test, as cheap as the range 9..13 yajl's set allowed. */
#define WS_BITS ((UINT64_C(1) << ' ') | (UINT64_C(1) << '\t') | (UINT64_C(1) << '\n') | (UINT64_C(1) << '\r'))
static const char *skip_ws_run(const char *p, const char *end)
{
    while (p < end && (unsigned char)*p <= ' ' && ((WS_BITS >> (unsigned char)*p) & 1)) {
        p++;
    }
    return p;
}

/* Most JSON on the bus is compact: one comparison settles the common case, which the
 * loop above made a tenth of decoding. */
static inline const char *skip_ws(const char *p, const char *end)
{
    if (p < end && (unsigned char)*p > ' ') {
        return p;
    }
    return skip_ws_run(p, end);
}

/* A key whose opening quote should be at *pp, the colon after it and the white space
 * before its value; *body, *n and *esc as scan_string sets them. */
static inline int scan_key(struct decoder *d, const char **pp, const char *end, const char **body, size_t *n,
                           int *esc)
{
    const char *p = *pp;
    if (p >= end || *p != '"') { /* compact JSON has the key right there */
        p = skip_ws_run(p, end);
        if (p >= end || *p != '"') {
            return fail(d, p, "expected a string key");
        }
    }
    if (scan_string(d, &p, end, body, n, esc) != 0) {
        return -1;
    }
    if (p >= end || *p != ':') { /* compact JSON has the colon right after the key */
        p = skip_ws(p, end);
        if (p >= end || *p != ':') {
            return fail(d, p, "expected ':' after a key");
        }
    }
    *pp = skip_ws(p + 1, end);
    return 0;
}

/* What follows a value in a container (a map when map): 0 after a ',' with *pp at the
 * next value (past its key in a map), 1 after the closing bracket, -1 on an error. */
static inline int after_value(struct decoder *d, const char **pp, const char *end, int map, const char **key,
                              size_t *klen, int *kesc)
{
    const char *p = *pp;
    if (p >= end || *p != ',') { /* compact JSON has the comma right after the value */
        p = skip_ws(p, end);
        if (p >= end) {
            return fail(d, p, "premature end of input");
        }
    }
    if (*p == ',') { /* scan_key skips the white space before a key itself */
        *pp = map ? p + 1 : skip_ws(p + 1, end);
        return map && scan_key(d, pp, end, key, klen, kesc) != 0 ? -1 : 0;
    }
    if (*p != (map ? '}' : ']')) {
        return fail(d, p, map ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    *pp = p + 1;
    return 1;
}

/* Skips the value at *pp, checked exactly as a kept one is (the same errors at the same
 * bytes), with nothing decoded or built. Values no stream reads are often most of a
 * payload (an order's line items), and a loop of its own keeps the kept path's
 * bookkeeping (frames, limits, keys) out of theirs. */
static const char *skip_value(struct decoder *d, const char *p, const char *end)
{
    const char *body;
    size_t depth = 0, n;
    int esc;
    for (;;) {
        /* a value at p */
        if (p >= end) {
            return fail(d, p, "premature end of input"), NULL;
        }
        char c = *p;
        if (c == '{' || c == '[') {
            int is_map = c == '{';
            if (skip_push(d, depth, is_map) != 0) {
                return NULL;
            }
            p = skip_ws(p + 1, end);
            if (p >= end || *p != (is_map ? '}' : ']')) {
                depth++;
                if (is_map && scan_key(d, &p, end, &body, &n, &esc) != 0) {
                    return NULL;
                }
                continue;
            }
            p++;
        } else if (c == '"') {
            if (scan_string(d, &p, end, &body, &n, &esc) != 0) {
                return NULL;
            }
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            if (scan_number(d, &p, end, NULL) != 0) {
                return NULL;
            }
        } else {
            struct vval v;
            if (!scan_literal(&p, end, &v)) {
                return fail(d, p, "invalid character where a value was expected"), NULL;
            }
        }
        /* after a value: what follows it in its container, up to the next value */
        for (;;) {
            if (depth == 0) {
                return p;
            }
            int rc = after_value(d, &p, end, d->sk[depth - 1], &body, &n, &esc);
            if (rc < 0) {
                return NULL;
            }
            if (rc == 0) {
                break;
            }
            depth--;
        }
    }
}

static void open_container(struct decoder *d, int is_map)
{
    struct frame *f = &d->fr[d->depth++];
    memset(f, 0, sizeof(*f));
    f->base = d->nst;
    f->is_map = (uint8_t)is_map;
}

/* The key k[0..len) of the current map, followed by more input up to end. */
static inline void set_key(struct decoder *d, const char *k, size_t len, const char *end)
{
    struct frame *f = &d->fr[d->depth - 1];
    if (d->depth > 1) {
        f->k = k;
        f->klen = (uint32_t)len;
        return;
    }
    const struct dname *nm =
        d->nkey < SHAPE_KEYS ? names_memo(d, &d->shape[d->nkey], k, len, end) : names_get(d, k, len);
    d->nkey++;
    f->special = nm->special;
    f->drop = nm->drop;
    f->sym = nm->symid;
}

/* A key with escapes, decoded into the arena first (where nothing follows it). */
static __attribute__((noinline)) int set_escaped_key(struct decoder *d, const char *body, size_t n,
                                                     const char *end)
{
    size_t len;
    const char *k = decode_string(d, body, n, end, &len);
    if (k == NULL) {
        return -1;
    }
    set_key(d, k, len, k);
    return 0;
}

/* A key of the current map, scanned: body[0..n) raw, esc when it has escapes. */
static inline int on_key(struct decoder *d, const char *body, size_t n, int esc, const char *end)
{
    if (esc) {
        return set_escaped_key(d, body, n, end);
    }
    set_key(d, body, n, end);
    return 0;
}

static int close_container(struct decoder *d)
{
    struct frame *f = &d->fr[d->depth - 1];
    uint32_t n = d->nst - f->base;
    struct item *items = n > 0 ? &d->st[f->base] : NULL;
    if (d->depth == 1) {
        /* The event itself. A repeated key keeps its last value, as a JSON map would. */
        struct vpl_event *ev = event_new(d->arena, n);
        if (ev == NULL) {
            d->oom = 1;
            return -1;
        }
        uint32_t *keys = event_keys_room(ev, n);
        uint32_t m = 0;
        uint64_t seen = 0; /* symbols below 64 already placed: no search for a new one */
        for (uint32_t i = 0; i < n; i++) {
            uint32_t sym = items[i].sym, j = m;
            uint64_t bit = sym < 64 ? UINT64_C(1) << sym : 0;
            if (bit == 0 || (seen & bit) != 0) {
                for (j = 0; j < m && keys[j] != sym;) {
                    j++;
                }
            }
            seen |= bit;
            keys[j] = sym;
            ev->vals[j] = items[i].v;
            m += j == m;
        }
        event_seal(ev, n, m);
        d->ev = ev;
        d->nst = f->base;
        d->depth--;
        return 0;
    }
    struct vval v = {.t = f->is_map ? V_MAP : V_ARR, .n = n};
    if (f->is_map) {
        struct vkv *m = arena_alloc(d->arena, (n ? n : 1) * sizeof(*m));
        if (m == NULL) {
            d->oom = 1;
            return -1;
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
            return -1;
        }
        for (uint32_t i = 0; i < n; i++) {
            a[i] = items[i].v;
        }
        v.u.a = a;
    }
    d->nst = f->base;
    d->depth--;
    return push(d, v);
}

/* A key of a kept map at p, its colon, and what it means to the decoder: the value's
 * position, or NULL. */
static const char *parse_key(struct decoder *d, const char *p, const char *end)
{
    const char *body;
    size_t n;
    int esc;
    if (scan_key(d, &p, end, &body, &n, &esc) != 0 || on_key(d, body, n, esc, end) != 0) {
        return NULL;
    }
    return p;
}

/* One JSON text, iteratively: a value, then what may follow it in its container. Only
 * the top-level object and what the program reads of it is decoded here; any other
 * value goes to skip_value. */
static int parse(struct decoder *d, const char *json, size_t len)
{
    const char *p = skip_ws(json, json + len), *end = json + len;
    if (p == end) {
        return fail(d, p, "empty input");
    }
    if (*p != '{') { /* not an object: checked, and an event without fields */
        if ((p = skip_value(d, p, end)) == NULL) {
            return -1;
        }
    } else {
        open_container(d, 1);
        p = skip_ws(p + 1, end);
        if (p < end && *p == '}') {
            p++;
            if (close_container(d) != 0) {
                return -1;
            }
        } else if ((p = parse_key(d, p, end)) == NULL) {
            return -1;
        }
    }
    while (d->depth > 0) {
        /* a value at p */
        if (p >= end) {
            return fail(d, p, "premature end of input");
        }
        char c = *p;
        int keep = keep_value(d);
        if (c == '{' || c == '[') {
            int is_map = c == '{';
            if (keep && d->depth > d->lim.max_depth) {
                d->truncated++;
                keep = 0;
            }
            if (!keep) {
                if ((p = skip_value(d, p, end)) == NULL) {
                    return -1;
                }
            } else {
                open_container(d, is_map);
                p = skip_ws(p + 1, end);
                if (p >= end || *p != (is_map ? '}' : ']')) {
                    if (is_map && (p = parse_key(d, p, end)) == NULL) {
                        return -1;
                    }
                    continue;
                }
                p++;
                if (close_container(d) != 0) {
                    return -1;
                }
            }
        } else if ((p = scalar(d, p, end, keep, top_special(d))) == NULL) {
            return -1;
        }
        /* after a value: a comma or the end of its container, up to the next value */
        while (d->depth > 0) {
            const char *body;
            size_t n;
            int esc, map = d->fr[d->depth - 1].is_map;
            int rc = after_value(d, &p, end, map, &body, &n, &esc);
            if (rc < 0) {
                return -1;
            }
            if (rc == 0) {
                if (map && on_key(d, body, n, esc, end) != 0) {
                    return -1;
                }
                break;
            }
            if (close_container(d) != 0) {
                return -1;
            }
        }
    }
    p = skip_ws(p, end);
    if (p != end) {
        return fail(d, p, "trailing garbage after the value");
    }
    return 0;
}

int decoder_run(struct decoder *d, struct arena *a, const char *json, size_t len, struct decoded *out,
                char *err, size_t errlen)
{
    d->arena = a;
    d->nst = d->depth = 0;
    d->nkey = 0;
    d->oom = 0;
    d->type = NULL;
    d->type_len = 0;
    d->has_at = d->has_ts = d->has_timestamp = 0;
    d->truncated = 0;
    d->ev = NULL;
    d->err = NULL;
    int rc = parse(d, json, len);
    if (d->oom) {
        return VPL_ENOMEM;
    }
    if (rc != 0) {
        snprintf(err, errlen, "invalid JSON: %s at byte %zu", d->err ? d->err : "parse error",
                 (size_t)((const char *)d->errpos - json));
        return VPL_EJSON;
    }
    if (d->ev == NULL) {
        /* Not an object: Varpulis decodes it to an event without fields. */
        d->ev = arena_alloc(a, sizeof(*d->ev));
        if (d->ev == NULL) {
            return VPL_ENOMEM;
        }
        memset(d->ev, 0, sizeof(*d->ev));
    }
    out->ev = d->ev;
    out->type = d->type;
    out->type_len = d->type_len;
    out->has_time = 1;
    if (d->has_at) {
        d->ev->time = d->t_at;
    } else if (d->has_ts) {
        d->ev->time = d->t_ts;
    } else if (d->has_timestamp) {
        d->ev->time = d->t_timestamp;
    } else {
        out->has_time = 0;
    }
    out->truncated = d->truncated;
    return 0;
}

/* ---- Output ---------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when it is not valid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) {
        return 1;
    }
    if ((c & 0xE0) == 0xC0) {
        len = 2, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n) {
        return 0;
    }
    unsigned cp = c & (0x3F >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    return len;
}

/* json_write_string for a string with something to escape or check (room for n + 2
 * reserved): out of line, so the common case has a small frame. */
static __attribute__((noinline)) int write_escaped(struct buf *b, const unsigned char *s, size_t n)
{
    b->p[b->len++] = '"';
    size_t run = 0; /* start of the pending stretch copied verbatim */
    size_t i = 0;
    while (i < n) {
        i += plain_run(s + i, n - i);
        if (i >= n) {
            break;
        }
        unsigned c = s[i];
        size_t ulen = c >= 0x80 ? utf8_len(s + i, n - i) : 0;
        if (ulen > 0) {
            i += ulen;
            continue;
        }
        if (buf_put(b, s + run, i - run) != 0) {
            return VPL_ENOMEM;
        }
        char esc[8];
        const char *e = esc;
        if (c == '"') {
            e = "\\\"";
        } else if (c == '\\') {
            e = "\\\\";
        } else if (c == '\n') {
            e = "\\n";
        } else if (c == '\r') {
            e = "\\r";
        } else if (c == '\t') {
            e = "\\t";
        } else if (c == '\b') {
            e = "\\b";
        } else if (c == '\f') {
            e = "\\f";
        } else if (c < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
        } else {
            e = "\xEF\xBF\xBD"; /* invalid UTF-8 byte: U+FFFD keeps the output valid */
        }
        if (buf_puts(b, e) != 0) {
            return VPL_ENOMEM;
        }
        run = ++i;
    }
    if (buf_put(b, s + run, n - run) != 0) {
        return VPL_ENOMEM;
    }
    return buf_putc(b, '"');
}

int json_write_string(struct buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (buf_reserve(b, n + 2) != 0) {
        return VPL_ENOMEM;
    }
    size_t i = 0;
    if (n < 8) { /* a byte at a time: plain_run's word constants cost more than it saves */
        while (i < n && plain[s[i]]) {
            i++;
        }
    } else {
        i = plain_run(s, n);
    }
    if (i != n) {
        return write_escaped(b, s, n);
    }
    char *o = b->p + b->len; /* most strings: nothing to escape, one copy */
    o[0] = '"';
    memcpy(o + 1, s, n);
    o[n + 1] = '"';
    b->len += n + 2;
    b->p[b->len] = '\0';
    return 0;
}

int json_write_value(struct buf *b, const struct vval *v)
{
    char tmp[32];
    int rc = 0;
    switch (v->t) {
    case V_MISSING:
    case V_NULL:
        return buf_puts(b, "null");
    case V_BOOL:
        return buf_puts(b, v->u.i ? "true" : "false");
    case V_INT: {
        char *e = tmp + sizeof(tmp);
        char *q = u64_digits(v->u.i < 0 ? 0 - (uint64_t)v->u.i : (uint64_t)v->u.i, e, 1);
        if (v->u.i < 0) {
            *--q = '-';
        }
        return buf_put(b, q, (size_t)(e - q));
    }
    case V_FLOAT: /* straight into the buffer: format_double writes at most 32 bytes */
        if (buf_reserve(b, 32) != 0) {
            return VPL_ENOMEM;
        }
        b->len += format_double(v->u.f, b->p + b->len, 1);
        return 0;
    case V_STR:
        return json_write_string(b, v->u.s, v->n);
    case V_ARR:
        rc |= buf_putc(b, '[');
        for (uint32_t i = 0; i < v->n && rc == 0; i++) {
            if (i > 0) {
                rc |= buf_putc(b, ',');
            }
            rc |= json_write_value(b, &v->u.a[i]);
        }
        return rc | buf_putc(b, ']');
    case V_MAP:
        rc |= buf_putc(b, '{');
        for (uint32_t i = 0; i < v->n && rc == 0; i++) {
            if (i > 0) {
                rc |= buf_putc(b, ',');
            }
            rc |= json_write_string(b, v->u.m[i].k, v->u.m[i].klen);
            rc |= buf_putc(b, ':');
            rc |= json_write_value(b, &v->u.m[i].v);
        }
        return rc | buf_putc(b, '}');
    }
    return 0;
}
