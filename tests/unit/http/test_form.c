/* Unit test of the form decoder (host/http/form.c): pairs, '+' and %XX, repeated keys
 * as arrays in first-appearance order, empty pairs and values, a '%' left as it is,
 * UTF-8 refused once decoded, the lone `payload` field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../host/http/form.h"

static int failures;

static void expect_json(const char *form, const char *want)
{
    struct gust_buf out = {0};
    char why[200] = "";
    int rc = gust_form_to_json(form, strlen(form), &out, why, sizeof(why));
    if (rc != 0 || out.len != strlen(want) || memcmp(out.data, want, out.len) != 0) {
        printf("FAIL: %s: got %d %.*s%s, want %s\n", form, rc, (int)out.len, out.data != NULL ? out.data : "",
               why, want);
        failures++;
    }
    gust_buf_free(&out);
}

static void expect_refused(const char *form, size_t len, const char *what)
{
    struct gust_buf out = {0};
    char why[200] = "";
    if (gust_form_to_json(form, len, &out, why, sizeof(why)) == 0 || why[0] == '\0') {
        printf("FAIL: %s: accepted\n", what);
        failures++;
    }
    gust_buf_free(&out);
}

static void expect_payload(const char *form, const char *want)
{
    size_t n = 0;
    char *p = gust_form_payload(form, strlen(form), &n);
    int ok = want == NULL ? p == NULL : p != NULL && n == strlen(want) && memcmp(p, want, n) == 0;
    if (!ok) {
        printf("FAIL: payload of %s: got %s, want %s\n", form, p != NULL ? p : "NULL",
               want != NULL ? want : "NULL");
        failures++;
    }
    free(p);
}

int main(void)
{
    expect_json("a=1&b=x+y", "{\"a\":\"1\",\"b\":\"x y\"}");
    expect_json("", "{}");
    expect_json("&&", "{}");
    expect_json("a", "{\"a\":\"\"}");
    expect_json("a=", "{\"a\":\"\"}");
    expect_json("=v", "{\"\":\"v\"}");
    expect_json("a=1=2", "{\"a\":\"1=2\"}");
    expect_json("t=1&u=x&t=2&t=3", "{\"t\":[\"1\",\"2\",\"3\"],\"u\":\"x\"}");
    expect_json("z=1&a=2&z=3", "{\"z\":[\"1\",\"3\"],\"a\":\"2\"}");
    expect_json("k%20ey=%41%2b%2B%26%3D", "{\"k ey\":\"A++&=\"}");
    expect_json("p=100%&q=%zz&r=%4", "{\"p\":\"100%\",\"q\":\"%zz\",\"r\":\"%4\"}");
    expect_json("s=%22q%22%5C%0A", "{\"s\":\"\\\"q\\\"\\\\\\n\"}");
    expect_json("e=caf%C3%A9", "{\"e\":\"caf\xc3\xa9\"}");
    expect_json("a=1&&b=2&", "{\"a\":\"1\",\"b\":\"2\"}");
    expect_json("ab=1&a=2&abc=3&a=4", "{\"ab\":\"1\",\"a\":[\"2\",\"4\"],\"abc\":\"3\"}");
    expect_refused("e=%C3", 5, "a lone UTF-8 lead byte");
    expect_refused("e=%C0%AF", 8, "an overlong form");
    expect_refused("%FF=1", 5, "a key not UTF-8");
    expect_refused("e=\xed\xa0\x80", 5, "an encoded surrogate, raw");
    expect_payload("payload=%7B%22a%22%3A1%7D", "{\"a\":1}");
    expect_payload("payload=", "");
    expect_payload("payload=x&b=1", NULL);
    expect_payload("a=1", NULL);
    expect_payload("", NULL);
    /* Many pairs of one key: grouped by sorting, so this stays quick. */
    size_t n = 200000;
    char *big = malloc(n * 4 + 1);
    for (size_t i = 0; i < n; i++) {
        memcpy(big + i * 4, "k=v&", 4);
    }
    big[n * 4] = '\0';
    struct gust_buf out = {0};
    char why[200];
    if (gust_form_to_json(big, n * 4, &out, why, sizeof(why)) != 0 || out.len != n * 4 + 7) {
        printf("FAIL: %zu repeats of one key: %zu bytes\n", n, out.len);
        failures++;
    }
    gust_buf_free(&out);
    free(big);
    printf("%s\n", failures == 0 ? "ok" : "failed");
    return failures != 0;
}
