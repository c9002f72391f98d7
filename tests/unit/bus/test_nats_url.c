/* Unit test of host/bus/nats_url.c: the URLs gust -t accepts, what it makes of them, and
 * the log form that never shows credentials. */
#include <stdio.h>
#include <string.h>

#include "../../../host/bus/nats_url.h"

static int failures;

static void ok(const char *url, const char *host, const char *port, const char *text, int tls,
               const char *user, const char *pass, const char *token)
{
    struct gust_nats_url u;
    const char *why = gust_nats_url_parse(url, &u);
    if (why != NULL) {
        printf("FAIL: %s refused: %s\n", url, why);
        failures++;
        return;
    }
#define SAME(a, b) ((a) == NULL ? (b) == NULL : (b) != NULL && strcmp((a), (b)) == 0)
    if (!SAME(u.host, host) || !SAME(u.port, port) || !SAME(u.text, text) || u.tls != tls ||
        !SAME(u.user, user) || !SAME(u.pass, pass) || !SAME(u.token, token)) {
        printf("FAIL: %s -> host %s port %s text %s tls %d user %s pass %s token %s\n", url, u.host, u.port,
               u.text, u.tls, u.user ? u.user : "-", u.pass ? u.pass : "-", u.token ? u.token : "-");
        failures++;
    }
    gust_nats_url_free(&u);
}

static void bad(const char *url, const char *want)
{
    const char *why = gust_nats_url_parse(url, NULL);
    if (why == NULL || strstr(why, want) == NULL) {
        printf("FAIL: %s -> %s, want %s\n", url, why ? why : "accepted", want);
        failures++;
    }
}

int main(void)
{
    ok("nats://127.0.0.1:4222", "127.0.0.1", "4222", "nats://127.0.0.1:4222", 0, NULL, NULL, NULL);
    ok("tls://nats.example.com", "nats.example.com", "4222", "tls://nats.example.com", 1, NULL, NULL, NULL);
    ok("localhost:4333", "localhost", "4333", "nats://localhost:4333", 0, NULL, NULL, NULL);
    ok("nats://u:p@ss@h:1", "h", "1", "nats://h:1", 0, "u", "p@ss", NULL);
    ok("tls://s3cret@[::1]:4443/", "::1", "4443", "tls://[::1]:4443", 1, NULL, NULL, "s3cret");
    ok("nats://[::1]", "::1", "4222", "nats://[::1]", 0, NULL, NULL, NULL);
    bad("http://h:1", "only nats:// and tls://");
    bad("nats://@h:1", "empty credentials");
    bad("nats://:pw@h:1", "empty user name");
    bad("nats://h:0", "out of range");
    bad("nats://h:65536", "out of range");
    bad("nats://h:42x", "bad port");
    bad("nats://h:", "bad port");
    bad("nats://", "no host");
    bad("nats://[::1", "unclosed");
    bad("nats://[zz]:1", "bad IPv6");
    bad("nats://h o:1", "bad character");
    printf("%s\n", failures == 0 ? "ok" : "FAILED");
    return failures != 0;
}
