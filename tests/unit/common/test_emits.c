/* host/common/emits.c: the emits arena. What was appended reads back where the arena
 * is now, however often it moved; an emit written in place and left open is dropped;
 * and a warm arena makes no allocation (malloc and realloc are counted: this test is
 * linked with --wrap for both). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../host/common/emits.h"
#include "../../check.h"

static size_t allocations;

void *__real_malloc(size_t size);
void *__real_realloc(void *p, size_t size);

void *__wrap_malloc(size_t size)
{
    allocations++;
    return __real_malloc(size);
}

void *__wrap_realloc(void *p, size_t size)
{
    allocations++;
    return __real_realloc(p, size);
}

static int same(const char *got, const char *want)
{
    return got != NULL && strcmp(got, want) == 0;
}

/* Emit i of the pattern the tests write: its subject, payload and header value. */
static void nth(size_t i, char *subject, char *payload, char *value)
{
    snprintf(subject, 32, "ev.out.%zu", i);
    snprintf(payload, 64, "{\"i\":%zu,\"pad\":\"%0*zu\"}", i, (int)(i % 23), i);
    snprintf(value, 32, "v%zu", i * 7);
}

/* Appends emits [from, to) of the pattern: every third without headers, every third
 * written in place. Returns 0 or the first failure. */
static int fill(struct gust_emits *e, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        char subject[32], payload[64], value[32];
        nth(i, subject, payload, value);
        struct gust_header h[2] = {{"A-Name", value}, {"B-Name", "fixed"}};
        int rc;
        if (i % 3 == 0) {
            rc = gust_emits_push(e, subject, payload, strlen(payload));
        } else if (i % 3 == 1) {
            rc = gust_emits_push_with_headers(e, subject, payload, strlen(payload), h, 2);
        } else {
            struct gust_buf *b = gust_emits_begin(e);
            rc = gust_buf_append(b, payload, strlen(payload));
            if (rc == 0) {
                rc = gust_emits_end(e, subject, h, 1);
            }
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* Whether emits [0, n) read back as the pattern wrote them. */
static int check_all(const struct gust_emits *e, size_t n)
{
    if (e->n != n) {
        fprintf(stderr, "%zu emits, want %zu\n", e->n, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char subject[32], payload[64], value[32];
        nth(i, subject, payload, value);
        const struct gust_emit *m = &e->v[i];
        size_t nh = i % 3 == 0 ? 0 : i % 3 == 1 ? 2 : 1;
        int ok = same(m->subject, subject) && same(m->payload, payload) && m->len == strlen(payload) &&
                 m->nheaders == nh && (nh == 0) == (m->headers == NULL);
        for (size_t k = 0; ok && k < nh; k++) {
            ok = same(m->headers[k].name, k == 0 ? "A-Name" : "B-Name") &&
                 same(m->headers[k].value, k == 0 ? value : "fixed");
        }
        if (!ok) {
            fprintf(stderr, "emit %zu reads back wrong\n", i);
            return 0;
        }
    }
    return 1;
}

static void test_moves(void)
{
    struct gust_emits e = {0};
    /* From empty, the arena and the arrays move many times on the way. */
    CHECK(fill(&e, 0, 2000) == 0);
    CHECK(check_all(&e, 2000));
    /* Truncated, then written again over what was dropped. */
    gust_emits_truncate(&e, 1500);
    CHECK(check_all(&e, 1500));
    CHECK(fill(&e, 1500, 3000) == 0);
    CHECK(check_all(&e, 3000));
    gust_emits_free(&e);
    CHECK(e.v == NULL && e.n == 0 && e.bytes.data == NULL);
}

static void test_open_emit(void)
{
    struct gust_emits e = {0};
    CHECK(fill(&e, 0, 3) == 0);
    size_t used = e.bytes.len;
    /* Open, grown far past the arena (it moves), and abandoned: the next begin drops it. */
    struct gust_buf *b = gust_emits_begin(&e);
    CHECK(gust_buf_reserve(b, 1 << 20) == 0);
    memset(b->data + b->len, 'x', 1 << 20);
    b->len += 1 << 20;
    gust_emits_abort(&e);
    CHECK(check_all(&e, 3));
    CHECK(e.bytes.len == used);
    /* Left open without an abort: the next push drops it just as well. */
    b = gust_emits_begin(&e);
    CHECK(gust_buf_append(b, "partial", 7) == 0);
    CHECK(fill(&e, 3, 6) == 0);
    CHECK(check_all(&e, 6));
    /* An emit written in place may reserve, and is what was written since begin. */
    b = gust_emits_begin(&e);
    CHECK(gust_buf_reserve(b, 4 << 20) == 0);
    CHECK(gust_buf_append(b, "{}", 2) == 0);
    CHECK(gust_emits_end(&e, "ev.empty", NULL, 0) == 0);
    CHECK(e.n == 7 && same(e.v[6].payload, "{}") && e.v[6].len == 2 && same(e.v[6].subject, "ev.empty"));
    CHECK(check_all(&(struct gust_emits){.v = e.v, .n = 6}, 6));
    /* One batch grew the arena past what is kept: clearing gives it back. */
    gust_emits_clear(&e);
    CHECK(e.n == 0 && e.bytes.data == NULL);
    CHECK(fill(&e, 0, 6) == 0);
    CHECK(check_all(&e, 6));
    gust_emits_free(&e);
}

static void test_warm(void)
{
    struct gust_emits e = {0};
    CHECK(fill(&e, 0, 512) == 0);
    for (int batch = 0; batch < 3; batch++) {
        gust_emits_clear(&e);
        allocations = 0;
        CHECK(fill(&e, 0, 512) == 0);
        CHECK(allocations == 0, "batch %d: %zu allocations once warm", batch, allocations);
        CHECK(check_all(&e, 512));
    }
    /* The counter does count: a cold arena allocates. */
    gust_emits_free(&e);
    allocations = 0;
    CHECK(fill(&e, 0, 512) == 0);
    CHECK(allocations > 0);
    gust_emits_free(&e);
}

int main(void)
{
    test_moves();
    test_open_emit();
    test_warm();
    return check_result("test_emits");
}
