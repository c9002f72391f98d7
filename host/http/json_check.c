#include "json_check.h"

#include <stdio.h>
#include <string.h>
#include <yajl/yajl_parse.h>

int gust_json_object_valid(const char *body, size_t len, char *why, size_t why_size)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n')) {
        i++;
    }
    if (i == len || body[i] != '{') {
        snprintf(why, why_size, "body must be a JSON object");
        return 0;
    }
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    yajl_status st = yajl_parse(h, (const unsigned char *)body, len);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(h);
    }
    int ok = st == yajl_status_ok;
    if (!ok) {
        unsigned char *e = yajl_get_error(h, 0, (const unsigned char *)body, len);
        size_t n = strlen((const char *)e);
        while (n > 0 && (e[n - 1] == '\n' || e[n - 1] == ' ')) {
            n--; /* yajl ends its message with a newline */
        }
        snprintf(why, why_size, "invalid JSON: %.*s", (int)n, (const char *)e);
        yajl_free_error(h, e);
    }
    yajl_free(h);
    return ok;
}
