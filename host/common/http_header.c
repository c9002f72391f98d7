/* Checking the "Name: value" header lines a user writes in host.conf, for the plugins
 * that speak HTTP (http_out, http_poll): see gust/sdk.h. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "gust/sdk.h"

const char *gust_http_header_problem(const char *line)
{
    const char *colon = strchr(line, ':');

    if (!colon || colon == line) {
        return "is not \"Name: value\"";
    }
    for (const char *p = line; p < colon; p++) {
        if (!isgraph((unsigned char)*p)) {
            return "has a space or control character in its name";
        }
    }
    if (strpbrk(line, "\r\n")) {
        return "holds a line break";
    }
    return NULL;
}

int gust_http_header_is(const char *line, const char *name)
{
    size_t n = strlen(name);
    return strncasecmp(line, name, n) == 0 && line[n] == ':';
}
