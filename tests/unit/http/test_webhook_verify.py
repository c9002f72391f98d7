"""The webhook verifiers (host/http/webhook_verify.c) against signatures this test
computes itself with Python's hmac, plus the published examples of GitHub's and the
Standard Webhooks' documentation: each scheme's right signature passes; a wrong one,
one by another secret, a stale or future timestamp, a missing, repeated or malformed
header fail; a second secret (rotation) is tried; a trailing newline is the caller's
to strip (webhooks.c), so a secret with one is another secret."""
import base64
import hashlib
import hmac
import subprocess
import sys

TOOL = sys.argv[1]
NOW = 1_765_000_000
failures = 0


def run(scheme, body, secrets, headers, now=NOW, extra=()):
    args = [TOOL, scheme, str(now)]
    for s in secrets:
        args += ["--secret", s]
    for k, v in headers:
        args += ["--header", "%s=%s" % (k, v)]
    args += list(extra)
    p = subprocess.run(args, input=body, capture_output=True)
    return p.returncode, p.stdout.decode().strip()


def expect(got, ok, what):
    global failures
    rc, out = got
    if (rc == 0) != ok:
        failures += 1
        print("FAIL: %s: %s (exit %d)" % (what, out, rc))


def mac(key, msg, algo=hashlib.sha256):
    return hmac.new(key, msg, algo)


BODY = b'{"action":"opened","number":7}'
KEY = "gh-s3cret"

# github: X-Hub-Signature-256: sha256=<hex>
sig = "sha256=" + mac(KEY.encode(), BODY).hexdigest()
expect(run("github", BODY, [KEY], [("x-hub-signature-256", sig)]), True, "github right")
expect(run("github", BODY, [KEY], [("x-hub-signature-256", sig.upper().replace("SHA256=", "sha256="))]), True,
       "github hex in capitals")
expect(run("github", BODY + b" ", [KEY], [("x-hub-signature-256", sig)]), False, "github body changed")
expect(run("github", BODY, ["other"], [("x-hub-signature-256", sig)]), False, "github another secret")
expect(run("github", BODY, ["old", KEY], [("x-hub-signature-256", sig)]), True, "github second secret (rotation)")
expect(run("github", BODY, [KEY + "\n"], [("x-hub-signature-256", sig)]), False, "a newline is part of a secret here")
expect(run("github", BODY, [KEY], []), False, "github no header")
expect(run("github", BODY, [KEY], [("x-hub-signature-256", sig), ("x-hub-signature-256", sig)]), False,
       "github header twice")
expect(run("github", BODY, [KEY], [("x-hub-signature-256", sig[7:])]), False, "github without sha256=")
expect(run("github", BODY, [KEY], [("x-hub-signature-256", sig[:-2])]), False, "github truncated")
expect(run("github", BODY, [KEY], [("x-hub-signature-256", "sha256=" + "zz" * 32)]), False, "github not hex")
# GitHub's documented example (docs.github.com, "Validating webhook deliveries").
expect(run("github", b"Hello, World!", ["It's a Secret to Everybody"],
           [("x-hub-signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")]),
       True, "github documented example")

# stripe: Stripe-Signature: t=...,v1=<hex of "t.body">
SK = "whsec_stripe_test"
EVT = b'{"id":"evt_1","type":"charge.succeeded"}'


def stripe(t, key=SK, body=EVT):
    return mac(key.encode(), str(t).encode() + b"." + body).hexdigest()


expect(run("stripe", EVT, [SK], [("stripe-signature", "t=%d,v1=%s" % (NOW, stripe(NOW)))]), True, "stripe right")
expect(run("stripe", EVT, [SK], [("stripe-signature", "t=%d,v1=%s,v1=%s,v0=aa" % (NOW, "00" * 32, stripe(NOW)))]),
       True, "stripe: the second v1 matches")
expect(run("stripe", EVT, [SK], [("stripe-signature", "t=%d,v1=%s" % (NOW - 3600, stripe(NOW - 3600)))]), False,
       "stripe an hour old")
expect(run("stripe", EVT, [SK], [("stripe-signature", "t=%d,v1=%s" % (NOW + 3600, stripe(NOW + 3600)))]), False,
       "stripe an hour ahead")
expect(run("stripe", EVT, [SK], [("stripe-signature", "t=%d,v1=%s" % (NOW - 299, stripe(NOW - 299)))]), True,
       "stripe 299 s old")
expect(run("stripe", EVT, [SK], [("stripe-signature", "t=%d,v1=%s" % (NOW - 100, stripe(NOW - 100)))], extra=[
    "--tolerance", "60"]), False, "stripe past a tolerance of 60 s")
expect(run("stripe", EVT, [SK], [("stripe-signature", "t=%d,v1=%s" % (NOW, stripe(NOW + 1)))]), False,
       "stripe t not the one signed")
expect(run("stripe", EVT, [SK], [("stripe-signature", "v1=%s" % stripe(NOW))]), False, "stripe no t")
expect(run("stripe", EVT, [SK], [("stripe-signature", "t=%d,v0=%s" % (NOW, stripe(NOW)))]), False, "stripe no v1")
expect(run("stripe", EVT, [SK], [("stripe-signature", "t=x%d,v1=%s" % (NOW, stripe(NOW)))]), False,
       "stripe t not a number")

