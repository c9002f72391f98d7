"""Webhook endpoints against a real nats-server, with real HTTP requests signed here with
Python's hmac: GitHub's signature right (202, a flow sees X-GitHub-Event and
X-GitHub-Delivery in meta.headers), wrong or missing (401, nothing stored), a second
secret (rotation), the same delivery twice (stored once); Stripe right and an hour old;
Standard Webhooks right and wrong; Slack's signed payload= form stored as its JSON; a form stored as an object of strings, a lone
payload= field as its JSON, text/plain refused (415) unless raw on; a webhook without
verify takes the ingest token, a signed one does not; a reload reads the secrets again; gust -t refuses an unknown verify,
a missing secret and a path that collides with another route, with file:line."""
import base64
import hashlib
import hmac
import json
import os
import signal
import subprocess
import time

from gustlib import GUST, Checks, Gust, NatsServer, TempDir, free_port, wait_for

INGEST_TOKEN = "ingest-t0ken-for-webhooks"
GH = "gh-s3cret"
GH_OLD = "gh-old-s3cret"
STRIPE = "whsec_stripe_e2e"
STD_KEY = b"standard-webhooks-key-0123456789"
STD = "whsec_" + base64.b64encode(STD_KEY).decode()
SLACK = "8f742231b10e8888abcd99yyyzzz85a5"

FLOW = """
-- what the webhook's kept headers look like to a flow
return {
  source = "ev.hook",
  on_event = function(ev, meta)
    emit("ev.seen", { event = meta.headers["X-GitHub-Event"], delivery = meta.headers["x-github-delivery"],
                      action = ev.action, names = meta.headers["X-GitHub-Event"] and rawget(meta.headers, "X-GitHub-Event") })
  end,
}
"""


def sign_github(body, key=GH):
    return "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def sign_stripe(body, t, key=STRIPE):
    return "t=%d,v1=%s" % (t, hmac.new(key.encode(), str(t).encode() + b"." + body, hashlib.sha256).hexdigest())


