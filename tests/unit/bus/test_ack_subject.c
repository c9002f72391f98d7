/* Unit test of the reading of a JetStream delivery's reply subject (ack_subject.c): both
 * forms the servers send, and nothing else taken for one. */
#include <string.h>

#include "../../../host/bus/ack_subject.h"
#include "../../check.h"

static void test_forms(void)
{
    struct gust_ack_meta m = {0};
    CHECK(gust_ack_subject_parse("$JS.ACK.GUST.sink_rout.3.1042.77.1733480000123456789.12", &m) == 0);
    CHECK(m.delivered == 3 && m.stream_seq == 1042 && m.consumer_seq == 77 && m.stored_ns == 1733480000123456789,
          "%llu %llu %llu %lld", (unsigned long long)m.delivered, (unsigned long long)m.stream_seq,
          (unsigned long long)m.consumer_seq, (long long)m.stored_ns);
    CHECK(m.pending == 12, "pending %llu", (unsigned long long)m.pending);
    m = (struct gust_ack_meta){0};
    CHECK(gust_ack_subject_parse("$JS.ACK._.ACCHASH.GUST.flow_x.1.5.6.1700000000000000000.0.r4nd0m", &m) == 0);
    CHECK(m.delivered == 1 && m.stream_seq == 5 && m.consumer_seq == 6 && m.stored_ns == 1700000000000000000 &&
          m.pending == 0);
    m = (struct gust_ack_meta){0};
    CHECK(gust_ack_subject_parse("$JS.ACK.hub.HASH.S.c.2.9.8.7.6", &m) == 0 && m.stream_seq == 9);
    CHECK(gust_ack_subject_parse("$JS.ACK.hub.HASH.S.c.2.9.8.7.6.x.y.z.w", &m) == 0 && m.consumer_seq == 8,
          "tokens after the ninth are not ours");
}

static void test_not_ack_subjects(void)
{
    struct gust_ack_meta m = {.delivered = 99};
    const char *bad[] = {
        NULL,
        "",
        "_INBOX.abc.1",
        "$JS.ACK.S.c.1.2.3.4",          /* 6 tokens */
        "$JS.ACK.d.h.S.c.1.2.3.4",      /* 8 */
        "$JS.ACK.S.c.1.x.3.4.5",        /* not a number */
        "$JS.ACK.S.c.1..3.4.5",         /* empty */
        "$JS.ACK.S.c.1.-2.3.4.5",
        "$JS.ACK.S.c.1.99999999999999999999.3.4.5", /* over 2^63 */
        "$JS.ACKS.c.1.2.3.4.5",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(gust_ack_subject_parse(bad[i], &m) == -1, "%s", bad[i] ? bad[i] : "NULL");
    }
    CHECK(m.delivered == 99, "left untouched");
}

int main(void)
{
    test_forms();
    test_not_ack_subjects();
    return check_result("test_ack_subject");
}
