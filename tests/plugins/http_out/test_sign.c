/* http_out's signatures (plugins/http_out/http_out_sign.c) without a server: the header
 * lines of sign standard on the Standard Webhooks specification's own example, of sign
 * hmac on GitHub's documented one (hex) and in base64, and the webhook-id of a message
 * and of a batch. The e2e test (test_http_sign.py) verifies real deliveries. */
#include <stdlib.h>
#include <string.h>

#include "../../check.h"
#include "../../../plugins/http_out/http_out.h"

/* The signature lines for body under conf (secret already set), NUL-terminated (free). */
static char *sign(struct http_out_conf *conf, const char *id, const char *body, int64_t ts)
{
    struct http_out_signer *s = NULL;
    struct gust_err err = {0};
    struct gust_buf out = {0};

    if (http_out_signer_create(&s, conf, &err) != 0) {
        fprintf(stderr, "signer: %s\n", err.msg);
        return NULL;
    }
    int rc = http_out_sign(s, id, body, strlen(body), ts, &out);
    http_out_signer_destroy(s);
    if (rc != 0 || gust_buf_append(&out, "", 1) != 0) {
        gust_buf_free(&out);
        return NULL;
    }
    return out.data;
}

static void test_standard(void)
{
    struct http_out_conf conf = {.sign = HTTP_OUT_SIGN_STANDARD};
    conf.k.secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    char *got = sign(&conf, "msg_p5jXN8AQM9LWM0D4loKWxJek", "{\"test\": 2432232314}", 1614265330);
    CHECK(got && strcmp(got, "webhook-id: msg_p5jXN8AQM9LWM0D4loKWxJek\r\nwebhook-timestamp: 1614265330\r\n"
                             "webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=\r\n") == 0,
          "the spec's example: %s", got ? got : "(null)");
    free(got);

    struct gust_err err = {0};
    struct http_out_signer *s = NULL;
    conf.k.secret = "whsec_not base64";
    CHECK(http_out_signer_create(&s, &conf, &err) != 0 && strstr(err.msg, "whsec_ followed by base64"),
          "a secret that is not base64: %s", err.msg);
    conf.k.secret = "\n";
    CHECK(http_out_signer_create(&s, &conf, &err) != 0 && strstr(err.msg, "empty"), "an empty one: %s", err.msg);
    conf.k.secret = NULL;
    conf.k.secret_file = "/nonexistent/hook.secret";
    CHECK(http_out_signer_create(&s, &conf, &err) != 0 && strstr(err.msg, "cannot be read"), "%s", err.msg);
}

static void test_hmac(void)
{
    struct http_out_conf conf = {.sign = HTTP_OUT_SIGN_HMAC};
    conf.k.secret = "It's a Secret to Everybody";
    conf.k.sign_header = "X-Hub-Signature-256";
    conf.k.sign_prefix = "sha256=";
    char *got = sign(&conf, "ignored", "Hello, World!", 1);
    CHECK(got && strcmp(got, "X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
                             "\r\n") == 0, "GitHub's example: %s", got ? got : "(null)");
    free(got);
    conf.sign_base64 = 1;
    conf.k.sign_header = "X-Signature";
    conf.k.sign_prefix = NULL;
    got = sign(&conf, "ignored", "Hello, World!", 1);
    CHECK(got && strcmp(got, "X-Signature: dXEH6g6yUJ/CESIczphLijdXC211hsIsRvQ3nIsEPhc=\r\n") == 0, "base64: %s",
          got ? got : "(null)");
    free(got);
}

static void test_ids(void)
{
    struct gust_header ha = {"Nats-Msg-Id", "a"}, hb = {"nats-msg-id", "b"};
    struct gust_msg msgs[3] = {{.stream_seq = 5, .headers = &ha, .nheaders = 1},
                               {.stream_seq = 6, .headers = &hb, .nheaders = 1},
                               {.stream_seq = 7}};
    size_t nxt[3] = {1, HTTP_OUT_NONE, HTTP_OUT_NONE};
    char buf[64];

    CHECK(strcmp(http_out_sign_id(msgs, nxt, 0, 1, buf, sizeof(buf)), "a") == 0, "one message: its Nats-Msg-Id");
    CHECK(strcmp(http_out_sign_id(msgs, nxt, 2, 1, buf, sizeof(buf)), "seq-7") == 0, "none: seq-<seq>");
    /* sha256("a\nb\n"), sha256("a\nseq-7\n"): python3 hashlib. */
    const char *id = http_out_sign_id(msgs, nxt, 0, 2, buf, sizeof(buf));
    CHECK(strcmp(id, "batch-911169ddaaf146aff539f58c26c489af") == 0, "a batch: %s", id);
    nxt[0] = 2;
    id = http_out_sign_id(msgs, nxt, 0, 2, buf, sizeof(buf));
    CHECK(strcmp(id, "batch-d552895bf47103a8156e402335e87721") == 0, "another set, another id: %s", id);
}

int main(void)
{
    test_standard();
    test_hmac();
    test_ids();
    return check_result("http_out_sign");
}
