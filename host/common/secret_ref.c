#include "secret_ref.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int (*secret_fn)(const char *ref, size_t reflen, char *out, size_t outsz, size_t *len, char *why,
                         size_t whysz);
static secret_fn store_value;
static pthread_once_t store_once = PTHREAD_ONCE_INIT;

static void find_store(void)
{
    void *sym = dlsym(RTLD_DEFAULT, "gust_secret_value");
    memcpy(&store_value, &sym, sizeof(sym)); /* a data pointer to a function pointer */
}

int gust_secret_ref_value(const char *ref, size_t reflen, char *out, size_t outsz, size_t *len, char *why,
                          size_t whysz)
{
    pthread_once(&store_once, find_store);
    if (store_value == NULL) {
        snprintf(why, whysz, "{secret:%.*s}: no secret store in this process", (int)reflen, ref);
        return -1;
    }
    return store_value(ref, reflen, out, outsz, len, why, whysz);
}
