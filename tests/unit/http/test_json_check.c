/* Unit test of the ingest body check. */
#include <stdio.h>
#include <string.h>

#include "../../../host/http/json_check.h"

static int failures;

static void expect(const char *body, int want, const char *why_part)
{
    char why[200] = "";
    int got = gust_json_object_valid(body, strlen(body), why, sizeof(why));
    if (got != want || (why_part != NULL && strstr(why, why_part) == NULL)) {
        printf("FAIL: %.60s: got %d (%s), want %d%s%s\n", body, got, why, want,
               why_part ? " with " : "", why_part ? why_part : "");
        failures++;
    }
}

int main(void)
{
    expect("{}", 1, NULL);
    expect("  {\"a\": [1, 2.5, -3e10, true, false, null, \"x\"]}\n", 1, NULL);
    expect("{\"big\": 123456789012345678901234567890}", 1, NULL);
    expect("{\"u\": \"Ren\xc3\xa9\x65 \xe2\x82\xac \\u00e9\"}", 1, NULL);
    expect("", 0, "JSON object");
    expect("   ", 0, "JSON object");
    expect("[1]", 0, "JSON object");
    expect("42", 0, "JSON object");
    expect("{\"a\": 1", 0, "invalid JSON");
    expect("{\"a\": 1}}", 0, "invalid JSON");
    expect("{\"a\": 1} {\"b\": 2}", 0, "invalid JSON");
    expect("{\"a\": \"\xff\"}", 0, "invalid JSON");
    expect("{\"a\": tru}", 0, "invalid JSON");
    expect("{a: 1}", 0, "invalid JSON");
    expect("{\"a\": 1,}", 0, "invalid JSON");
    /* Deep nesting is a matter of memory, not stack. */
    static char deep[400010];
    size_t n = 0;
    deep[n++] = '{';
    deep[n++] = '"';
    deep[n++] = 'a';
    deep[n++] = '"';
    deep[n++] = ':';
    for (int i = 0; i < 200000; i++) {
        deep[n++] = '[';
    }
    for (int i = 0; i < 200000; i++) {
        deep[n++] = ']';
    }
    deep[n++] = '}';
    deep[n] = '\0';
    expect(deep, 1, NULL);
    deep[n - 2] = '\0'; /* one bracket short */
    expect(deep, 0, "invalid JSON");
    printf("%d failures\n", failures);
    return failures != 0;
}
