/* Is an admin request meant for this server, and sent by a page of this server?
 *
 * A browser is the hazard on an admin API without a token (or with one a proxy adds):
 * any page it shows may send requests to 127.0.0.1:8787. Two things tell those apart:
 * - Origin: a browser names the page that sends a request (every POST, and every fetch
 *   that is not a plain GET); a page of another origin is refused whatever it asks.
 * - Host: a name of the attacker's that resolves to this server for a moment (DNS
 *   rebinding) makes the browser treat gust as the attacker's own origin, so Origin
 *   matches; the Host header still carries the attacker's name. Only the names this
 *   server answers to are accepted: the listen address, the connection's local address,
 *   localhost / 127.0.0.1 / [::1] on a loopback listener, and `server_names`.
 *
 * The port: the Host check compares names only. A proxy in front sends its own port
 * (`$http_host`) or none (`$host`), and what rebinding changes is the name, not the port.
 * The Origin check compares scheme, host and port: a page on localhost:3000 is another
 * origin than gust on localhost:8787. A Host without a port stands for its scheme's default
 * port (80, 443), as in the browser's own origin comparison (RFC 6454).
 *
 * Pure functions on text, no h2o: tests/unit/http/test_origin.c. */
#ifndef GUST_HTTP_ORIGIN_H
#define GUST_HTTP_ORIGIN_H

#include <stddef.h>

#include "gust/err.h"

#define GUST_SERVER_NAMES_MAX 32
#define GUST_SERVER_NAME_LEN 254

struct gust_admin_names {
    char listen_host[GUST_SERVER_NAME_LEN]; /* the listen address's host as written, lower case */
    int loopback;                           /* the listener is on 127.0.0.0/8, ::1 or localhost */
    int ssl;                                /* the listener is HTTPS: a Host without a port is :443 */
    char v[GUST_SERVER_NAMES_MAX][GUST_SERVER_NAME_LEN]; /* server_names, lower case */
    size_t n;
};

/* 1 when the host of listen ("host:port", "[v6]:port") is loopback: an IPv4 literal in
 * 127.0.0.0/8, ::1, or the name localhost. Any other name, and every wildcard (0.0.0.0,
 * [::], an empty host), is not. */
int gust_listen_is_loopback(const char *listen);

/* Fills names from the listen address and the server_names entries (borrowed). An entry
 * is a DNS name or an IP literal, without a port: errors name the entry. */
int gust_admin_names_init(struct gust_admin_names *names, const char *listen, int ssl,
                          const char *const *server_names, size_t count, struct gust_err *err);

/* Splits an authority ("name", "name:port", "[v6]", "[v6]:port") into its name (the
 * brackets of an IPv6 literal kept) and port (-1 when it has none). 0, or -1 when it is
 * not one (empty, a bad port, characters a host name cannot hold). */
int gust_authority_split(const char *s, size_t len, const char **name, size_t *name_len, int *port);

/* 1 when the name (as split above) is one this server answers to. local is the
 * connection's local address as text (an IPv4 literal or an IPv6 one without
 * brackets), or NULL. */
int gust_host_allowed(const struct gust_admin_names *names, const char *name, size_t len, const char *local);

/* 1 when the Origin header value names the same scheme, host and port as the request
 * (https: its scheme, the listener's or X-Forwarded-Proto from a trusted proxy; host,
 * host_len: its authority, from the client or a trusted proxy); a missing port on
 * either side is its scheme's default.
 * "null", another scheme than http/https or a malformed value is never the same. */
int gust_origin_same(const char *origin, size_t origin_len, const char *host, size_t host_len, int https);

#endif