def sign_standard(mid, t, body, key=STD_KEY):
    mac = hmac.new(key, mid.encode() + b"." + str(t).encode() + b"." + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def post(g, path, body, headers):
    status, out, _ = g.request("POST", path, body=body, headers=headers)
    try:
        return status, json.loads(out)
    except ValueError:
        return status, out


def conf(tmp, nats):
    return """
http { listen 127.0.0.1:@PORT@; ingest_token_env GUST_E2E_INGEST; }
nats { url %(nats)s; }
webhook github { path /hooks/github; subject ev.hook; verify github; secret_file old.secret gh.secret;
                 headers X-GitHub-Event X-GitHub-Delivery; }
webhook stripe { path /hooks/stripe; subject ev.stripe; verify stripe; secret_file %(stripe)s; }
webhook std    { path /hooks/std; subject ev.std; verify standard; secret_env GUST_E2E_WHSEC; }
webhook form   { path /hooks/form; subject ev.form; }
webhook raw    { path /hooks/raw; subject ev.raw; raw on; headers content-type; }
webhook slack  { path /hooks/slack; subject ev.slack; verify slack; secret_env GUST_E2E_SLACK; }
flow seen { script %(flow)s; }
""" % {"nats": nats.url, "stripe": tmp.file("stripe.secret", STRIPE + "\n"), "flow": tmp.file("seen.lua", FLOW)}


def test_github(t, g, nats):
    body = json.dumps({"action": "opened", "number": 7}).encode()
    hdrs = {"Content-Type": "application/json", "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d-1",
            "X-Hub-Signature-256": sign_github(body)}
    status, out = post(g, "/hooks/github", body, hdrs)
    t.eq(status, 202, "github, right signature: %r" % (out,))
    seen = wait_for(lambda: nats.payloads("ev.seen"), 20, "the flow's emit")
    t.eq(seen, [{"event": "pull_request", "delivery": "d-1", "action": "opened", "names": "pull_request"}],
         "the flow sees X-GitHub-Event (named as sent) and X-GitHub-Delivery (looked up in lower case) in "
         "meta.headers")

    status, out = post(g, "/hooks/github", body, dict(hdrs, **{"X-GitHub-Delivery": "d-1"}))
    t.eq((status, out.get("duplicate")), (202, True), "the same delivery again: 202, a duplicate")
    status, out = post(g, "/hooks/github", body, dict(hdrs, **{"X-GitHub-Delivery": "d-2",
                                                              "X-Hub-Signature-256": sign_github(body, GH_OLD)}))
    t.eq(status, 202, "signed with the other secret of the list (rotation): %r" % (out,))

    before = len(nats.payloads("ev.hook"))
    status, out = post(g, "/hooks/github", body, dict(hdrs, **{"X-GitHub-Delivery": "d-3",
                                                              "X-Hub-Signature-256": sign_github(body, "wrong")}))
    t.eq(status, 401, "github, wrong signature")
    t.check(isinstance(out, dict) and "signature" in out.get("error", ""), "a JSON error: %r" % (out,))
    status, _ = post(g, "/hooks/github", body, {"Content-Type": "application/json", "X-GitHub-Delivery": "d-4"})
    t.eq(status, 401, "github, no signature")
    status, _ = post(g, "/hooks/github", body + b" ", dict(hdrs, **{"X-GitHub-Delivery": "d-5"}))
    t.eq(status, 401, "github, a body that is not the one signed")
    status, _ = post(g, "/hooks/github", b"not json", dict(hdrs, **{"X-GitHub-Delivery": "d-6",
                                                                   "Content-Type": "text/plain",
                                                                   "X-Hub-Signature-256": "sha256=00"}))
    t.eq(status, 401, "a bad signature is refused before the content type (415) is looked at")
    time.sleep(1)
    hooks = nats.payloads("ev.hook")
    t.eq(len(hooks), before, "nothing new stored by the refused deliveries")
    t.eq(len(hooks), 2, "d-1 stored once, d-2 once")
    status, _, _ = g.request("GET", "/hooks/github")
    t.eq(status, 405, "GET on a webhook")
    t.check("from 127.0.0.1" in g.log() and "401 for webhook 'github'" in g.log(), "the refusal logged")
    t.check(GH not in g.log() and GH_OLD not in g.log(), "no secret in the log")


def test_stripe(t, g, nats):
    now = int(time.time())
    body = json.dumps({"id": "evt_e2e_1", "type": "charge.succeeded"}).encode()
    hdrs = {"Content-Type": "application/json; charset=utf-8"}
    status, out = post(g, "/hooks/stripe", body, dict(hdrs, **{"Stripe-Signature": sign_stripe(body, now)}))
    t.eq(status, 202, "stripe, right: %r" % (out,))
    status, out = post(g, "/hooks/stripe", body, dict(hdrs, **{"Stripe-Signature": sign_stripe(body, now + 1)}))
    t.eq((status, out.get("duplicate")), (202, True), "the same Stripe event again (its id): a duplicate")
    old = now - 3600
    status, out = post(g, "/hooks/stripe", body, dict(hdrs, **{"Stripe-Signature": sign_stripe(body, old)}))
    t.eq(status, 401, "stripe, an hour old: %r" % (out,))
    time.sleep(0.5)
    t.eq(nats.payloads("ev.stripe"), [{"id": "evt_e2e_1", "type": "charge.succeeded"}], "one Stripe event stored")


def test_standard(t, g, nats):
    now = int(time.time())
    body = b'{"type":"invoice.paid","n":1}'
    hdrs = {"Content-Type": "application/json", "webhook-id": "msg_e2e_1", "webhook-timestamp": str(now)}
    status, out = post(g, "/hooks/std", body, dict(hdrs, **{"webhook-signature": sign_standard("msg_e2e_1", now,
                                                                                                body)}))
    t.eq(status, 202, "standard, right: %r" % (out,))
    status, out = post(g, "/hooks/std", body, dict(hdrs, **{"webhook-id": "msg_e2e_2",
                                                            "webhook-signature": sign_standard("msg_e2e_2", now, body,
                                                                                               b"wrong-key")}))
    t.eq(status, 401, "standard, wrong: %r" % (out,))
    time.sleep(0.5)
    t.eq(nats.payloads("ev.std"), [{"type": "invoice.paid", "n": 1}], "one standard event stored")


def test_forms(t, g, nats):
    auth = {"Authorization": "Bearer " + INGEST_TOKEN}
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, out = post(g, "/hooks/form", b"a=1&b=x+y", form)
    t.eq(status, 401, "a webhook without verify takes the ingest token: %r" % (out,))
    status, out = post(g, "/hooks/form", b"a=1&b=x+y", dict(form, **auth))
    t.eq(status, 202, "a form: %r" % (out,))
    status, out = post(g, "/hooks/form", b"t=1&t=2&e=caf%C3%A9", dict(form, **auth))
    t.eq(status, 202, "a form with a repeated key: %r" % (out,))
    payload = "payload=" + "%7B%22type%22%3A%22block_actions%22%2C%22n%22%3A%5B1%5D%7D"
    status, out = post(g, "/hooks/form", payload.encode(), dict(form, **auth))
    t.eq(status, 202, "a payload= form: %r" % (out,))
    status, out = post(g, "/hooks/form", b"e=%C0%AF", dict(form, **auth))
    t.eq(status, 400, "a form that is not UTF-8: %r" % (out,))
    status, out = post(g, "/hooks/form", b"hello", dict({"Content-Type": "text/plain"}, **auth))
    t.eq(status, 415, "text/plain: %r" % (out,))
    status, out = post(g, "/hooks/raw", b"<a>hello</a>", dict({"Content-Type": "application/xml"}, **auth))
    t.eq(status, 202, "raw on: %r" % (out,))
    time.sleep(0.5)
    t.eq(nats.payloads("ev.form"), [{"a": "1", "b": "x y"}, {"t": ["1", "2"], "e": "caf\u00e9"},
                                    {"type": "block_actions", "n": [1]}], "the forms as stored")
    t.eq(nats.payloads("ev.raw"), [{"body_base64": base64.b64encode(b"<a>hello</a>").decode()}], "raw on, as stored")


def test_slack(t, g, nats):
    """Slack's interactive request: a signed payload= form, stored as its JSON."""
    now = int(time.time())
    body = b"payload=%7B%22type%22%3A%22block_actions%22%2C%22user%22%3A%7B%22id%22%3A%22U1%22%7D%7D"
    sig = "v0=" + hmac.new(SLACK.encode(), b"v0:%d:" % now + body, hashlib.sha256).hexdigest()
    hdrs = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": str(now),
            "X-Slack-Signature": sig}
    status, out = post(g, "/hooks/slack", body, hdrs)
    t.eq(status, 202, "slack, right: %r" % (out,))
    status, out = post(g, "/hooks/slack", body, dict(hdrs, **{"X-Slack-Request-Timestamp": str(now - 600)}))
    t.eq(status, 401, "slack, a timestamp 10 minutes old: %r" % (out,))
    time.sleep(0.5)
    t.eq(nats.payloads("ev.slack"), [{"type": "block_actions", "user": {"id": "U1"}}], "the payload's JSON stored")
    status, metrics, _ = g.request("GET", "/metrics")
    text = metrics.decode()
    t.check('route="webhook",code="202"' in text and 'route="webhook",code="401"' in text,
            "/metrics counts the webhook route")


