/* Unit test of the PubAck parser: what JetStream sends is read exactly, and nothing else
 * counts as a stored message (the hostile-server cases of issue 17 among them). */
#include <stdio.h>
#include <string.h>

#include "../../../host/bus/puback.h"
#include "gust/err.h"

static int failures;

/* want: 0 stored, GUST_EIO refused, GUST_EINVAL unreadable. */
static void check(const char *data, int want, uint64_t want_seq, int want_dup, const char *want_why)
{
    struct gust_puback ack = {.seq = 123, .duplicate = 7};
    char why[256] = "unset";
    int rc = gust_puback_parse(data, strlen(data), &ack, why, sizeof(why));
    int ok = rc == want && (want != 0 || (ack.seq == want_seq && ack.duplicate == want_dup)) &&
             (want == 0 || ack.seq == 0) && (want_why == NULL || strstr(why, want_why) != NULL);
    for (const char *c = why; *c != '\0'; c++) {
        ok &= *c >= 0x20 && *c < 0x7f;
    }
    if (!ok) {
        printf("FAIL: %s -> rc %d seq %llu dup %d why '%s' (want rc %d seq %llu dup %d why '%s')\n", data, rc,
               (unsigned long long)ack.seq, ack.duplicate, why, want, (unsigned long long)want_seq, want_dup,
               want_why != NULL ? want_why : "");
        failures++;
    }
}

/* A refusal's kind: full (why "store full") or for good. */
static void check_refusal(const char *data, int want_full, int want_for_good)
{
    struct gust_puback ack = {0};
    char why[256];
    int rc = gust_puback_parse(data, strlen(data), &ack, why, sizeof(why));
    if (rc != GUST_EIO || ack.full != want_full || ack.for_good != want_for_good ||
        (want_full && strcmp(why, "store full") != 0)) {
        printf("FAIL: %s -> rc %d full %d for_good %d why '%s'\n", data, rc, ack.full, ack.for_good, why);
        failures++;
    }
}

/* The stream an answer names ("" for none, or one longer than any gust names). */
static void check_stream(const char *data, const char *want)
{
    struct gust_puback ack = {0};
    char why[256];
    (void)gust_puback_parse(data, strlen(data), &ack, why, sizeof(why));
    if (strcmp(ack.stream, want) != 0) {
        printf("FAIL: %s -> stream '%s', want '%s'\n", data, ack.stream, want);
        failures++;
    }
}

/* The subject a server names when it refuses a publish as not permitted. */
static void check_refused_subject(const char *text, const char *want)
{
    char out[64] = "unset";
    int rc = gust_refused_subject(text, out, sizeof(out));
    if ((want == NULL && rc != -1) || (want != NULL && (rc != 0 || strcmp(out, want) != 0))) {
        printf("FAIL: refused subject of '%s' -> %d '%s' (want %s)\n", text, rc, out, want ? want : "none");
        failures++;
    }
}

