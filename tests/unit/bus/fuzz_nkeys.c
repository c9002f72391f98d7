/* libFuzzer target: NKey seeds and credentials files (host/bus/nkeys.c), which come
 * from files users hand gust. A seed it accepts gives a 56-character public user key
 * in base32; a credentials text never crashes the check. The first byte picks which. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../../host/bus/nkeys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    char *s = malloc(size);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    if (data[0] & 1) {
        char pub[GUST_NKEY_PUBLIC_LEN + 1], why[128];
        if (gust_nkey_public_of_seed(s, size - 1, pub, why, sizeof(why)) == 0) {
            if (pub[0] != 'U' || strlen(pub) != GUST_NKEY_PUBLIC_LEN ||
                strspn(pub, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != GUST_NKEY_PUBLIC_LEN) {
                abort();
            }
        }
    } else {
        struct gust_err err;
        gust_creds_check_text(s, "fuzz.creds", 1800000000, &err);
    }
    free(s);
    return 0;
}
