/* libFuzzer target: the form decoder of the webhooks (host/http/form.c). The input is a
 * form body, copied into a buffer of exactly its length (h2o's bodies are not
 * NUL-terminated), so a read past it shows. Whatever it is, the decoder either refuses
 * it with a reason or writes one JSON object that the JSON check accepts, and the lone
 * `payload` field, when it finds one, is no longer than the body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/http/form.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size > 0 ? size : 1);
    if (body == NULL) {
        return 0;
    }
    memcpy(body, data, size);
    struct gust_buf out = {0};
    char why[200] = "";
    if (gust_form_to_json(body, size, &out, why, sizeof(why)) == 0) {
        char jwhy[200];
        if (gust_json_check(out.data, out.len, NULL, NULL, jwhy, sizeof(jwhy)) != GUST_JSON_OBJECT) {
            abort();
        }
    } else if (why[0] == '\0') {
        abort();
    }
    gust_buf_free(&out);
    size_t plen = 0;
    char *p = gust_form_payload(body, size, &plen);
    if (p != NULL && (plen > size || p[plen] != '\0')) {
        abort();
    }
    free(p);
    free(body);
    return 0;
}
