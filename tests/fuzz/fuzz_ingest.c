/* libFuzzer target: the ingest request path on bytes a client could send. The first
 * byte picks the part:
 *
 *   body (json_check.c): whatever ingest accepts (depth up to 200, what flows decode)
 *     the flow decoder must decode, the flow must emit it again as well-formed UTF-8,
 *     and ingest must accept that emit too: nothing ingest stores is dead-lettered for
 *     its JSON. A text with a form feed, a vertical tab or a byte of broken UTF-8 is
 *     never accepted.
 *   subject (ingest_subject.c): an accepted suffix gives "ev." and tokens of visible
 *     characters, no empty token, no wildcard.
 *   auth (auth.c): only "Bearer <the token>" (the scheme in any case, spaces after it,
 *     white space after the token) passes.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../host/common/json_out.h"
#include "../../host/flow/flow.h"
#include "../../host/http/auth.h"
#include "../../host/http/ingest_subject.h"
#include "../../host/http/json_check.h"
#include "../unit/flow/scripts.h"

#define TOKEN "s3cret-T0ken"

static struct gust_flow *flow;
static struct gust_auth auth;

static void init(void)
{
    struct gust_err err;
    if (flow_from_text("return { on_event = function(ev) emit('ev.out', ev) end }", 30000, &flow, &err) != 0) {
        fprintf(stderr, "flow: %s\n", err.msg);
        abort();
    }
    setenv("GUST_FUZZ_TOKEN", TOKEN, 1);
    if (gust_auth_load(&auth, "admin", NULL, "GUST_FUZZ_TOKEN", &err) != 0) {
        fprintf(stderr, "auth: %s\n", err.msg);
        abort();
    }
}

static void body(const char *d, size_t n)
{
    char why[300];
    if (!gust_json_object_valid(d, n, 200, why, sizeof(why))) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (d[i] == 0x0b || d[i] == 0x0c) {
            abort(); /* not JSON white space, and not allowed raw in a string */
        }
    }
    if (!gust_utf8_valid(d, n)) {
        abort();
    }
    struct gust_emits out = {0};
    struct gust_err err;
    int rc = gust_flow_run(flow, d, n, NULL, &out, &err);
    if (rc != 0 || out.n != 1) {
        fprintf(stderr, "accepted at ingest, refused by the flow (%d): %s\n", rc, err.msg);
        abort();
    }
    if (!gust_utf8_valid(out.v[0].payload, out.v[0].len) ||
        !gust_json_object_valid(out.v[0].payload, out.v[0].len, 200, why, sizeof(why))) {
        fprintf(stderr, "the flow's emit is refused at ingest: %s: %.*s\n", why, (int)out.v[0].len,
                out.v[0].payload);
        abort();
    }
    gust_emits_free(&out);
}

static void subject(const char *d, size_t n)
{
    char s[GUST_INGEST_SUBJECT_MAX];
    if (!gust_ingest_subject("ev.", d, n, s)) {
        return;
    }
    size_t len = strlen(s);
    if (len < 4 || memcmp(s, "ev.", 3) != 0 || s[len - 1] == '.') {
        abort();
    }
    for (size_t i = 3; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == 0x7f || c == '*' || c == '>' || (c == '.' && s[i + 1] == '.')) {
            abort();
        }
    }
}

static void authorization(const char *d, size_t n)
{
    int ok = gust_auth_check(&auth, d, n);
    /* The reference: "bearer" in any case, a space, spaces, the token, spaces. */
    int want = 0;
    if (n >= 7 && strncasecmp(d, "bearer ", 7) == 0) {
        size_t a = 7, b = n;
        while (a < b && d[a] == ' ') {
            a++;
        }
        while (b > a && isspace((unsigned char)d[b - 1])) {
            b--;
        }
        want = b - a == strlen(TOKEN) && memcmp(d + a, TOKEN, b - a) == 0;
    }
    if (ok != want) {
        fprintf(stderr, "auth: %d for %.*s\n", ok, (int)n, d);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (flow == NULL) {
        init();
    }
    if (size == 0) {
        return 0;
    }
    const char *d = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 3) {
    case 0:
        body(d, n);
        break;
    case 1:
        subject(d, n);
        break;
    default:
        authorization(d, n);
        break;
    }
    return 0;
}