def test_reload(t, tmp, g, nats):
    """A secret replaced in its file is read again at reload (rotation without a restart)."""
    tmp.file("gh.secret", "gh-new-s3cret\n")
    g.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "reloaded tokens and limits" in g.log(), 20, "the reload")
    body = b'{"action":"closed"}'
    hdrs = {"Content-Type": "application/json", "X-GitHub-Delivery": "d-10"}
    status, out = post(g, "/hooks/github", body, dict(hdrs, **{"X-Hub-Signature-256": sign_github(body)}))
    t.eq(status, 401, "the replaced secret no longer verifies: %r" % (out,))
    status, out = post(g, "/hooks/github", body, dict(hdrs, **{"X-Hub-Signature-256": sign_github(body,
                                                                                               "gh-new-s3cret")}))
    t.eq(status, 202, "the new secret verifies after the reload: %r" % (out,))


CHECK_CASES = [
    ("webhook w { path /hooks/w; subject ev.w; verify gitlab; secret_env X; }", "verify"),
    ("webhook w { path /hooks/w; subject ev.w; verify github; }", "verify github needs its signing secret"),
    ("webhook w { path /hooks/w; subject ev.w; verify github; secret_file /nonexistent/gh.secret; }",
     "secret_file /nonexistent/gh.secret: No such file"),
    ("webhook w { path /ingest/w; subject ev.w; }", "collides with the front's routes /ingest"),
    ("webhook w { path /healthz; subject ev.w; }", "is the front's own route /healthz"),
    ("webhook w { path /hooks/w; subject ev.w; verify hmac; secret_env HOME; }", "signature_header"),
    ("webhook w { path /hooks/w; subject other.w; }", "not under the stream's subjects"),
    ("webhook w { path /hooks/w/; subject ev.w; }", "no trailing /"),
    ("webhook w { path /hooks/w; subject ev.w; headers X-A gust-reply-to; }", "Gust-Reply-To is Gust's own"),
    ("webhook w { path /hooks/w; subject ev.w; respond maybe; }", "respond"),
    ("webhook w { path /call/w; subject ev.w; }", "/call"),
]


