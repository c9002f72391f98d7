/* The url key, read strictly: what http_out can send to and nothing else. No user info, no
 * relative forms, no spaces or non-ASCII (a URL with those is a typo in host.conf, and a
 * lenient reading would send somewhere the user did not mean). */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "http_out.h"

static int host_char(int c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_';
}

int http_out_url_parse(struct http_out_url *u, const char *url)
{
    const char *p;

    memset(u, 0, sizeof(*u));
    if (strncasecmp(url, "http://", 7) == 0) {
        p = url + 7;
        u->port = 80;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        p = url + 8;
        u->tls = 1;
        u->port = 443;
    } else {
        return -1;
    }
    for (const char *c = p; *c; c++) {
        if (*c <= ' ' || *c >= 0x7f) {
            return -1;
        }
    }
    u->authority = p;
    const char *h = p, *hend;
    if (*p == '[') { /* an IPv6 literal; it goes to getaddrinfo and TLS without brackets */
        h = ++p;
        while (isxdigit((unsigned char)*p) || *p == ':' || *p == '.') {
            p++;
        }
        if (*p != ']') {
            return -1;
        }
        hend = p++;
    } else {
        while (host_char((unsigned char)*p)) {
            p++;
        }
        hend = p;
    }
    if (hend == h || (size_t)(hend - h) >= sizeof(u->host)) {
        return -1;
    }
    memcpy(u->host, h, (size_t)(hend - h));
    if (*p == ':') {
        long port = 0;
        const char *d = ++p;
        while (isdigit((unsigned char)*p) && port <= 65535) {
            port = port * 10 + (*p++ - '0');
        }
        if (p == d || port < 1 || port > 65535) {
            return -1;
        }
        u->port = (int)port;
    }
    u->authority_len = (size_t)(p - u->authority);
    if (*p != '\0' && *p != '/' && *p != '?' && *p != '#') {
        return -1; /* "@" (user info) or another character that cannot end a host */
    }
    /* The fragment is the client's: it is never sent. */
    u->target = p;
    u->target_len = strcspn(p, "#");
    return 0;
}
