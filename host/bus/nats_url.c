#include "nats_url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/mem.h"

void gust_nats_url_free(struct gust_nats_url *u)
{
    free(u->host);
    free(u->port);
    free(u->user);
    free(u->pass);
    free(u->token);
    free(u->text);
    memset(u, 0, sizeof(*u));
}

/* A host name or address: printable, and none of the characters that end or split one. */
static int host_valid(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || c == '@' || c == '/' || c == '[' || c == ']' || c == '?' || c == '#') {
            return 0;
        }
    }
    return len > 0;
}

const char *gust_nats_url_parse(const char *url, struct gust_nats_url *u)
{
    const char *p = url, *sep = strstr(url, "://");
    int tls = 0;
    if (sep != NULL) {
        size_t scheme_len = (size_t)(sep - url);
        if (scheme_len == 3 && strncmp(url, "tls", 3) == 0) {
            tls = 1;
        } else if (scheme_len != 4 || strncmp(url, "nats", 4) != 0) {
            return "only nats:// and tls:// URLs are supported";
        }
        p = sep + 3;
    }
    const char *at = strrchr(p, '@');
    if (at != NULL && at == p) {
        return "empty credentials before '@'";
    }
    if (at != NULL && *p == ':') {
        return "empty user name before ':'";
    }
    const char *hostpart = at != NULL ? at + 1 : p;
    const char *host = hostpart, *host_end, *port = NULL;
    if (*host == '[') {
        host_end = strchr(host, ']');
        if (host_end == NULL) {
            return "unclosed [ in the host";
        }
        host++;
        if (host_end[1] == ':') {
            port = host_end + 2;
        } else if (host_end[1] != '\0' && host_end[1] != '/') {
            return "unexpected text after the host";
        }
        for (const char *c = host; c < host_end; c++) {
            if (strchr("0123456789abcdefABCDEF:.", *c) == NULL) {
                return "bad IPv6 address";
            }
        }
    } else {
        host_end = host + strcspn(host, ":/");
        if (*host_end == ':') {
            port = host_end + 1;
        }
    }
    size_t port_len = port != NULL ? strcspn(port, "/") : 0;
    if (host_end == host) {
        return "no host";
    }
    if (hostpart[0] != '[' && !host_valid(host, (size_t)(host_end - host))) {
        return "bad character in the host";
    }
    if (port != NULL) {
        if (port_len == 0 || port_len > 5 || strspn(port, "0123456789") < port_len) {
            return "bad port";
        }
        long n = strtol(port, NULL, 10);
        if (n < 1 || n > 65535) {
            return "port out of range (1-65535)";
        }
    }
    if (u == NULL) {
        return NULL;
    }
    memset(u, 0, sizeof(*u));
    u->tls = tls;
    u->host = gust_memdup(host, (size_t)(host_end - host));
    u->port = port != NULL ? gust_memdup(port, port_len) : strdup("4222");
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon != NULL) {
            u->user = gust_memdup(p, (size_t)(colon - p));
            u->pass = gust_memdup(colon + 1, (size_t)(at - colon - 1));
        } else {
            u->token = gust_memdup(p, (size_t)(at - p));
        }
    }
    /* The log's form: scheme, host and port, nothing else (no credentials, no path). */
    size_t authority_len =
        (size_t)((port != NULL ? port + port_len : host_end + (hostpart[0] == '[')) - hostpart);
    size_t tlen = authority_len + 8;
    if ((u->text = malloc(tlen)) != NULL) {
        snprintf(u->text, tlen, "%s://%.*s", tls ? "tls" : "nats", (int)authority_len, hostpart);
    }
    if (!u->host || !u->port || !u->text || (at != NULL && !u->token && !(u->user && u->pass))) {
        gust_nats_url_free(u);
        return "out of memory";
    }
    return NULL;
}
