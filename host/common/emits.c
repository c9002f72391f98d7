/* The emits arena (emits.h). Records keep offsets, which stay true as the arena grows;
 * their pointers are set from them whenever it moved, once per change of the emits, so
 * readers get plain pointers and a warm batch makes no allocation at all. */
#include "emits.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gust/err.h"

/* Points emit i (and its headers) into the arena where it is now. */
static void point(struct gust_emits *e, size_t i)
{
    struct gust_emit *m = &e->v[i];
    const char *b = e->bytes.data;
    m->payload = b + m->at;
    m->subject = b + m->at + m->len + 1;
    for (size_t k = m->first_header; k < m->first_header + m->nheaders; k++) {
        e->hv[k] = (struct gust_header){b + e->hat[k].name, b + e->hat[k].value};
    }
    m->headers = m->nheaders > 0 ? e->hv + m->first_header : NULL;
}

/* After a change: if the arena or the header array moved (the base is kept as a number:
 * the old pointer may not be used once realloc freed it), every emit is pointed anew. */
static void settle(struct gust_emits *e)
{
    if ((uintptr_t)e->bytes.data == e->base_bytes && (uintptr_t)e->hv == e->base_hv) {
        return;
    }
    for (size_t i = 0; i < e->n; i++) {
        point(e, i);
    }
    e->base_bytes = (uintptr_t)e->bytes.data;
    e->base_hv = (uintptr_t)e->hv;
}

struct gust_buf *gust_emits_begin(struct gust_emits *e)
{
    e->bytes.len = e->used;
    e->open_at = e->used;
    return &e->bytes;
}

static int fail(struct gust_emits *e)
{
    gust_emits_abort(e);
    return GUST_ENOMEM;
}

int gust_emits_end(struct gust_emits *e, const char *subject, const struct gust_header *headers,
                   size_t nheaders)
{
    size_t at = e->open_at, len = e->bytes.len - at, slen = strlen(subject) + 1, strings = 0;
    for (size_t k = 0; k < nheaders; k++) {
        strings += strlen(headers[k].name) + 1 + strlen(headers[k].value) + 1;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        struct gust_emit *v = realloc(e->v, cap * sizeof(*v));
        if (v == NULL) {
            return fail(e);
        }
        e->v = v;
        e->cap = cap;
    }
    if (e->nh + nheaders > e->hcap) {
        size_t cap = e->hcap ? e->hcap : 64;
        while (cap < e->nh + nheaders) {
            cap *= 2;
        }
        struct gust_emit_header_at *hat = realloc(e->hat, cap * sizeof(*hat));
        if (hat != NULL) {
            e->hat = hat;
        }
        struct gust_header *hv = hat != NULL ? realloc(e->hv, cap * sizeof(*hv)) : NULL;
        if (hv == NULL) {
            return fail(e);
        }
        e->hv = hv;
        e->hcap = cap;
    }
    if (gust_buf_reserve(&e->bytes, 1 + slen + strings) != 0) {
        return fail(e);
    }
    char *w = e->bytes.data + e->bytes.len;
    *w++ = '\0';
    memcpy(w, subject, slen);
    w += slen;
    for (size_t k = 0; k < nheaders; k++) {
        size_t nl = strlen(headers[k].name) + 1, vl = strlen(headers[k].value) + 1;
        e->hat[e->nh + k].name = (size_t)(w - e->bytes.data);
        memcpy(w, headers[k].name, nl);
        e->hat[e->nh + k].value = (size_t)(w + nl - e->bytes.data);
        memcpy(w + nl, headers[k].value, vl);
        w += nl + vl;
    }
    e->bytes.len = (size_t)(w - e->bytes.data);
    e->used = e->bytes.len;
    e->v[e->n] = (struct gust_emit){.len = len, .nheaders = nheaders, .at = at, .first_header = e->nh};
    e->nh += nheaders;
    point(e, e->n++);
    settle(e);
    return 0;
}

int gust_emits_push_with_headers(struct gust_emits *e, const char *subject, const char *payload, size_t len,
                                 const struct gust_header *headers, size_t nheaders)
{
    if (gust_buf_append(gust_emits_begin(e), payload, len) != 0) {
        return fail(e);
    }
    return gust_emits_end(e, subject, headers, nheaders);
}

int gust_emits_push(struct gust_emits *e, const char *subject, const char *payload, size_t len)
{
    return gust_emits_push_with_headers(e, subject, payload, len, NULL, 0);
}

void gust_emits_abort(struct gust_emits *e)
{
    e->bytes.len = e->used;
    settle(e);
}

void gust_emits_truncate(struct gust_emits *e, size_t n)
{
    if (n < e->n) {
        e->used = e->v[n].at;
        e->nh = e->v[n].first_header;
        e->n = n;
    }
    gust_emits_abort(e);
}

void gust_emits_clear(struct gust_emits *e)
{
    gust_emits_truncate(e, 0);
    if (e->bytes.cap > GUST_EMITS_KEEP_BYTES) {
        gust_buf_free(&e->bytes);
    }
}

void gust_emits_free(struct gust_emits *e)
{
    free(e->v);
    free(e->hat);
    free(e->hv);
    gust_buf_free(&e->bytes);
    *e = (struct gust_emits){0};
}
