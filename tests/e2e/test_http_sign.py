"""http_out's signed deliveries (issue 27, item 9): `sign standard` (Standard Webhooks) and
`sign hmac` (GitHub's X-Hub-Signature-256), checked by a far end that verifies each
request with the algorithms written out here, from the specification, not with Gust's
code.

- sign standard, secret_file whsec_...: every request carries webhook-id (the event's
  Nats-Msg-Id; seq-<stream sequence> for one stored without), webhook-timestamp (now, in
  Unix seconds) and webhook-signature v1,<base64 HMAC-SHA256 of id.timestamp.body> under
  the decoded secret; the far end verifies every one.
- The same sink with the wrong secret: the far end's verification fails (the check can
  fail), it answers 401, and the events end as dead letters.
- sign hmac; sign_header X-Hub-Signature-256; sign_prefix "sha256="; sign_encoding hex,
  with the secret from the secret store (secret "{secret:...}", secrets { env on; }): the
  far end verifies sha256=<hex HMAC of the body>.
- A retry is signed again: an event answered 503 with Retry-After: 2 comes back with the
  same webhook-id, a later timestamp and a signature valid for it.
- Batches (batch_max 10): a request of several events has webhook-id batch-<the first 32
  hex digits of SHA-256 over its events' ids, each followed by a newline>, one event alone
  its own id; all verify.
- gust -t refuses, with file:line: sign without a secret, an unknown scheme, sign hmac
  without sign_header, a secret without sign, both secret and secret_file."""
import base64
import hashlib
import hmac
import json
import os
import time

from gustlib import BUILD, Checks, FarEnd, Gust, NatsServer, TempDir, check_config_errors, nats_publish, wait_for

PLUGINS = os.path.join(BUILD, "plugins")

KEY = os.urandom(24)
WHSEC = "whsec_" + base64.b64encode(KEY).decode()
WRONG = "whsec_" + base64.b64encode(os.urandom(24)).decode()
GH_SECRET = "It's a Secret to Everybody"
STORE_ENV = {"GUST_SECRET_HOOKS_GH_KEY": GH_SECRET}

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 2; retry_delay 100ms; retry_max_delay 500ms; }
secrets { env on; }
sink std   { use http_out; source ev.std; url %(far)s/std; sign standard; secret_file std.secret; }
sink wrong { use http_out; source ev.wrong; url %(far)s/wrong; sign standard; secret_file wrong.secret; }
sink gh    { use http_out; source ev.gh; url %(far)s/gh; sign hmac; sign_header X-Hub-Signature-256;
             sign_prefix "sha256="; sign_encoding hex; secret "{secret:hooks/gh#key}"; }
sink again { use http_out; source ev.again; url %(far)s/again; sign standard; secret_file std.secret; }
sink bat   { use http_out; source ev.bat; url %(far)s/bat; batch_max 10; batch_linger 50ms;
             sign standard; secret_file std.secret; }
