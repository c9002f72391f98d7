#include "nats_url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static char *dup_range(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d != NULL) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

const char *gust_nats_url_parse(const char *url, struct gust_nats_url *u)
{
    const char *p = url, *sep = strstr(url, "://");
    if (sep != NULL) {
        if ((size_t)(sep - url) != 4 || strncmp(url, "nats", 4) != 0) {
            return "only nats:// URLs are supported (gust speaks plain NATS to its bus)";
        }
        p = sep + 3;
    }
    const char *at = strrchr(p, '@');
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
    if (port != NULL && (port_len == 0 || port_len > 5 || strspn(port, "0123456789") < port_len)) {
        return "bad port";
    }
    if (u == NULL) {
        return NULL;
    }
    memset(u, 0, sizeof(*u));
    u->host = dup_range(host, (size_t)(host_end - host));
    u->port = port != NULL ? dup_range(port, port_len) : strdup("4222");
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon != NULL) {
            u->user = dup_range(p, (size_t)(colon - p));
            u->pass = dup_range(colon + 1, (size_t)(at - colon - 1));
        } else {
            u->token = dup_range(p, (size_t)(at - p));
        }
    }
    size_t tlen = strlen(hostpart) + 8;
    if ((u->text = malloc(tlen)) != NULL) {
        snprintf(u->text, tlen, "nats://%s", hostpart);
    }
    if (!u->host || !u->port || !u->text || (at != NULL && !u->token && !(u->user && u->pass))) {
        gust_nats_url_free(u);
        return "out of memory";
    }
    return NULL;
}
