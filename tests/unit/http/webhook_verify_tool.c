/* The webhook verifiers (host/http/webhook_verify.c) as a command, for
 * test_webhook_verify.py, which computes every signature itself with Python's hmac:
 *
 *   webhook_verify_tool SCHEME NOW [OPTION...] < BODY
 *     --secret TEXT       a secret as its file would hold it (repeat for rotation)
 *     --header NAME=VALUE a request header (NAME lowercase; repeat a name to send it twice)
 *     --tolerance S       seconds (default 300)
 *     --signature-header NAME  --sha1  --base64  --prefix TEXT   (scheme hmac)
 *
 * Prints "ok", or "refused: why" and exits 1; exits 2 on a bad secret or usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../host/http/webhook_verify.h"

#define MAX 16

struct headers {
    const char *name[MAX];
    const char *value[MAX];
    size_t n;
};

static int header(void *ud, const char *name, const char **value, size_t *len)
{
    struct headers *h = ud;
    int found = 0;
    for (size_t i = 0; i < h->n; i++) {
        if (strcmp(h->name[i], name) == 0) {
            *value = h->value[i];
            *len = strlen(h->value[i]);
            found++;
        }
    }
    return found > 1 ? -1 : found;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: webhook_verify_tool SCHEME NOW [OPTION...] < BODY\n");
        return 2;
    }
    int scheme = gust_wh_scheme_of(argv[1]);
    if (scheme < 0) {
        fprintf(stderr, "unknown scheme %s\n", argv[1]);
        return 2;
    }
    struct gust_wh_secret secrets[MAX];
    struct headers h = {0};
    struct gust_wh_verifier v = {
        .scheme = (enum gust_wh_scheme)scheme, .secrets = secrets, .tolerance_s = 300};
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        char why[200];
        if (strcmp(a, "--secret") == 0 && next != NULL && v.nsecrets < MAX) {
            if (gust_wh_secret_make(v.scheme, next, strlen(next), &secrets[v.nsecrets], why, sizeof(why)) !=
                0) {
                printf("bad secret: %s\n", why);
                return 2;
            }
            v.nsecrets++;
            i++;
        } else if (strcmp(a, "--header") == 0 && next != NULL && h.n < MAX && strchr(next, '=') != NULL) {
            char *eq = strchr(argv[i + 1], '=');
            *eq = '\0';
            h.name[h.n] = argv[i + 1];
            h.value[h.n++] = eq + 1;
            i++;
        } else if (strcmp(a, "--tolerance") == 0 && next != NULL) {
            v.tolerance_s = atoll(next);
            i++;
        } else if (strcmp(a, "--signature-header") == 0 && next != NULL) {
            v.signature_header = next;
            i++;
        } else if (strcmp(a, "--prefix") == 0 && next != NULL) {
            v.prefix = next;
            i++;
        } else if (strcmp(a, "--sha1") == 0) {
            v.sha1 = 1;
        } else if (strcmp(a, "--base64") == 0) {
            v.base64 = 1;
        } else {
            fprintf(stderr, "bad option %s\n", a);
            return 2;
        }
    }
    static char body[1 << 20];
    size_t len = fread(body, 1, sizeof(body), stdin);
    char why[300];
    int rc = gust_wh_verify(&v, header, &h, body, len, atoll(argv[2]), why, sizeof(why));
    for (size_t i = 0; i < v.nsecrets; i++) {
        gust_wh_secret_clear(&secrets[i]);
    }
    if (rc != 0) {
        printf("refused: %s\n", why);
        return 1;
    }
    printf("ok\n");
    return 0;
}
