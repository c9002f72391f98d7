/* libFuzzer target: trusted_proxies entries and X-Forwarded-For values (host/http/proxy.c).
 * The input is entries separated by '\n', then a NUL byte, then the header value. Entries
 * that parse are kept; the client named by the header is an address (it reads back with
 * inet_pton) or nothing, never more than the buffer holds. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/http/proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *d = (const char *)data;
    const char *nul = memchr(d, '\0', size);
    size_t specs = nul != NULL ? (size_t)(nul - d) : size;
    struct gust_proxies p = {0};
    struct gust_err err;
    char spec[128];

    for (size_t i = 0; i < specs;) {
        const char *nl = memchr(d + i, '\n', specs - i);
        size_t n = (nl != NULL ? (size_t)(nl - d) : specs) - i;
        if (n < sizeof(spec)) {
            memcpy(spec, d + i, n);
            spec[n] = '\0';
            if (gust_proxies_add(&p, spec, &err) == 0 &&
                (p.v[p.n - 1].bits < 0 || p.v[p.n - 1].bits > (p.v[p.n - 1].family == AF_INET ? 32 : 128))) {
                abort();
            }
        }
        i += n + 1;
    }
    const char *xff = nul != NULL ? nul + 1 : d + size;
    size_t xlen = nul != NULL ? size - specs - 1 : 0;
    char out[64] = "unchanged";
    unsigned char addr[16];
    if (gust_forwarded_for(&p, xff, xlen, out, sizeof(out))) {
        if (inet_pton(AF_INET, out, addr) != 1 && inet_pton(AF_INET6, out, addr) != 1) {
            abort();
        }
    } else if (strcmp(out, "unchanged") != 0) {
        abort();
    }
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
    memcpy(&sa.sin6_addr, data, size < 16 ? size : 16);
    gust_proxies_trusted(&p, (struct sockaddr *)&sa);
    return 0;
}