def test_config_errors(t, tmp, nats):
    def run(blocks):
        path = tmp.file("check.conf", "nats { url %s; }\nhttp { listen 127.0.0.1:%d; }\n%s\n"
                        % (nats.url, free_port(), blocks))
        return path, subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True, timeout=30)

    for block, want in CHECK_CASES:
        path, p = run(block)
        t.check(p.returncode != 0, "gust -t refuses: " + want)
        t.check(path + ":3: " in p.stderr and want in p.stderr, "%r with file:line in %r" % (want, p.stderr[-600:]))
    path, p = run("webhook a { path /hooks/x; subject ev.a; }\nwebhook b { path /hooks/x; subject ev.b; }")
    t.check(p.returncode != 0 and path + ":4: " in p.stderr and "already webhook 'a''s" in p.stderr,
            "two webhooks on one path: %r" % p.stderr[-600:])
    secret = tmp.file("ok.secret", "s\n")
    path, p = run("webhook a { path /hooks/x; subject ev.a; verify github; secret_file %s; }" % secret)
    t.eq(p.returncode, 0, "gust -t takes a good webhook: %r" % p.stderr[-600:])


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    g = None
    try:
        test_config_errors(t, tmp, nats)
        tmp.file("gh.secret", GH + "\n")  # the trailing newline is not part of the secret
        tmp.file("old.secret", GH_OLD)
        g = Gust(tmp, conf(tmp, nats), env={"GUST_E2E_INGEST": INGEST_TOKEN, "GUST_E2E_WHSEC": STD,
                                          "GUST_E2E_SLACK": SLACK})
        test_github(t, g, nats)
        test_stripe(t, g, nats)
        test_standard(t, g, nats)
        test_forms(t, g, nats)
        test_slack(t, g, nats)
        test_reload(t, tmp, g, nats)
    finally:
        if g is not None:
            g.stop()
            if t.failed:
                print(g.log()[-4000:])
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
