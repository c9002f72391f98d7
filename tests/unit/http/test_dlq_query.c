/* Unit test of the DLQ routes' request parsing (host/http/dlq_query.c) and of the query
 * string reader under it (query.c). */
#include <stdio.h>
#include <string.h>

#include "../../../host/http/dlq_query.h"
#include "../../../host/http/query.h"

static int failures;

/* Parses query and body; want NULL (accepted) or a part of the error. */
static struct gust_dlq_query parse(const char *query, const char *body, const char *want)
{
    struct gust_dlq_query q = {.limit = 50};
    const char *bad = gust_dlq_query_parse(query, strlen(query), body, body ? strlen(body) : 0, &q);
    if ((want == NULL) != (bad == NULL) || (want != NULL && strstr(bad, want) == NULL)) {
        printf("FAIL: ?%s %s: got %s, want %s\n", query, body ? body : "", bad ? bad : "accepted",
               want ? want : "accepted");
        failures++;
    }
    return q;
}

int main(void)
{
    char v[8];
    struct gust_dlq_query q;

    if (gust_query_get("a=1&b=x%20y+z&c", 15, "b", v, sizeof(v)) != 5 || strcmp(v, "x y z") != 0 ||
        gust_query_get("a=1&b=x%20y+z&c", 15, "c", v, sizeof(v)) != 0 ||
        gust_query_get("a=1", 3, "b", v, sizeof(v)) != -1 ||
        gust_query_get("a=0123456789", 12, "a", v, sizeof(v)) != 10 || strcmp(v, "0123456") != 0 ||
        gust_query_get("a=x%00y", 7, "a", v, sizeof(v)) != 3 || strlen(v) != 1) {
        printf("FAIL: gust_query_get\n");
        failures++;
    }
    q = parse("", NULL, NULL);
    if (q.limit != 50 || q.unit[0] || q.seq || q.all) {
        printf("FAIL: defaults kept\n");
        failures++;
    }
    q = parse("unit=orders&limit=7&after_seq=3", NULL, NULL);
    if (strcmp(q.unit, "orders") != 0 || q.limit != 7 || q.after_seq != 3) {
        printf("FAIL: query values\n");
        failures++;
    }
    q = parse("all=1", NULL, NULL);
    if (!q.all) {
        printf("FAIL: all=1\n");
        failures++;
    }
    q = parse("seq=5", "{\"seq\": 12, \"unit\": \"crm\"}", NULL);
    if (q.seq != 12 || strcmp(q.unit, "crm") != 0) {
        printf("FAIL: the body wins\n");
        failures++;
    }
    parse("seq=0", NULL, "seq");
    parse("seq=-1", NULL, "seq");
    parse("seq=%201", NULL, "seq");
    parse("seq=18446744073709551616", NULL, "seq"); /* 2^64 */
    parse("seq=18446744073709551615", NULL, NULL);
    parse("limit=0", NULL, "limit");
    parse("after_seq=x", NULL, "after_seq");
    /* A unit name is cut nowhere: not at a NUL, not at the buffer's end. */
    parse("unit=orders%00x", NULL, "unit");
    parse("unit=a.b", NULL, "unit");
    parse("unit=a*", NULL, "unit");
    char longq[300] = "unit=";
    memset(longq + 5, 'u', 200);
    parse(longq, NULL, "unit");
    parse("", "{\"unit\": \"orders\\u0000x\"}", "unit");
    char longb[300];
    snprintf(longb, sizeof(longb), "{\"unit\": \"%0200d\"}", 0);
    parse("", longb, "unit");
    parse("", "[1]", "body");
    parse("", "{\"seq\": 1.5}", "seq");
    parse("", "{\"seq\": 99999999999999999999}", "seq");
    parse("", "{\"limit\": -3}", "limit");
    q = parse("", "{\"all\": true}", NULL);
    if (!q.all) {
        printf("FAIL: body all\n");
        failures++;
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
