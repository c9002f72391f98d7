/* libFuzzer target: the Host and Origin checks of the admin routes (host/http/origin.c).
 * The input is a Host value, a NUL byte, then an Origin value; each is copied into a
 * buffer of exactly its length (h2o's header values are not NUL-terminated), so a read
 * past either shows. A Host that splits names a part of itself and a port in range; it
 * is the same origin as "http://" + itself over plain HTTP, and as "https://" + itself
 * over HTTPS. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/http/origin.h"

static char *copy(const char *s, size_t n)
{
    char *p = malloc(n > 0 ? n : 1);
    if (p != NULL && n > 0) {
        memcpy(p, s, n);
    }
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *d = (const char *)data;
    const char *nul = memchr(d, '\0', size);
    size_t hlen = nul != NULL ? (size_t)(nul - d) : size;
    size_t olen = nul != NULL ? size - hlen - 1 : 0;
    char *host = copy(d, hlen);
    char *origin = copy(nul != NULL ? nul + 1 : d, olen);
    static struct gust_admin_names names;
    static int ready;
    if (!ready) {
        const char *list[] = {"gust.example.com", "[2001:db8::1]"};
        struct gust_err err;
        if (gust_admin_names_init(&names, "127.0.0.1:8787", 0, list, 2, &err) != 0) {
            abort();
        }
        ready = 1;
    }
    const char *name;
    size_t nlen;
    int port;
    if (host != NULL && origin != NULL && gust_authority_split(host, hlen, &name, &nlen, &port) == 0) {
        if (name != host || nlen == 0 || nlen > hlen || port == 0 || port > 65535 || port < -1) {
            abort();
        }
        (void)gust_host_allowed(&names, name, nlen, "127.0.0.1");
        char *o = malloc(hlen + 8);
        if (o != NULL) {
            memcpy(o, "http://", 7);
            memcpy(o + 7, host, hlen);
            if (!gust_origin_same(o, hlen + 7, host, hlen, 0) || gust_origin_same(o, hlen + 7, host, hlen, 1)) {
                abort();
            }
            memcpy(o, "https://", 8);
            memcpy(o + 8, host, hlen);
            if (!gust_origin_same(o, hlen + 8, host, hlen, 1)) {
                abort();
            }
            free(o);
        }
    }
    if (host != NULL && origin != NULL) {
        (void)gust_origin_same(origin, olen, host, hlen, 0);
        (void)gust_origin_same(origin, olen, host, hlen, 1);
    }
    free(host);
    free(origin);
    return 0;
}
