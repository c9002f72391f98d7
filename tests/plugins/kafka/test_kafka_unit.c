/* kafka plugin logic without a broker: the commit rule of kafka_track.c (only the
 * contiguous stored prefix of a partition is committed, whatever order the PubAcks come
 * back in), and kafka_payload.c (non_json, headers NATS can carry). */
#include <stdio.h>
#include <string.h>

#include "../../check.h"
#include "kafka.h"

const struct gust_host_api *kafka_host;

static int64_t committed(struct kafka_track *t, const char *topic, int32_t part)
{
    rd_kafka_topic_partition_list_t *l = kafka_track_to_commit(t);
    int64_t off = -1;
    for (int i = 0; l && i < l->cnt; i++) {
        if (strcmp(l->elems[i].topic, topic) == 0 && l->elems[i].partition == part) {
            off = l->elems[i].offset;
        }
    }
    if (l) {
        rd_kafka_topic_partition_list_destroy(l);
    }
    return off;
}

static void test_track(void)
{
    struct kafka_track t = {0};
    struct kafka_part *p = kafka_track_part(&t, "in", 0);
    struct kafka_part *q = kafka_track_part(&t, "in", 1);
    CHECK(p && q && p != q && kafka_track_part(&t, "in", 0) == p);
    struct kafka_tracked *e[5];
    for (int i = 0; i < 5; i++) {
        e[i] = kafka_track_add(p, 10 + i);
    }
    /* PubAcks of 11 and 12 first: nothing may be committed while 10 is in flight. */
    atomic_store(&e[1]->state, KAFKA_STORED);
    atomic_store(&e[2]->state, KAFKA_STORED);
    CHECK(kafka_track_advance(p) == 0);
    CHECK(committed(&t, "in", 0) == -1);
    atomic_store(&e[0]->state, KAFKA_STORED);
    CHECK(kafka_track_advance(p) == 0);
    CHECK(committed(&t, "in", 0) == 13); /* 10, 11, 12 done: the next to read is 13 */
    CHECK(committed(&t, "in", 0) == -1); /* nothing new */
    /* 13 failed, 14 stored: the commit stays at 13 and the partition must be re-read. */
    atomic_store(&e[3]->state, KAFKA_FAILED);
    atomic_store(&e[4]->state, KAFKA_STORED);
    CHECK(kafka_track_advance(p) == 1);
    CHECK(p->head && p->head->offset == 13);
    CHECK(committed(&t, "in", 0) == -1);
    /* The other partition is independent. */
    struct kafka_tracked *f = kafka_track_add(q, 7);
    atomic_store(&f->state, KAFKA_STORED);
    CHECK(kafka_track_advance(q) == 0);
    CHECK(committed(&t, "in", 1) == 8);
    kafka_track_remove(&t, q);
    CHECK(t.parts == p && p->next == NULL);
    kafka_track_free(&t);
    CHECK(t.parts == NULL);
}

static void test_payload(void)
{
    char why[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), why, sizeof(why));
    CHECK(rk != NULL);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, "in", NULL);
    rd_kafka_message_t m = {.rkt = rkt, .partition = 2, .offset = 41};
    struct gust_buf out = {0};

    m.payload = "{\"id\":1}";
    m.len = strlen(m.payload);
    CHECK(kafka_payload_json(&m, KAFKA_NJ_REJECT, &out) == 0 && out.len == m.len);
    m.payload = "hello";
    m.len = 5;
    CHECK(kafka_payload_json(&m, KAFKA_NJ_REJECT, &out) == 1);
    CHECK(kafka_payload_json(&m, KAFKA_NJ_PASS, &out) == 0 && out.len == 5);
    CHECK(kafka_payload_json(&m, KAFKA_NJ_WRAP, &out) == 0);
    const char *want = "{\"payload_base64\":\"aGVsbG8=\",\"topic\":\"in\",\"partition\":2,\"offset\":41}";
    CHECK(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0);
    m.payload = "[1,2]"; /* JSON, but not an object */
    m.len = 5;
    CHECK(kafka_payload_json(&m, KAFKA_NJ_REJECT, &out) == 1);

    struct gust_buf store = {0};
    struct gust_header h[KAFKA_HEADERS_MAX];
    size_t skipped;
    m.key = "k1";
    m.key_len = 2;
    size_t n = kafka_payload_headers(&m, NULL, &store, h, &skipped);
    CHECK(n == 4 && skipped == 0);
    rd_kafka_headers_t *kh = rd_kafka_headers_new(4);
    rd_kafka_header_add(kh, "trace", -1, "abc", -1);
    rd_kafka_header_add(kh, "bad:name", -1, "x", -1);
    rd_kafka_header_add(kh, "evil", -1, "a\r\nX: 1", -1);
    n = kafka_payload_headers(&m, kh, &store, h, &skipped);
    CHECK(n == 5 && skipped == 2);
    CHECK(strcmp(h[4].name, "trace") == 0 && strcmp(h[4].value, "abc") == 0);
    rd_kafka_headers_destroy(kh);
    CHECK(strcmp(h[0].name, "Kafka-Topic") == 0 && strcmp(h[0].value, "in") == 0);
    CHECK(strcmp(h[1].value, "2") == 0 && strcmp(h[2].value, "41") == 0);
    CHECK(strcmp(h[3].name, "Kafka-Key") == 0 && strcmp(h[3].value, "k1") == 0);

    CHECK(kafka_header_ok("trace", "abc", 3));
    CHECK(!kafka_header_ok("a:b", "x", 1));
    CHECK(!kafka_header_ok("a b", "x", 1));
    CHECK(!kafka_header_ok("", "x", 1));
    CHECK(!kafka_header_ok("x", "a\r\nEvil: 1", 10));
    CHECK(!kafka_header_ok("x", "a\0b", 3));
    CHECK(!kafka_header_ok("x", "\xff", 1));
    CHECK(kafka_header_ok("x", NULL, 0));

    gust_buf_free(&out);
    gust_buf_free(&store);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
}

int main(void)
{
    test_track();
    test_payload();
    return check_result("kafka unit");
}
