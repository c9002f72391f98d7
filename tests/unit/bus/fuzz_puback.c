/* libFuzzer target: the PubAck parser (host/bus/puback.c) against yajl. Whatever it
 * takes for a stored message must be a JSON object yajl accepts too, with a sequence
 * that is not 0; its reason is always printable and terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "../../../host/bus/puback.h"
#include "gust/err.h"

static int yajl_accepts_object(const uint8_t *data, size_t size)
{
    size_t i = 0;
    while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) {
        i++;
    }
    if (i == size || data[i] != '{') {
        return 0;
    }
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    int ok = yajl_parse(h, data, size) == yajl_status_ok && yajl_complete_parse(h) == yajl_status_ok;
    yajl_free(h);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so that ASan catches any read past them. */
    char *copy = malloc(size > 0 ? size : 1);
    memcpy(copy, data, size);
    struct gust_puback ack;
    char why[96];
    int rc = gust_puback_parse(copy, size, &ack, why, sizeof(why));
    if (rc != 0 && rc != GUST_EIO && rc != GUST_EINVAL) {
        abort();
    }
    if (memchr(why, '\0', sizeof(why)) == NULL) {
        abort();
    }
    for (const char *c = why; *c != '\0'; c++) {
        if (*c < 0x20 || *c > 0x7e) {
            abort();
        }
    }
    if (rc == 0 && (ack.seq == 0 || (ack.duplicate != 0 && ack.duplicate != 1))) {
        abort();
    }
    if ((rc == 0 || rc == GUST_EIO) && !yajl_accepts_object(data, size)) {
        abort(); /* a PubAck (or a refusal) read from text that is no JSON object */
    }
    if (rc != 0 && ack.seq != 0) {
        abort();
    }
    free(copy);
    return 0;
}
