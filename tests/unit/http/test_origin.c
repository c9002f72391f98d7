/* Unit test of who an admin request may come from (host/http/origin.c): which listen
 * addresses are loopback, the names a listener answers to, Host parsing, and the Origin
 * comparison with its ports and schemes. */
#include <stdio.h>
#include <string.h>

#include "../../../host/http/origin.h"

static int failures;

static void expect(int got, int want, const char *what)
{
    if (got != want) {
        printf("FAIL: %s: got %d, want %d\n", what, got, want);
        failures++;
    }
}

static int allowed(const struct gust_admin_names *n, const char *host, const char *local)
{
    const char *name;
    size_t len;
    int port;
    if (gust_authority_split(host, strlen(host), &name, &len, &port) != 0) {
        return -1;
    }
    return gust_host_allowed(n, name, len, local);
}

static int same(const char *origin, const char *host, int https)
{
    return gust_origin_same(origin, strlen(origin), host, strlen(host), https);
}

int main(void)
{
    expect(gust_listen_is_loopback("127.0.0.1:8787"), 1, "127.0.0.1");
    expect(gust_listen_is_loopback("127.0.0.2:8787"), 1, "127.0.0.2 (127.0.0.0/8)");
    expect(gust_listen_is_loopback("127.255.1.9:1"), 1, "127.255.1.9");
    expect(gust_listen_is_loopback("[::1]:8787"), 1, "[::1]");
    expect(gust_listen_is_loopback("LocalHost:8787"), 1, "localhost");
    expect(gust_listen_is_loopback("0.0.0.0:8787"), 0, "0.0.0.0");
    expect(gust_listen_is_loopback("[::]:8787"), 0, "[::]");
    expect(gust_listen_is_loopback(":8787"), 0, "empty host");
    expect(gust_listen_is_loopback("10.0.0.1:8787"), 0, "10.0.0.1");
    expect(gust_listen_is_loopback("128.0.0.1:8787"), 0, "128.0.0.1");
    expect(gust_listen_is_loopback("gust.example.com:8787"), 0, "a name");
    expect(gust_listen_is_loopback("[::ffff:127.0.0.1]:8787"), 1, "IPv4-mapped loopback");

    const char *name;
    size_t len;
    int port;
    expect(gust_authority_split("a.b:80", 6, &name, &len, &port), 0, "a.b:80 splits");
    expect((int)len * 100000 + port, 3 * 100000 + 80, "a.b:80: name and port");
    expect(gust_authority_split("[::1]:8787", 10, &name, &len, &port), 0, "[::1]:8787 splits");
    expect((int)len * 100000 + port, 5 * 100000 + 8787, "[::1]:8787: name and port");
    expect(gust_authority_split("a.b", 3, &name, &len, &port) == 0 && port == -1, 1, "no port");
    expect(gust_authority_split("", 0, &name, &len, &port), -1, "empty");
    expect(gust_authority_split("a.b:", 4, &name, &len, &port), -1, "empty port");
    expect(gust_authority_split("a.b:0", 5, &name, &len, &port), -1, "port 0");
    expect(gust_authority_split("a.b:65536", 9, &name, &len, &port), -1, "port over 65535");
    expect(gust_authority_split("a.b:80x", 7, &name, &len, &port), -1, "port with a letter");
    expect(gust_authority_split("a b", 3, &name, &len, &port), -1, "a space");
    expect(gust_authority_split("a@b", 3, &name, &len, &port), -1, "user info");
    expect(gust_authority_split("[::1", 4, &name, &len, &port), -1, "unclosed bracket");
    expect(gust_authority_split("[::1]x", 6, &name, &len, &port), -1, "junk after the bracket");

    struct gust_admin_names lo;
    struct gust_err err;
    const char *names[] = {"Gust.Example.com", "[2001:db8::1]", "192.0.2.7"};
    expect(gust_admin_names_init(&lo, "127.0.0.1:8787", 0, names, 3, &err), 0, "names init");
    expect(lo.loopback, 1, "loopback listener");
    expect(allowed(&lo, "127.0.0.1:8787", "127.0.0.1"), 1, "the listen address");
    expect(allowed(&lo, "localhost", NULL), 1, "localhost without a port");
    expect(allowed(&lo, "LOCALHOST:9", NULL), 1, "localhost, another port, upper case");
    expect(allowed(&lo, "[::1]:8787", NULL), 1, "[::1]");
    expect(allowed(&lo, "gust.example.COM:443", NULL), 1, "a server name, any case and port");
    expect(allowed(&lo, "[2001:db8::1]", NULL), 1, "an IPv6 server name");
    expect(allowed(&lo, "192.0.2.7:80", NULL), 1, "an IPv4 server name");
    expect(allowed(&lo, "evil.example", "127.0.0.1"), 0, "another name");
    expect(allowed(&lo, "localhost.evil.example", NULL), 0, "a name that starts like localhost");
    expect(allowed(&lo, "127.0.0.1.evil.example", NULL), 0, "a name that starts like 127.0.0.1");
    expect(allowed(&lo, "example.com", NULL), 0, "a suffix of a server name");
    expect(allowed(&lo, "10.0.0.1", "127.0.0.1"), 0, "an address that is not the local one");

    struct gust_admin_names any;
    expect(gust_admin_names_init(&any, "0.0.0.0:8787", 0, NULL, 0, &err), 0, "wildcard init");
    expect(any.loopback, 0, "0.0.0.0 is not loopback");
    expect(allowed(&any, "localhost:8787", "127.0.0.1"), 0, "localhost is no name of a wildcard listener");
    expect(allowed(&any, "127.0.0.1:8787", "127.0.0.1"), 1, "the local address of the connection");
    expect(allowed(&any, "10.1.2.3:8787", "10.1.2.3"), 1, "another local address");
    expect(allowed(&any, "[::ffff:10.1.2.3]:8787", "10.1.2.3"), 1, "IPv4-mapped local address");
    expect(allowed(&any, "0.0.0.0:8787", "127.0.0.1"), 0, "the wildcard itself");
    expect(allowed(&any, "10.1.2.4:8787", "10.1.2.3"), 0, "an address not the local one");

    struct gust_admin_names named;
    expect(gust_admin_names_init(&named, "gust.internal:8787", 0, NULL, 0, &err), 0, "named listener init");
    expect(allowed(&named, "GUST.internal:8787", NULL), 1, "the listen name");
    expect(named.loopback, 0, "a name is not loopback");

    const char *bad[] = {"a.example:443"};
    expect(gust_admin_names_init(&named, "127.0.0.1:1", 0, bad, 1, &err), GUST_ECONFIG,
           "a server name with a port");
    expect(strstr(err.msg, "a.example:443") != NULL, 1, "the error names the entry");
    const char *bad2[] = {"*.example"};
    expect(gust_admin_names_init(&named, "127.0.0.1:1", 0, bad2, 1, &err), GUST_ECONFIG, "a wildcard name");

    expect(same("http://127.0.0.1:8787", "127.0.0.1:8787", 0), 1, "same origin");
    expect(same("HTTP://LocalHost:8787", "localhost:8787", 0), 1, "same origin, any case");
    expect(same("http://127.0.0.1:8788", "127.0.0.1:8787", 0), 0, "another port");
    expect(same("http://localhost:8787", "127.0.0.1:8787", 0), 0, "another name");
    expect(same("https://127.0.0.1:8787", "127.0.0.1:8787", 0), 0, "another scheme");
    expect(same("http://gust.example", "gust.example", 0), 1, "port 80 both");
    expect(same("http://gust.example:80", "gust.example", 0), 1, "80 written or not");
    expect(same("https://gust.example", "gust.example", 1), 1, "443 both");
    expect(same("https://gust.example", "gust.example:443", 1), 1, "443 written or not");
    expect(same("http://gust.example:8080", "gust.example", 0), 0, "a Host without its port is 80");
    expect(same("http://[::1]:8787", "[::1]:8787", 0), 1, "IPv6");
    expect(same("null", "127.0.0.1:8787", 0), 0, "null");
    expect(same("file://", "127.0.0.1:8787", 0), 0, "another scheme");
    expect(same("http://127.0.0.1:8787/x", "127.0.0.1:8787", 0), 0, "an origin with a path");
    expect(same("http://", "127.0.0.1:8787", 0), 0, "no host");
    expect(same("http://a.b", "", 0), 0, "no Host");

    printf("%d failures\n", failures);
    return failures != 0;
}