# shopify: X-Shopify-Hmac-Sha256: <base64>
sh = base64.b64encode(mac(b"shpss_1", BODY).digest()).decode()
expect(run("shopify", BODY, ["shpss_1"], [("x-shopify-hmac-sha256", sh)]), True, "shopify right")
expect(run("shopify", BODY, ["shpss_2"], [("x-shopify-hmac-sha256", sh)]), False, "shopify another secret")
expect(run("shopify", BODY, ["shpss_1"], [("x-shopify-hmac-sha256", mac(b"shpss_1", BODY).hexdigest())]), False,
       "shopify hex is not base64")

# slack: v0=<hex of "v0:ts:body">, X-Slack-Request-Timestamp
FORM = b"token=x&team_id=T1&command=%2Fweather&text=94070"


def slack(ts, key=b"8f742231b10e8888abcd99yyyzzz85a5"):
    return "v0=" + mac(key, b"v0:" + str(ts).encode() + b":" + FORM).hexdigest()


SL = "8f742231b10e8888abcd99yyyzzz85a5"
expect(run("slack", FORM, [SL], [("x-slack-request-timestamp", str(NOW)), ("x-slack-signature", slack(NOW))]), True,
       "slack right")
expect(run("slack", FORM, [SL], [("x-slack-request-timestamp", str(NOW - 301)),
                                 ("x-slack-signature", slack(NOW - 301))]), False, "slack 301 s old")
expect(run("slack", FORM, [SL], [("x-slack-signature", slack(NOW))]), False, "slack no timestamp")
expect(run("slack", FORM, [SL], [("x-slack-request-timestamp", str(NOW)), ("x-slack-signature", slack(NOW + 1))]),
       False, "slack timestamp not the one signed")

# standard: webhook-id, webhook-timestamp, webhook-signature "v1,<b64>" list; whsec_ secret
raw = b"\x01\x02standard-key\xff"
WS = "whsec_" + base64.b64encode(raw).decode()


def std(mid, ts, body, key=raw):
    return "v1," + base64.b64encode(mac(key, mid.encode() + b"." + str(ts).encode() + b"." + body).digest()).decode()


hdrs = [("webhook-id", "msg_1"), ("webhook-timestamp", str(NOW))]
expect(run("standard", BODY, [WS], hdrs + [("webhook-signature", std("msg_1", NOW, BODY))]), True, "standard right")
expect(run("standard", BODY, [WS], hdrs + [("webhook-signature", "v1,AAAA " + std("msg_1", NOW, BODY))]), True,
       "standard: the second signature of the list matches")
expect(run("standard", BODY, [WS], hdrs + [("webhook-signature", std("msg_2", NOW, BODY))]), False,
       "standard another id signed")
expect(run("standard", BODY, [WS], hdrs + [("webhook-signature", std("msg_1", NOW, BODY, b"other"))]), False,
       "standard another secret")
expect(run("standard", BODY, [WS], [("webhook-id", "msg_1"), ("webhook-timestamp", str(NOW - 600)),
                                    ("webhook-signature", std("msg_1", NOW - 600, BODY))]), False, "standard stale")
expect(run("standard", BODY, [WS], hdrs + [("webhook-signature", std("msg_1", NOW, BODY)[3:])]), False,
       "standard without v1,")
expect(run("standard", BODY, [base64.b64encode(raw).decode()], hdrs + [("webhook-signature",
                                                                       std("msg_1", NOW, BODY))]), True,
       "standard secret without whsec_")
expect(run("standard", BODY, ["whsec_not*base64"], []), False, "standard secret not base64")
# The Standard Webhooks specification's example (standard-webhooks/spec).
expect(run("standard", b'{"test": 2432232314}', ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
           [("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"), ("webhook-timestamp", "1614265330"),
            ("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")], now=1614265330), True,
       "standard documented example")

# hmac: signature_header, algorithm, encoding, prefix
h1 = "sha1=" + mac(b"k", BODY, hashlib.sha1).hexdigest()
expect(run("hmac", BODY, ["k"], [("x-sig", h1)], extra=["--signature-header", "x-sig", "--sha1", "--prefix",
                                                          "sha1="]), True, "hmac sha1 hex with a prefix")
expect(run("hmac", BODY, ["k"], [("x-sig", h1)], extra=["--signature-header", "x-sig", "--prefix", "sha1="]), False,
       "hmac: a SHA-1 MAC where SHA-256 is expected")
b2 = base64.b64encode(mac(b"k", BODY).digest()).decode()
expect(run("hmac", BODY, ["k"], [("x-sig", b2)], extra=["--signature-header", "x-sig", "--base64"]), True,
       "hmac sha256 base64")
expect(run("hmac", BODY, ["k"], [("x-other", b2)], extra=["--signature-header", "x-sig", "--base64"]), False,
       "hmac header missing")

expect(run("none", BODY, [], []), True, "none checks nothing")

print("%s" % ("ok" if failures == 0 else "%d failed" % failures))
sys.exit(1 if failures else 0)
