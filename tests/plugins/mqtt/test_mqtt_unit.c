/* Unit tests of mqtt's pure parts: the topic <-> subject mapping (both ways, and that
 * it inverts), the JSON-object check and the wrap, MQTT packet framing, and MQTT 5.0's
 * packets, properties (malformed ones too) and the user properties kept as headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../check.h"

#include "mqtt.h"
#include "mqtt_wire.h"

const struct gust_host_api *mqtt_host; /* the pure parts never call it */


static void subject_case(const char *topic, const char *want)
{
    char s[512], t[512];
    int n = mqtt_topic_to_subject("ev.mqtt", topic, strlen(topic), s, sizeof(s));
    CHECK(n >= 0 && strcmp(s, want) == 0, "topic %s -> %s, want %s", topic, s, want);
    n = mqtt_subject_to_topic("ev.mqtt", s, t, sizeof(t));
    CHECK(n >= 0 && strcmp(t, topic) == 0, "subject %s -> topic %s, want %s", s, t, topic);
}

static void test_subjects(void)
{
    char s[16];

    subject_case("a/b/c", "ev.mqtt.a.b.c");
    subject_case("sensors/room 1/t.c", "ev.mqtt.sensors.room%201.t%2Ec");
    subject_case("a//b", "ev.mqtt.a.%00.b");
    subject_case("/a/", "ev.mqtt.%00.a.%00");
    subject_case("x*y>z%", "ev.mqtt.x%2Ay%3Ez%25");
    subject_case("$SYS/uptime", "ev.mqtt.$SYS.uptime");
    subject_case("caf\xc3\xa9\t", "ev.mqtt.caf%C3%A9%09");
    CHECK(mqtt_topic_to_subject("ev.mqtt", "abcdefgh", 8, s, sizeof(s)) < 0, "overflow is refused");

    char t[64];
    mqtt_subject_to_topic("ev.out", "ev.outer.x", t, sizeof(t));
    CHECK(strcmp(t, "ev/outer/x") == 0, "only whole tokens are stripped: %s", t);
    mqtt_subject_to_topic(NULL, "ev.a.b", t, sizeof(t));
    CHECK(strcmp(t, "ev/a/b") == 0, "no strip: %s", t);
}

static void test_payload(void)
{
    CHECK(mqtt_is_json_object("{\"a\":1}", 7), "object");
    CHECK(mqtt_is_json_object(" {\"a\":[1,2,{}]}\n", 16), "object with white space");
    CHECK(!mqtt_is_json_object("[1]", 3), "array is not an object");
    CHECK(!mqtt_is_json_object("42", 2), "number is not an object");
    CHECK(!mqtt_is_json_object("{\"a\":1} x", 9), "trailing garbage");
    CHECK(!mqtt_is_json_object("{\"a\":1}{}", 9), "two objects");
    CHECK(!mqtt_is_json_object("{\"a\":\"\xff\"}", 9), "invalid UTF-8");
    CHECK(!mqtt_is_json_object("", 0), "empty");

    size_t n;
    char *w = mqtt_wrap_payload("t/\"q\"", 5, "hi!\x01", 4, &n);
    const char *want = "{\"payload_base64\":\"aGkhAQ==\",\"topic\":\"t/\\\"q\\\"\"}";
    CHECK(w && n == strlen(want) && memcmp(w, want, n) == 0, "wrap: %.*s", (int)n, w ? w : "");
    CHECK(w && mqtt_is_json_object(w, n), "wrap is a JSON object");
    free(w);
    w = mqtt_wrap_payload("x", 1, "", 0, &n);
    CHECK(w && strncmp(w, "{\"payload_base64\":\"\",", 21) == 0, "wrap of empty payload");
    free(w);
}