int main(void)
{
    check_refused_subject("Permissions Violation for Publish to \"ev.secret\"", "ev.secret");
    check_refused_subject("nats: permissions violation for publish to ev.a.b", "ev.a.b");
    check_refused_subject("Permissions Violation for Subscription to \"ev.x\"", NULL);
    check_refused_subject("Permissions Violation for Publish to \"\"", NULL);
    check_refused_subject(NULL, NULL);
    /* What nats-server sends. */
    check("{\"stream\":\"GUST\",\"seq\":12}", 0, 12, 0, NULL);
    check("{\"stream\":\"GUST\",\"seq\":12,\"duplicate\":true}", 0, 12, 1, NULL);
    check("{\"stream\":\"GUST\",\"domain\":\"hub\",\"seq\":1,\"duplicate\":false}", 0, 1, 0, NULL);
    check("{\"error\":{\"code\":503,\"err_code\":10077,\"description\":\"maximum messages exceeded\"},"
          "\"stream\":\"GUST\",\"seq\":0}",
          GUST_EIO, 0, 0, "store full");
    check("{\"error\":{\"code\":400,\"description\":\"a \\\"quoted\\\" reason \\u00e9\"}}", GUST_EIO, 0, 0,
          "jetstream: a \"quoted\" reason ?");
    check("{\"error\":{\"code\":500}}", GUST_EIO, 0, 0, "without a description");
    /* Why it was refused: a full store may take it later, a message too large never. */
    check_refusal("{\"error\":{\"code\":503,\"err_code\":10077,\"description\":\"maximum bytes exceeded\"}}", 1, 0);
    check_refusal("{\"error\":{\"code\":503,\"err_code\":10023,\"description\":\"insufficient resources\"}}", 1, 0);
    check_refusal("{\"error\":{\"code\":400,\"err_code\":10054,\"description\":\"message size exceeds maximum "
                  "allowed\"}}", 0, 1);
    check_refusal("{\"error\":{\"code\":503,\"description\":\"stream is offline\"}}", 0, 0);
    /* A refusal names its stream too: a full KV bucket is not the event stream. */
    check_stream("{\"error\":{\"code\":503,\"err_code\":10077,\"description\":\"maximum bytes exceeded\"},"
                 "\"stream\":\"KV_GUST_FLOW_STATE\",\"seq\":0}",
                 "KV_GUST_FLOW_STATE");
    check_stream("{\"stream\":\"GUST\",\"seq\":12}", "GUST");
    check_stream("{\"error\":{\"code\":503,\"description\":\"maximum bytes exceeded\"}}", "");
    check_stream("{\"stream\":\"S234567890123456789012345678901234567890123456789012345678901234567890123456789"
                 "01234567890123456789012345678901234567890123456789\",\"seq\":1}",
                 "");
    check(" \r\n\t{ \"seq\" : 18446744073709551615 , \"stream\" : \"S\" } \n", 0, UINT64_MAX, 0, NULL);
    check("{\"stream\":\"GUST\",\"seq\":5,\"extra\":{\"a\":[1,2.5e3,null,true,\"x\"]}}", 0, 5, 0, NULL);

    /* Malformed: never a stored message (issue 17: these gave 202 with seq 0). */
    check("{\"seq\":}", GUST_EINVAL, 0, 0, "unreadable PubAck");
    check("{\"stream\":\"GUST\",\"seq\":-3}", GUST_EINVAL, 0, 0, "not an unsigned integer");
    check("{\"stream\":\"GUST\",\"seq\":18446744073709551616}", GUST_EINVAL, 0, 0, "over 2^64-1");
    check("{\"stream\":\"GUST\",\"seq\":99999999999999999999999}", GUST_EINVAL, 0, 0, "over 2^64-1");
    check("{\"stream\":\"GUST\",\"seq\":1.5}", GUST_EINVAL, 0, 0, "not an unsigned integer");
    check("{\"stream\":\"GUST\",\"seq\":1e3}", GUST_EINVAL, 0, 0, "not an unsigned integer");
    check("{\"stream\":\"GUST\",\"seq\":012}", GUST_EINVAL, 0, 0, "leading zero");
    check("{\"stream\":\"GUST\",\"seq\":\"12\"}", GUST_EINVAL, 0, 0, "not a number");
    check("{\"stream\":\"GUST\",\"seq\":0}", GUST_EINVAL, 0, 0, "is 0");
    check("{\"stream\":\"GUST\"}", GUST_EINVAL, 0, 0, "no \"seq\"");
    check("{\"seq\":12}", GUST_EINVAL, 0, 0, "no \"stream\"");
    check("{\"stream\":\"\",\"seq\":12}", GUST_EINVAL, 0, 0, "empty");
    check("{\"stream\":\"GUST\",\"seq\":1,\"seq\":2}", GUST_EINVAL, 0, 0, "twice");
    check("{\"stream\":\"GUST\",\"seq\":12}garbage", GUST_EINVAL, 0, 0, "text after");
    check("{\"stream\":\"GUST\",\"seq\":12}\r\nMSG _INBOX.x.2 1 26\r\n", GUST_EINVAL, 0, 0, "text after");
    check("{\"stream\":\"GUST\",\"seq\":12", GUST_EINVAL, 0, 0, "unreadable");
    check("{\f\"stream\":\"GUST\",\"seq\":12}", GUST_EINVAL, 0, 0, "unreadable");
    check("{\"stream\":\"GU\x01ST\",\"seq\":12}", GUST_EINVAL, 0, 0, "control character");
    check("{\"stream\":\"GU\xc0\xafST\",\"seq\":12}", GUST_EINVAL, 0, 0, "UTF-8");
    check("{\"stream\":\"GU\xed\xa0\x80ST\",\"seq\":12}", GUST_EINVAL, 0, 0, "UTF-8");
    check("{\"stream\":\"GUST\",\"seq\":12,\"duplicate\":1}", GUST_EINVAL, 0, 0, "true or false");
    check("{\"stream\":\"GUST\",\"seq\":12,\"x\":[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}", GUST_EINVAL, 0, 0,
          "deeply");
    check("{\"error\":\"boom\"}", GUST_EINVAL, 0, 0, "not an object");
    check("[{\"stream\":\"GUST\",\"seq\":12}]", GUST_EINVAL, 0, 0, "not a JSON object");
    check("", GUST_EINVAL, 0, 0, "not a JSON object");
    check("+OK", GUST_EINVAL, 0, 0, "+OK");
    check("{\"stream\":\"GUST\",\"seq\":12,\"a\":tru}", GUST_EINVAL, 0, 0, "unknown word");

    /* Never reads past len: the same bytes cut short are no PubAck. */
    const char full[] = "{\"stream\":\"GUST\",\"seq\":12}";
    for (size_t n = 0; n < sizeof(full) - 1; n++) {
        struct gust_puback ack;
        char why[64];
        if (gust_puback_parse(full, n, &ack, why, sizeof(why)) != GUST_EINVAL) {
            printf("FAIL: %zu bytes of %s parsed\n", n, full);
            failures++;
        }
    }
    /* A tiny why buffer still ends in NUL. */
    struct gust_puback ack;
    char tiny[8];
    gust_puback_parse("{\"seq\":}", 8, &ack, tiny, sizeof(tiny));
    if (memchr(tiny, '\0', sizeof(tiny)) == NULL) {
        printf("FAIL: why not terminated\n");
        failures++;
    }
    printf("%s\n", failures == 0 ? "ok" : "FAILED");
    return failures != 0;
}
