/* Unit test of the ingest body check. */
#include <stdio.h>
#include <string.h>

#include "../../../host/http/json_check.h"

static int failures;

static void expect_depth(const char *body, size_t max_depth, int want, const char *why_part)
{
    char why[200] = "";
    int got = gust_json_object_valid(body, strlen(body), max_depth, why, sizeof(why));
    if (got != want || (why_part != NULL && strstr(why, why_part) == NULL)) {
        printf("FAIL: %.60s: got %d (%s), want %d%s%s\n", body, got, why, want,
               why_part ? " with " : "", why_part ? why_part : "");
        failures++;
    }
}

static void expect(const char *body, int want, const char *why_part)
{
    expect_depth(body, 0, want, why_part);
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
    /* RFC 8259 white space is space, tab, CR and LF only (yajl also takes \f and \v). */
    expect("{\"v\":[\f]}", 0, "form feed");
    expect("{\f\"a\":1}", 0, "at byte 1");
    expect("{\"a\":1}\v", 0, "vertical tab");
    expect("{\"a\":\"x\fy\"}", 0, "form feed");
    expect("{\"a\":\"x\\fy\"}", 1, NULL); /* the escape \f is fine */
    expect(" \t\r\n{ \"a\" :\t1 }\r\n", 1, NULL);
    /* UTF-8 that yajl's lead/continuation check lets through. */
    expect("{\"a\":\"\xed\xa0\x80\"}", 0, "invalid UTF-8 (");  /* an encoded surrogate */
    expect("{\"a\":\"\xc0\xaf\"}", 0, "at byte 6");              /* overlong '/' */
    expect("{\"a\":\"\xe0\x80\xaf\"}", 0, "invalid UTF-8");     /* overlong, 3 bytes */
    expect("{\"a\":\"\xf4\x90\x80\x80\"}", 0, "invalid UTF-8"); /* above U+10FFFF */
    expect("{\"a\":\"\xf5\x80\x80\x80\"}", 0, "invalid UTF-8");
    expect("{\"a\":\"\xc3\"}", 0, "invalid UTF-8");               /* cut short */
    expect("{\"a\":\"\xed\x9f\xbf \xee\x80\x80 \xf4\x8f\xbf\xbf \xf0\x90\x80\x80\"}", 1, NULL);
    /* \u escapes of surrogates: only as pairs. */
    expect("{\"a\":\"\\udc00\"}", 0, "lone surrogate");
    expect("{\"a\":\"\\ud800\"}", 0, "lone surrogate");
    expect("{\"a\":\"\\ud800abc\"}", 0, "at byte 6");
    expect("{\"a\":\"\\ud800\\u0041\"}", 0, "lone surrogate");
    expect("{\"a\":\"\\ud800\\ud800\"}", 0, "lone surrogate");
    expect("{\"a\":\"\\uDBFF\\uDFFF \\ud83d\\ude00\"}", 1, NULL);
    expect("{\"a\":\"\\\\udc00\"}", 1, NULL); /* an escaped backslash, then text */
    /* yajl takes a complete value followed by a string still open at the end. */
    expect("{\"a\": [13.15,{\"bb\": null}]}\": null}]}", 0, "not closed");
    expect("{\"a\":1} \"x", 0, "not closed");
    expect("{\"a\":\"\\\"\"}", 1, NULL); /* an escaped quote is no quote */
    /* max_depth counts arrays and objects, the top-level object included. */
    expect_depth("{\"a\":[[1]]}", 3, 1, NULL);
    expect_depth("{\"a\":[[1]]}", 2, 0, "nested deeper than 2");
    expect_depth("{\"a\":[{},{},[]]}", 3, 1, NULL);
    expect_depth("{\"a\":{\"b\":{}}}", 2, 0, "max_depth");
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
    expect_depth(deep, 200001, 1, NULL);
    expect_depth(deep, 200, 0, "nested deeper than 200");
    deep[n - 2] = '\0'; /* one bracket short */
    expect(deep, 0, "invalid JSON");
    printf("%d failures\n", failures);
    return failures != 0;
}
