#include "subject.h"

int gust_subject_valid(const char *s, size_t len, int allow_wildcards)
{
    size_t tok = 0; /* start of the current token */

    if (s == NULL || len == 0) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.') {
            if (i == tok) {
                return 0; /* leading dot or ".." */
            }
            tok = i + 1;
        } else if (c <= ' ' || c >= 0x7f) {
            return 0; /* space, control or non-ASCII byte */
        } else if (c == '*' || c == '>') {
            /* A wildcard is a whole token; '>' must also be the last one. */
            size_t next = i + 1;
            if (!allow_wildcards || i != tok) {
                return 0;
            }
            if (c == '*' ? (next < len && s[next] != '.') : next != len) {
                return 0;
            }
        }
    }
    return tok < len; /* a trailing dot leaves an empty last token */
}
