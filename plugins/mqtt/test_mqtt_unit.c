/* Unit tests of mqtt's pure parts: the topic <-> subject mapping (both ways, and that
 * it inverts), the JSON-object check and the wrap, and MQTT packet framing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt.h"
#include "mqtt_wire.h"

const struct gust_host_api *mqtt_host; /* the pure parts never call it */

static int failed, passed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

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

    CHECK(mqtt_wire_connect(&b, "cid", "u", "pw", 0, 30) == 0, "connect");
    CHECK(mqtt_wire_next(b.p, b.len, 1 << 20, &p) == (long)b.len && p.type == MQTT_CONNECT, "connect framing");
    CHECK(p.body[7] == 0xC0 && p.body[9] == 30, "connect flags (user, password, no clean) and keepalive");
    CHECK(mqtt_wire_next(b.p, b.len - 1, 1 << 20, &p) == 0, "short buffer wants more");
    b.len = 0;
    CHECK(mqtt_wire_subscribe(&b, 7, filters, 2, 1) == 0 && b.p[0] == 0x82, "subscribe header");
    b.len = 0;
    mqtt_wire_puback(&b, 0x1234);
    CHECK(b.len == 4 && b.p[0] == 0x40 && b.p[2] == 0x12 && b.p[3] == 0x34, "puback");

    /* A QoS 1 PUBLISH with a 200-byte payload: a two-byte remaining length. */
    unsigned char pkt[300] = {0x32 | 0x08};
    size_t rem = 2 + 3 + 2 + 200;
    pkt[1] = (unsigned char)(rem % 128 | 0x80);
    pkt[2] = (unsigned char)(rem / 128);
    memcpy(pkt + 3, "\x00\x03" "a/b" "\x00\x05", 7);
    memset(pkt + 10, 'x', 200);
    CHECK(mqtt_wire_next(pkt, 3 + rem, 1 << 20, &p) == (long)(3 + rem), "publish framing");
    CHECK(mqtt_wire_publish_parse(&p, &pub) == 0 && pub.qos == 1 && pub.dup == 1 && pub.id == 5 &&
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

int main(void)
{
    test_subjects();
    test_payload();
    test_wire();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
