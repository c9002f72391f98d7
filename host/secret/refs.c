/* `{secret:PATH#KEY}` in text: the references a configuration names. */
#include <string.h>

#include "secret.h"

const char *gust_secret_ref_problem(const char *ref, size_t len)
{
    const char *hash = memchr(ref, '#', len);
    if (len == 0 || len > 250) {
        return "is empty or longer than 250 characters";
    }
    if (hash == NULL || hash == ref || hash == ref + len - 1 ||
        memchr(hash + 1, '#', len - (size_t)(hash - ref) - 1)) {
        return "is not PATH#KEY";
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)ref[i];
        if (c <= ' ' || c == '{' || c == '}' || c == '"' || c == '\\' || c == '?' || c == '%' || c == 127) {
            return "holds a space, a control character or one of {}\"\\?%";
        }
    }
    if (strstr(ref, "..") != NULL && (size_t)(strstr(ref, "..") - ref) < len) {
        return "holds ..";
    }
    return NULL;
}

int gust_secret_refs_each(const char *text, int (*fn)(void *ud, const char *ref, size_t len), void *ud)
{
    static const char open[] = "{secret:";
    for (const char *s = strstr(text, open); s != NULL; s = strstr(s + 1, open)) {
        const char *ref = s + sizeof(open) - 1;
        size_t len = strcspn(ref, "}");
        int rc = fn(ud, ref, len);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}
