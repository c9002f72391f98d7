/* libFuzzer target: what http_poll does with a response body (the SDK's JSON check and
 * array split, host/common/json_check.c, which http_poll uses), on any bytes a server
 * could answer. What it publishes (the body, or each element with split_array)
 * has nothing RFC 8259 forbids that yajl lets through (json_text.h), and the elements
 * are exactly the array's, in order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "../../host/common/json_text.h"
#include "gust/sdk.h"

struct walk {
    yajl_val array;
    size_t i;
};

static int one(void *ud, const char *elem, size_t elen)
{
    struct walk *w = ud;
    char why[200];
    if (w->i >= w->array->u.array.len || gust_json_check(elem, elen, NULL, NULL, why, sizeof(why)) == 0) {
        abort();
    }
    struct gust_json_text t;
    if (elen == 0 || elem[0] == ' ' || elem[elen - 1] == ' ' || gust_json_text_check(elem, elen, &t) < 0) {
        abort();
    }
    w->i++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[200];
    const char *d = (const char *)data;
    int kind = gust_json_check(d, size, NULL, NULL, why, sizeof(why));
    if (kind == 0) {
        return 0;
    }
    struct gust_json_text t;
    if (gust_json_text_check(d, size, &t) < 0) {
        abort(); /* published, and no flow can decode it */
    }
    char *text = strndup(d, size);
    if (strlen(text) != size) {
        free(text);
        return 0; /* a NUL byte: yajl refuses it, and the tree could not hold it */
    }
    yajl_val v = yajl_tree_parse(text, why, sizeof(why));
    if (v == NULL) {
        abort(); /* checked, yet not JSON */
    }
    if (kind == GUST_JSON_ARRAY) {
        struct walk w = {v, 0};
        if (!YAJL_IS_ARRAY(v) || gust_json_each(d, size, one, &w) != 0 || w.i != v->u.array.len) {
            abort();
        }
    }
    yajl_tree_free(v);
    free(text);
    return 0;
}
