/* Unit test of the messages the bus publishes with headers (nats_msg.c): the header block
 * gust writes itself must read back through nats.c as the header map would have written
 * it (the Nats-Msg-Id, each header, repeated names, CR/LF in a value), leave out empty
 * values, and refuse what nats.c refuses. */
#include <nats/nats.h>
#include <string.h>

#include "../../../host/bus/nats_msg.h"
#include "../../check.h"

static const char *header(natsMsg *m, const char *key)
{
    const char *v = NULL;
    return natsMsgHeader_Get(m, key, &v) == NATS_OK ? v : NULL;
}

static void test_headers_read_back(void)
{
    const struct gust_header h[] = {{"Redis-Stream", "s_in"}, {"Redis-Entry-Id", "1700000000000-0"},
                                    {"Empty", ""},           {"Multi", "a"},
                                    {"Multi", "b"},          {"Crlf", "x\r\ny"}};
    natsMsg *m = NULL;
    natsStatus s = gust_nats_msg_build(&m, "ev.redis", "_INBOX.x.7", "{\"id\":1}", 8, "s_in:1700000000000-0", h, 6);
    CHECK(s == NATS_OK, "%s", natsStatus_GetText(s));
    if (m == NULL) {
        return;
    }
    CHECK(strcmp(natsMsg_GetSubject(m), "ev.redis") == 0);
    CHECK(strcmp(natsMsg_GetReply(m), "_INBOX.x.7") == 0);
    CHECK(natsMsg_GetDataLength(m) == 8 && memcmp(natsMsg_GetData(m), "{\"id\":1}", 8) == 0);
    const char *v = header(m, "Nats-Msg-Id");
    CHECK(v != NULL && strcmp(v, "s_in:1700000000000-0") == 0, "%s", v ? v : "(none)");
    v = header(m, "Redis-Stream");
    CHECK(v != NULL && strcmp(v, "s_in") == 0);
    v = header(m, "Redis-Entry-Id");
    CHECK(v != NULL && strcmp(v, "1700000000000-0") == 0);
    CHECK(header(m, "Empty") == NULL, "an empty value is left out");
    v = header(m, "Crlf");
    CHECK(v != NULL && strcmp(v, "x  y") == 0, "'%s'", v ? v : "(none)");
    const char **values = NULL;
    int nvalues = 0;
    CHECK(natsMsgHeader_Values(m, "Multi", &values, &nvalues) == NATS_OK && nvalues == 2 &&
          strcmp(values[0], "a") == 0 && strcmp(values[1], "b") == 0);
    free((void *)values);
    const char **keys = NULL;
    int nkeys = 0;
    CHECK(natsMsgHeader_Keys(m, &keys, &nkeys) == NATS_OK && nkeys == 5, "%d keys", nkeys);
    free((void *)keys);
    gust_nats_msg_free(m);
}

static void test_msg_id_alone_and_large(void)
{
    static char big[100000];
    memset(big, 'x', sizeof(big));
    natsMsg *m = NULL;
    CHECK(gust_nats_msg_build(&m, "ev.big", NULL, big, sizeof(big), "u:42:0", NULL, 0) == NATS_OK);
    if (m == NULL) {
        return;
    }
    CHECK(natsMsg_GetReply(m) == NULL);
    CHECK(natsMsg_GetDataLength(m) == (int)sizeof(big) && memcmp(natsMsg_GetData(m), big, sizeof(big)) == 0);
    const char *v = header(m, "Nats-Msg-Id");
    CHECK(v != NULL && strcmp(v, "u:42:0") == 0);
    gust_nats_msg_free(m);
    /* Headers only (no msg id), and no data. */
    const struct gust_header h[] = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
    CHECK(gust_nats_msg_build(&m, "ev.t", NULL, "", 0, NULL, h, 1) == NATS_OK);
    if (m != NULL) {
        CHECK(natsMsg_GetDataLength(m) == 0);
        CHECK(header(m, "Nats-Msg-Id") == NULL);
        v = header(m, "traceparent");
        CHECK(v != NULL && strcmp(v, h[0].value) == 0);
        gust_nats_msg_free(m);
    }
}

static void test_refused(void)
{
    natsMsg *m = (natsMsg *)1;
    const struct gust_header nameless[] = {{"", "v"}};
    CHECK(gust_nats_msg_build(&m, "ev.x", NULL, "{}", 2, NULL, nameless, 1) == NATS_INVALID_ARG && m == NULL);
    CHECK(gust_nats_msg_build(&m, "", NULL, "{}", 2, "id", NULL, 0) == NATS_INVALID_ARG && m == NULL);
    CHECK(gust_nats_msg_build(&m, "ev.x", "", "{}", 2, "id", NULL, 0) == NATS_INVALID_ARG && m == NULL);
}

int main(void)
{
    nats_Open(-1);
    test_headers_read_back();
    test_msg_id_alone_and_large();
    test_refused();
    nats_Close();
    return check_result("test_nats_msg");
}