"""


def standard_verify(secret, headers, body, tolerance=300):
    """Standard Webhooks' verification, as the specification gives it: the secret is
    whsec_<base64>, used decoded; the signed content id.timestamp.body; the header holds
    space-separated "v1,<base64>" signatures, one of which must match."""
    key = base64.b64decode(secret[len("whsec_"):])
    msg_id, ts, sigs = headers.get("webhook-id"), headers.get("webhook-timestamp"), headers.get("webhook-signature")
    if not msg_id or not ts or not sigs or abs(int(ts) - time.time()) > tolerance:
        return False
    want = base64.b64encode(hmac.new(key, b"%s.%s.%s" % (msg_id.encode(), ts.encode(), body),
                                     hashlib.sha256).digest()).decode()
    return any(v == "v1" and hmac.compare_digest(s, want) for v, _, s in (p.partition(",") for p in sigs.split()))


def github_verify(secret, headers, body):
    got = headers.get("X-Hub-Signature-256") or ""
    want = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(got, want)


def batch_id(ids):
    return "batch-" + hashlib.sha256("".join(i + "\n" for i in ids).encode()).hexdigest()[:32]


class Verifier:
    """Answers 200 to a request whose signature verifies under the far end's secret, 401
    otherwise; /again's first request gets 503 with Retry-After: 2. Keeps each request's
    verdict."""

    def __init__(self):
        self.verdict = {}
        self.far = FarEnd(self.answer)

    def answer(self, req):
        path = req.path
        ok = github_verify(GH_SECRET, req.headers, req.body) if path == "/gh" else \
            standard_verify(WHSEC, req.headers, req.body)
        self.verdict[id(req)] = ok
        if path == "/again" and len([r for r in self.far.requests() if r.path == "/again"]) == 1:
            return 503, "", {"Retry-After": "2"}
        return 200 if ok else (401, "signature does not verify")

    def on(self, path):
        return [(r, self.verdict.get(id(r))) for r in self.far.requests() if r.path == path and r.status]


def dead_letters(nats, unit):
    return [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq." + unit]


def test_delivery(t, nats, tmp):
    v = Verifier()
    tmp.file("std.secret", WHSEC + "\n")
    tmp.file("wrong.secret", WRONG + "\n")
    g = Gust(tmp, CONF % {"plugins": PLUGINS, "nats": nats.url, "far": v.far.url}, env=STORE_ENV)
    try:
        nats_publish(nats.port, [("ev.std", {"Nats-Msg-Id": "order-%d" % i}, json.dumps({"id": i}).encode())
                                 for i in range(20)] + [("ev.std", json.dumps({"id": 20}).encode())])
        nats_publish(nats.port, [("ev.gh", json.dumps({"id": i, "text": "caf\u00e9"}).encode()) for i in range(10)])
        nats_publish(nats.port, [("ev.wrong", {"Nats-Msg-Id": "w-%d" % i}, json.dumps({"id": i}).encode())
                                 for i in range(3)])
        nats_publish(nats.port, [("ev.again", {"Nats-Msg-Id": "again-1"}, b'{"id": "again"}')])
        nats_publish(nats.port, [("ev.bat", {"Nats-Msg-Id": "b-%d" % i}, json.dumps({"id": i}).encode())
                                 for i in range(50)])

        wait_for(lambda: len({r.body for r, ok in v.on("/std") if ok}) >= 21, 30, "21 standard events verified")
        std = v.on("/std")
        t.check(all(ok for _, ok in std), "every standard request verifies: %r" %
                [dict(r.headers) for r, ok in std if not ok][:2])
        ids = {r.json()["id"]: r.headers.get("webhook-id") for r, _ in std}
        t.eq([ids.get(i) for i in range(20)], ["order-%d" % i for i in range(20)], "webhook-id is the Nats-Msg-Id")
        t.check((ids.get(20) or "").startswith("seq-"), "without a Nats-Msg-Id: seq-<seq>: %r" % ids.get(20))
        ts = [int(r.headers.get("webhook-timestamp")) for r, _ in std]
        t.check(all(abs(x - time.time()) < 60 for x in ts), "webhook-timestamp is now: %r" % ts[:3])

        wait_for(lambda: len({r.body for r, ok in v.on("/gh") if ok}) >= 10, 30, "10 GitHub-style events verified")
        gh = v.on("/gh")
        t.check(all(ok for _, ok in gh), "every X-Hub-Signature-256 verifies")
        t.check(all(r.headers.get("X-Hub-Signature-256", "").startswith("sha256=") for r, _ in gh),
                "sha256=<hex>: %r" % gh[0][0].headers.get("X-Hub-Signature-256"))
        t.check(all(r.headers.get("webhook-signature") is None for r, _ in gh), "hmac writes no webhook-* header")

        wait_for(lambda: len(dead_letters(nats, "wrong")) >= 3, 30, "the wrongly signed events dead-lettered")
        wrong = v.on("/wrong")
        t.check(len(wrong) >= 3 and not any(ok for _, ok in wrong),
                "the far end's verification fails under the wrong secret: %d requests" % len(wrong))
        t.check(all(r.status == 401 for r, _ in wrong), "and it answers 401")
        t.check(all("http 401" in d["error"] for d in dead_letters(nats, "wrong")),
                "the dead letters say 401: %r" % dead_letters(nats, "wrong")[0]["error"])

        wait_for(lambda: any(r.status == 200 for r, _ in v.on("/again")), 30, "the retried event delivered")
        again = v.on("/again")
        t.eq([r.status for r, _ in again], [503, 200], "503 then 200")
        t.check(all(ok for _, ok in again), "both attempts verify")
        t.eq({r.headers.get("webhook-id") for r, _ in again}, {"again-1"}, "a retry keeps the webhook-id")
        t1, t2 = (int(r.headers.get("webhook-timestamp")) for r, _ in again)
        t.check(t2 >= t1 + 1, "a retry is signed again, at its own time: %d then %d" % (t1, t2))
        t.check(again[0][0].headers.get("webhook-signature") != again[1][0].headers.get("webhook-signature"),
                "with its own signature")

        events = lambda: sum(len(r.json()) for r, ok in v.on("/bat") if ok)
        wait_for(lambda: events() >= 50, 30, "50 batched events verified")
        bat = v.on("/bat")
        t.check(all(ok for _, ok in bat), "every batch verifies")
        got = sorted(e["id"] for r, _ in bat for e in r.json())
        t.eq(got, list(range(50)), "every batched event once")
        want = [batch_id(["b-%d" % e["id"] for e in r.json()]) if len(r.json()) > 1 else "b-%d" % r.json()[0]["id"]
                for r, _ in bat]
        t.eq([r.headers.get("webhook-id") for r, _ in bat], want, "a batch's webhook-id names its events")
        t.check(any(len(r.json()) > 1 for r, _ in bat), "there were batches: %r" % [len(r.json()) for r, _ in bat])
    finally:
        g.stop()
        v.far.close()


def test_config_errors(t, nats, tmp):
    sink = "sink s { use http_out; source ev.x; url http://127.0.0.1:9/; %s }"
    check_config_errors(t, tmp, nats, "http_out", [
        (sink % "sign standard;", "sign standard needs its secret"),
        (sink % "sign rsa; secret x;", "none|standard|hmac"),
        (sink % "sign hmac; secret x;", "sign hmac needs sign_header"),
        (sink % "secret_file x.secret;", "secret_file: is for signed requests"),
        (sink % "sign standard; secret x; secret_file x.secret;", "give the signing secret one way"),
        (sink % "sign standard; secret x; sign_header X-Sig;", "sign_header: is for sign hmac"),
        (sink % "sign hmac; secret x; sign_header Content-Type;", "the signature's header \"Content-Type\""),
    ], "-t")


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    try:
        test_config_errors(t, nats, tmp)
        test_delivery(t, nats, tmp)
    finally:
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