static void test_wire(void)
{
    struct mqtt_wbuf b = {0};
    struct mqtt_packet p;
    struct mqtt_publish pub;
    const char *filters[] = {"a/#", "b/+"};

    struct mqtt_connect_opts co = {.version = MQTT_V311, .clean = 0, .keepalive_s = 30};
    CHECK(mqtt_wire_connect(&b, &co, "cid", "u", "pw") == 0, "connect");
    CHECK(mqtt_wire_next(b.p, b.len, 1 << 20, &p) == (long)b.len && p.type == MQTT_CONNECT, "connect framing");
    CHECK(p.body[7] == 0xC0 && p.body[9] == 30, "connect flags (user, password, no clean) and keepalive");
    CHECK(mqtt_wire_next(b.p, b.len - 1, 1 << 20, &p) == 0, "short buffer wants more");
    b.len = 0;
    CHECK(mqtt_wire_subscribe(&b, MQTT_V311, 7, filters, 2, 1) == 0 && b.p[0] == 0x82, "subscribe header");
    b.len = 0;
    mqtt_wire_ack(&b, MQTT_V311, MQTT_PUBACK, 0x1234, 0);
    CHECK(b.len == 4 && b.p[0] == 0x40 && b.p[2] == 0x12 && b.p[3] == 0x34, "puback");

    /* A QoS 1 PUBLISH with a 200-byte payload: a two-byte remaining length. */
    unsigned char pkt[300] = {0x32 | 0x08};
    size_t rem = 2 + 3 + 2 + 200;
    pkt[1] = (unsigned char)(rem % 128 | 0x80);
    pkt[2] = (unsigned char)(rem / 128);
    memcpy(pkt + 3, "\x00\x03" "a/b" "\x00\x05", 7);
    memset(pkt + 10, 'x', 200);
    CHECK(mqtt_wire_next(pkt, 3 + rem, 1 << 20, &p) == (long)(3 + rem), "publish framing");
    const char *why;
    CHECK(mqtt_wire_publish_parse(&p, MQTT_V311, &pub, &why) == 0 && pub.qos == 1 && pub.dup == 1 && pub.id == 5 &&
              pub.topic_len == 3 && memcmp(pub.topic, "a/b", 3) == 0 && pub.payload_len == 200,
          "publish parse");
    CHECK(!mqtt_wire_publish_fits(1, MQTT_MAX_PACKET, 0) &&
              mqtt_wire_publish_fits(1, MQTT_MAX_PACKET - 3, 0) && !mqtt_wire_publish_fits(65536, 0, 0),
          "packet size limit");
    CHECK(mqtt_wire_next(pkt, 3 + rem, 100, &p) == -1, "over max_len");
    unsigned char bad[] = {0x30, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(mqtt_wire_next(bad, sizeof(bad), 1u << 30, &p) == -1, "five length bytes");

    mqtt_wbuf_free(&b);
}

/* A 5.0 QoS 1 PUBLISH of topic "t", id 9, the properties props[0..plen) and payload "{}"
 * into pkt; returns its length. */
static size_t publish5(unsigned char *pkt, const unsigned char *props, size_t plen)
{
    size_t rem = 2 + 1 + 2 + 1 + plen + 2;
    pkt[0] = 0x32;
    pkt[1] = (unsigned char)rem; /* the tests keep it under 128 */
    memcpy(pkt + 2, "\x00\x01t\x00\x09", 5);
    pkt[7] = (unsigned char)plen;
    if (plen > 0) {
        memcpy(pkt + 8, props, plen);
    }
    memcpy(pkt + 8 + plen, "{}", 2);
    return 2 + rem;
}

static void test_wire_v5(void)
{
    struct mqtt_wbuf b = {0};
    struct mqtt_packet p;
    struct mqtt_publish pub;
    const char *why, *filters[] = {"a/#"};
    unsigned char pkt[200];

    /* CONNECT: level 5, session expiry (persistent: never), receive maximum, topic alias maximum 0. */
    struct mqtt_connect_opts co = {.version = MQTT_V5, .clean = 0, .keepalive_s = 30, .receive_max = 64};
    CHECK(mqtt_wire_connect(&b, &co, "cid", NULL, NULL) == 0, "v5 connect");
    CHECK(mqtt_wire_next(b.p, b.len, 1 << 20, &p) == (long)b.len && p.type == MQTT_CONNECT, "v5 connect framing");
    CHECK(p.body[6] == 5 && p.body[10] == 11, "protocol level 5 and 11 bytes of properties");
    CHECK(memcmp(p.body + 11, "\x11\xff\xff\xff\xff\x21\x00\x40\x22\x00\x00", 11) == 0, "connect properties");
    b.len = 0;
    co.clean = 1;
    mqtt_wire_connect(&b, &co, "cid", NULL, NULL);
    CHECK(memcmp(b.p + 2 + 11, "\x11\x00\x00\x00\x00", 5) == 0, "clean: the session ends with the connection");
    b.len = 0;
    CHECK(mqtt_wire_subscribe(&b, MQTT_V5, 7, filters, 1, 1) == 0 && b.len == 2 + 2 + 1 + 5 + 1 && b.p[4] == 0 &&
              b.p[10] == 1,
          "v5 subscribe: empty properties, options QoS 1");
    b.len = 0;
    mqtt_wire_ack(&b, MQTT_V5, MQTT_PUBACK, 0x1234, MQTT_RC_PAYLOAD_FORMAT_INVALID);
    CHECK(b.len == 5 && b.p[0] == 0x40 && b.p[1] == 3 && b.p[4] == 0x99, "v5 puback with reason code");
    b.len = 0;
    mqtt_wire_disconnect(&b, MQTT_V5, MQTT_RC_TOPIC_ALIAS_INVALID);
    CHECK(b.len == 3 && b.p[0] == 0xe0 && b.p[2] == 0x94, "v5 disconnect with reason code");

    /* Properties: every type, then the user properties kept as headers. */
    static const unsigned char props[] = {
        0x01, 0x01,                                /* payload format indicator */
        0x02, 0, 0, 0, 60,                         /* message expiry */
        0x0B, 0x81, 0x01,                          /* subscription identifier 129 (varint) */
        0x03, 0, 4, 'j', 's', 'o', 'n',            /* content type */
        0x09, 0, 2, 0xff, 0x00,                    /* correlation data (binary) */
        0x26, 0, 11, 'T', 'r', 'a', 'c', 'e', 'p', 'a', 'r', 'e', 'n', 't', 0, 3, '0', '0', '-',
        0x26, 0, 3, 'X', '-', 'A', 0, 1, 'v',      /* kept: listed */
        0x26, 0, 3, 'X', '-', 'B', 0, 1, 'w',      /* not listed */
        0x26, 0, 8, 'N', 'a', 't', 's', '-', 'M', 's', 'g', 0, 1, 'x', /* never kept */
        0x26, 0, 3, 'x', '-', 'a', 0, 2, 'a', '\n', /* a line break: skipped */
    };
    size_t n = publish5(pkt, props, sizeof(props));
    CHECK(mqtt_wire_next(pkt, n, 1 << 20, &p) == (long)n, "v5 publish framing");
    CHECK(mqtt_wire_publish_parse(&p, MQTT_V5, &pub, &why) == 0 && pub.id == 9 && pub.props_len == sizeof(props) &&
              pub.payload_len == 2 && memcmp(pub.payload, "{}", 2) == 0,
          "v5 publish parse: properties skipped to the payload");
    struct mqtt_prop pr;
    size_t at = 0;
    int count = 0, rc;
    while ((rc = mqtt_wire_prop_next(pub.props, pub.props_len, &at, &pr)) > 0) {
        count++;
        if (pr.id == 0x0B) {
            CHECK(pr.num == 129, "varint property: %u", pr.num);
        }
    }
    CHECK(rc == 0 && count == 10, "ten properties, then the end (%d, %d)", rc, count);
    const char *keep[] = {"x-a"};
    struct mqtt_kept kept[8];
    size_t nk = mqtt_props_headers(pub.props, pub.props_len, keep, 1, kept, 8);
    CHECK(nk == 2, "two headers kept: %zu", nk);
    CHECK(nk == 2 && kept[0].nlen == 3 && memcmp(kept[0].name, "X-A", 3) == 0 && kept[0].vlen == 1,
          "a listed user property, named as sent");
    CHECK(nk == 2 && strcmp(kept[1].name, "traceparent") == 0 && kept[1].vlen == 3,
          "traceparent, whatever its case, under the host's name");

    /* traceparent twice: neither is kept (W3C), nor the tracestate that goes with it. */
    static const unsigned char twice[] = {0x26, 0, 11, 't', 'r', 'a', 'c', 'e', 'p', 'a', 'r', 'e', 'n', 't', 0, 1, 'a',
                                          0x26, 0, 10, 't', 'r', 'a', 'c', 'e', 's', 't', 'a', 't', 'e', 0, 1, 'b',
                                          0x26, 0, 11, 't', 'r', 'a', 'c', 'e', 'p', 'a', 'r', 'e', 'n', 't', 0, 1, 'c'};
    CHECK(mqtt_props_headers(twice, sizeof(twice), NULL, 0, kept, 8) == 0, "a repeated traceparent is dropped");
    CHECK(mqtt_props_headers(twice, sizeof(twice) - 17, NULL, 0, kept, 8) == 2 && strcmp(kept[1].name, "tracestate") == 0,
          "traceparent and tracestate once each");

    /* Malformed: a property length past the section, a section past the packet, an
     * unknown id, a varint of five bytes; a topic alias (never allowed). */
    static const unsigned char past[] = {0x26, 0, 9, 'a', 0, 1, 'b'};
    n = publish5(pkt, past, sizeof(past));
    mqtt_wire_next(pkt, n, 1 << 20, &p);
    CHECK(mqtt_wire_publish_parse(&p, MQTT_V5, &pub, &why) == MQTT_RC_MALFORMED, "a string past its section");
    static const unsigned char unknown[] = {0x7f, 0};
    n = publish5(pkt, unknown, sizeof(unknown));
    mqtt_wire_next(pkt, n, 1 << 20, &p);
    CHECK(mqtt_wire_publish_parse(&p, MQTT_V5, &pub, &why) == MQTT_RC_MALFORMED, "an unknown property id");
    static const unsigned char varint5[] = {0x0B, 0x80, 0x80, 0x80, 0x80, 0x01};
    n = publish5(pkt, varint5, sizeof(varint5));
    mqtt_wire_next(pkt, n, 1 << 20, &p);
    CHECK(mqtt_wire_publish_parse(&p, MQTT_V5, &pub, &why) == MQTT_RC_MALFORMED, "a five-byte varint");
    static const unsigned char alias[] = {0x23, 0, 1};
    n = publish5(pkt, alias, sizeof(alias));
    mqtt_wire_next(pkt, n, 1 << 20, &p);
    CHECK(mqtt_wire_publish_parse(&p, MQTT_V5, &pub, &why) == MQTT_RC_TOPIC_ALIAS_INVALID && strstr(why, "topic alias"),
          "a topic alias is refused: %s", why);
    n = publish5(pkt, NULL, 0);
    pkt[7] = 5; /* properties said longer than what is left (the payload's 2 bytes) */
    mqtt_wire_next(pkt, n, 1 << 20, &p);
    CHECK(mqtt_wire_publish_parse(&p, MQTT_V5, &pub, &why) == MQTT_RC_MALFORMED, "a section past the packet");
    pkt[7] = 0x80; /* a varint that never ends within the packet */
    p.body_len = 6;
    CHECK(mqtt_wire_publish_parse(&p, MQTT_V5, &pub, &why) == MQTT_RC_MALFORMED, "a length cut short");

    /* Acks: 3.1.1 exactly the id; 5.0 the id, a reason code and properties. */
    static const unsigned char rel[] = {0x00, 0x07, 0x92, 0x03, 0x1f, 0x00, 0x00};
    p = (struct mqtt_packet){.type = MQTT_PUBREL, .flags = 2, .body = rel, .body_len = sizeof(rel)};
    CHECK(mqtt_wire_ack_id(&p, MQTT_V5) == 7 && mqtt_wire_ack_id(&p, MQTT_V311) == -1, "v5 PUBREL with properties");
    p.body_len = 6;
    CHECK(mqtt_wire_ack_id(&p, MQTT_V5) == -1, "v5 PUBREL with cut properties");
    CHECK(strcmp(mqtt_reason_text(0x87), "not authorized") == 0 && strcmp(mqtt_reason_text(0x8E), "session taken over") == 0,
          "reason texts");
    mqtt_wbuf_free(&b);
}

int main(void)
{
    test_subjects();
    test_payload();
    test_wire();
    test_wire_v5();
    return check_result("mqtt");
}
