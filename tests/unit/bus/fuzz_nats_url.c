/* libFuzzer target: the bus URL parser (host/bus/nats_url.c). An accepted URL has a
 * host, a port in 1..65535, a scheme the log shows, and its log form never holds the
 * credentials. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../../host/bus/nats_url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    struct gust_nats_url u;
    const char *why = gust_nats_url_parse(s, &u);
    const char *check = gust_nats_url_parse(s, NULL);
    if ((why == NULL) != (check == NULL)) {
        abort(); /* checking and taking apart disagree */
    }
    if (why == NULL) {
        long port = strtol(u.port, NULL, 10);
        if (u.host[0] == '\0' || port < 1 || port > 65535 || strspn(u.port, "0123456789") != strlen(u.port)) {
            abort();
        }
        if (strncmp(u.text, u.tls ? "tls://" : "nats://", u.tls ? 6 : 7) != 0 ||
            strchr(u.text, '@') != NULL) {
            abort();
        }
        if ((u.user != NULL) != (u.pass != NULL) || (u.token != NULL && u.user != NULL)) {
            abort();
        }
        gust_nats_url_free(&u);
    }
    free(s);
    return 0;
}
