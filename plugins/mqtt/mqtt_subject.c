/* MQTT topic <-> NATS subject.
 *
 * topic -> subject (mqtt_in, `subject_prefix P`): P, then each topic level as one subject
 * token, '/' becoming '.'. Inside a level every byte that a NATS token cannot hold, or
 * that would make the mapping ambiguous, is written %XX (two upper-case hex digits):
 *   '.'  '*'  '>'  '%'  space, control characters (< 0x21, 0x7f), bytes >= 0x80
 * (so subjects stay ASCII even for UTF-8 topics). An empty level (a//b, /a, a/) becomes
 * the token "%00": MQTT forbids U+0000 in topics, so no real byte escapes to it.
 *   sensors/room 1/t.c     -> P.sensors.room%201.t%2Ec
 *   a//b                   -> P.a.%00.b
 *   $SYS/broker/uptime     -> P.$SYS.broker.uptime
 * The mapping is injective and mqtt_subject_to_topic inverts it, so a topic that goes
 * through mqtt_in and comes back out of mqtt_out with `topic_from_subject` is unchanged. */
#include <string.h>

#include "mqtt.h"

static int needs_escape(unsigned char b)
{
    return b <= 0x20 || b >= 0x7f || b == '.' || b == '*' || b == '>' || b == '%';
}

static const char HEX[] = "0123456789ABCDEF";

int mqtt_topic_to_subject(const char *prefix, const char *topic, size_t topic_len, char *out, size_t outsz)
{
    size_t o = 0, plen = strlen(prefix);
    int level_empty = 1;

#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (o + 1 >= outsz) {                                                                      \
            return -1;                                                                             \
        }                                                                                          \
        out[o++] = (char)(c);                                                                      \
    } while (0)
#define PUT_ESC(b)                                                                                 \
    do {                                                                                           \
        PUT('%');                                                                                  \
        PUT(HEX[(b) >> 4]);                                                                        \
        PUT(HEX[(b)&0xf]);                                                                         \
    } while (0)

    for (size_t i = 0; i < plen; i++) {
        PUT(prefix[i]);
    }
    PUT('.');
    for (size_t i = 0; i <= topic_len; i++) {
        if (i == topic_len || topic[i] == '/') {
            if (level_empty) {
                PUT_ESC(0);
            }
            if (i < topic_len) {
                PUT('.');
            }
            level_empty = 1;
            continue;
        }
        unsigned char b = (unsigned char)topic[i];
        level_empty = 0;
        if (needs_escape(b)) {
            PUT_ESC(b);
        } else {
            PUT(b);
        }
    }
    out[o] = '\0';
    return (int)o;
#undef PUT_ESC
#undef PUT
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

int mqtt_subject_to_topic(const char *strip, const char *subject, char *out, size_t outsz)
{
    size_t o = 0, slen = strip ? strlen(strip) : 0;
    const char *s = subject;

    /* Only a whole-token prefix is stripped: strip "ev.out" leaves ev.outer.x alone. */
    if (slen && strncmp(subject, strip, slen) == 0 && subject[slen] == '.') {
        s = subject + slen + 1;
    }
    while (*s) {
        char c = *s++;
        if (c == '.') {
            c = '/';
        } else if (c == '%' && hexval(s[0]) >= 0 && hexval(s[1]) >= 0) {
            int b = hexval(s[0]) << 4 | hexval(s[1]);
            s += 2;
            if (b == 0) {
                continue; /* "%00": an empty level */
            }
            c = (char)b;
        }
        if (o + 1 >= outsz) {
            return -1;
        }
        out[o++] = c;
    }
    if (outsz == 0) {
        return -1;
    }
    out[o] = '\0';
    return (int)o;
}
