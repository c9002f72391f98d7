/* Which user properties of an MQTT 5.0 PUBLISH become the event's NATS headers.
 *
 * The W3C trace context always does: `traceparent` and `tracestate`, under those names
 * (the host looks them up so, whatever case the publisher used), so a trace started by
 * the publisher goes on through the flows to http_out. Given twice, neither is kept, as
 * ingest does with HTTP headers (W3C: a repeated traceparent is ignored). The host
 * checks a traceparent's form when a unit reads it; one it cannot parse starts no span.
 *
 * Other user properties are kept when `headers` names them (any case; the name as the
 * publisher sent it, every occurrence), as a webhook keeps request headers. Skipped: a
 * name that is not a header token or starts with "Nats-" (JetStream acts on those), a
 * value with a line break or NUL, over 4096 bytes, or not UTF-8. */
#include <string.h>
#include <strings.h>

#include "mqtt.h"
#include "mqtt_wire.h"

#define MAX_VALUE 4096

static int token_ok(const unsigned char *s, size_t len)
{
    if (len == 0 || len > 128) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] <= 32 || s[i] >= 127 || s[i] == ':') {
            return 0;
        }
    }
    return !(len >= 5 && strncasecmp((const char *)s, "Nats-", 5) == 0);
}

static int value_ok(const unsigned char *s, size_t len)
{
    if (len > MAX_VALUE || !gust_utf8_valid((const char *)s, len)) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0') {
            return 0;
        }
    }
    return 1;
}

static int name_is(const struct mqtt_prop *p, const char *name)
{
    return p->slen == strlen(name) && strncasecmp((const char *)p->s, name, p->slen) == 0;
}

static int listed(const struct mqtt_prop *p, const char *const *keep, size_t nkeep)
{
    for (size_t i = 0; i < nkeep; i++) {
        if (name_is(p, keep[i])) {
            return 1;
        }
    }
    return 0;
}

size_t mqtt_props_headers(const unsigned char *props, size_t len, const char *const *keep, size_t nkeep,
                          struct mqtt_kept *out, size_t max)
{
    static const char *const trace[2] = {"traceparent", "tracestate"};
    struct mqtt_prop p;
    struct mqtt_kept tr[2] = {{0}};
    int seen[2] = {0, 0};
    size_t n = 0, at = 0;

    /* The properties were checked when the PUBLISH was parsed: this walk cannot fail
     * midway, and stops at the first error if it did. */
    while (mqtt_wire_prop_next(props, len, &at, &p) > 0) {
        if (p.id != MQTT_P_USER_PROPERTY || !token_ok(p.s, p.slen) || !value_ok(p.v, p.vlen)) {
            continue;
        }
        int t = name_is(&p, trace[0]) ? 0 : name_is(&p, trace[1]) ? 1 : -1;
        if (t >= 0) {
            if (seen[t]++ == 0) {
                tr[t] = (struct mqtt_kept){trace[t], strlen(trace[t]), (const char *)p.v, p.vlen};
            }
            continue;
        }
        if (n < max && listed(&p, keep, nkeep)) {
            out[n++] = (struct mqtt_kept){(const char *)p.s, p.slen, (const char *)p.v, p.vlen};
        }
    }
    /* A tracestate means nothing without its one traceparent. */
    if (seen[0] == 1 && tr[0].vlen > 0) {
        for (int t = 0; t < 2 && n < max; t++) {
            if (seen[t] == 1) {
                out[n++] = tr[t];
            }
        }
    }
    return n;
}
