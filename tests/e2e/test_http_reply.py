"""http_out's answers as events and forwarded headers (issue 27, items 5 and 4).

- reply_to: 50 events each get the far end's answer published to the reply subject, once
  (a JSON answer as it is, a text answer as {"body_base64": ...}), with Gust-Status,
  Content-Type and Gust-Request-Id (the input's Nats-Msg-Id) headers, which a flow reads
  next. The far end holds its first answers past ack_wait, so the bus delivers those
  inputs again and the far end answers them twice: the answer is still stored once.
- An answer too large to publish (1.1 MiB) dead-letters its input with the reason.
- reply_to with batching, and a Nats-* name in forward_headers, are config errors with
  file:line.
- forward_headers X-Tenant: 30 routed PUTs from a flow's emits, each with its X-Tenant
  and the trace context (traceparent, forwarded by default), and neither the emitted
  header not listed nor the bus's Nats-Msg-Id.

The far end is our own HTTP/1.1 server (keep-alive), recording every request."""
import base64
import json
import os
import threading
import time
import urllib.parse

from gustlib import BUILD, Checks, FarEnd, Gust, NatsServer, TempDir, check_config_errors, nats_publish, wait_for

PLUGINS = os.path.join(BUILD, "plugins")

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 2s; max_deliver 3; retry_delay 100ms; retry_max_delay 500ms; }
%(units)s
"""

SEEN = """
return { on_event = function(ev, meta) emit("ev.seen", { ev = ev, headers = meta.headers }) end }
"""

TAG = """
return { on_event = function(ev)
  emit("ev.fwd", ev, { headers = { ["X-Tenant"] = ev.tenant, ["X-Secret"] = "s3cret",
                                    traceparent = string.format("00-%032x-%016x-01", ev.id + 1, ev.id + 1) } })
end }
"""


def far_end():
    """/score answers {"score": id * 10, "id": id} (application/json), or a text for id
    49; the first answers to ids divisible by 10 come 3 s late (past ack_wait). /big
    answers a JSON string over 1 MiB. Anything else: 200."""
    slowed, lock = set(), threading.Lock()

    def answer(req):
        if req.path == "/big":
            return 200, b'"' + b"x" * (1100 * 1024) + b'"', {"Content-Type": "application/json"}
        if req.path != "/score":
            return 200, b"", {"Content-Type": "text/plain"}
        i = req.json()["id"]
        with lock:
            slow = i % 10 == 0 and i not in slowed
            slowed.add(i)
        if slow:
            time.sleep(3)
        if i == 49:
            return 200, b"plain text, not JSON\n", {"Content-Type": "text/plain"}
        return 200, json.dumps({"score": i * 10, "id": i}).encode(), {"Content-Type": "application/json"}

    return FarEnd(answer)


def start(tmp, nats, far, units):
    return Gust(tmp, CONF % {"plugins": PLUGINS, "nats": nats.url,
                             "units": units.replace("FAR", "http://127.0.0.1:%d" % far.port)})


def test_reply_to(t, nats):
    far = far_end()
    tmp = TempDir()
    tmp.file("seen.lua", SEEN)
    g = start(tmp, nats, far, "sink e { use http_out; source ev.reply; url FAR/score; reply_to ev.enriched; }\n"
              "flow seen { script %s; source ev.enriched; }" % os.path.join(tmp.path, "seen.lua"))
    try:
        nats_publish(nats.port, [("ev.reply", {"Nats-Msg-Id": "in-%d" % i}, json.dumps({"id": i}).encode())
                         for i in range(50)])
        replies = lambda: [m for m in nats.read_stream() if m[1] == "ev.enriched"]
        wait_for(lambda: len({json.loads(m[2]).get("id") for m in replies()}) >= 49 and len(replies()) >= 50, 60,
                 "50 answers published")
        # The slowed answers' inputs were delivered again (past ack_wait) and answered
        # again; wait for those second answers and their publishes.
        wait_for(lambda: len(far.requests()) >= 55, 30, "the slowed inputs answered twice")
        time.sleep(1.5)
        asked = [h.json()["id"] for h in far.requests()]
        twice = sorted(i for i in set(asked) if asked.count(i) > 1)
        print("reply_to: %d requests, answered twice: %r" % (len(far.requests()), twice))
        t.check(len(twice) >= 5, "the far end answered the slowed inputs again (a retry): %r" % twice)
        got = [json.loads(m[2]) for m in replies()]
        t.eq(len(got), 50, "one answer stored per input, retries included")
        want = [{"score": i * 10, "id": i} for i in range(49)]
        t.eq(sorted((e for e in got if "id" in e), key=lambda e: e["id"]), want, "each input's JSON answer as the event")
        text = [e for e in got if "body_base64" in e]
        t.check(len(text) == 1 and base64.b64decode(text[0]["body_base64"]) == b"plain text, not JSON\n",
                "a text answer as body_base64: %r" % text)
        seen = {}
        wait_for(lambda: len([m for m in nats.read_stream() if m[1] == "ev.seen"]) >= 50, 30, "the flow read 50")
        for m in nats.read_stream():
            if m[1] == "ev.seen":
                e = json.loads(m[2])
                seen[e["ev"].get("id", 49)] = e["headers"]
        h7 = seen.get(7, {})
        print("headers of the answer to id 7: %r" % h7)
        t.check(h7.get("Gust-Status") == "200" and h7.get("Content-Type") == "application/json" and
                h7.get("Gust-Request-Id") == "in-7", "the answer's headers reach the next flow: %r" % h7)
        t.check(all(seen[i].get("Gust-Request-Id") == "in-%d" % i for i in seen),
                "every answer names its input's Nats-Msg-Id")
    finally:
        g.stop()
        far.close()


def test_too_big(t, nats):
    far = far_end()
    tmp = TempDir()
    g = start(tmp, nats, far, "sink big { use http_out; source ev.big; url FAR/big; reply_to ev.bigout; }")
    try:
        nats_publish(nats.port, [("ev.big", {}, b'{"id": 1}')])
        dl = lambda: [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq.big"]
        wait_for(lambda: len(dl()) >= 1, 60, "the input dead-lettered")
        print("too big: %r" % dl()[0]["error"])
        t.check("more than reply_to publishes" in dl()[0]["error"], "the reason: %r" % dl()[0]["error"])
        t.eq([m for m in nats.read_stream() if m[1] == "ev.bigout"], [], "nothing published")
    finally:
        g.stop()
        far.close()


def test_forward(t, nats):
    far = far_end()
    tmp = TempDir()
    tmp.file("tag.lua", TAG)
    g = start(tmp, nats, far, "flow tag { script %s; source ev.tag; }\n"
              'sink t { use http_out; source ev.fwd; url "FAR/orders/{payload.country}"; method PUT; '
              'header X-Order "{payload.id}"; forward_headers X-Tenant; }' % os.path.join(tmp.path, "tag.lua"))
    countries = ["FR", "DE", "United Kingdom"]
    try:
        events = [{"id": i, "country": countries[i % 3], "tenant": "t%d" % (i % 4)} for i in range(30)]
        nats_publish(nats.port, [("ev.tag", {}, json.dumps(e).encode()) for e in events])
        wait_for(lambda: len(far.requests()) >= 30, 60, "30 PUTs")
        time.sleep(0.5)
        t.eq(len(far.requests()), 30, "30 requests")
        for r in far.requests():
            method, path, headers, body = r.method, r.path, r.headers, r.body
            e = json.loads(body)
            want = "/orders/%s" % urllib.parse.quote(e["country"], safe="")
            low = {k.lower(): v for k, v in headers.items()}
            t.check(method == "PUT" and path == want and low.get("x-order") == str(e["id"]) and
                    low.get("x-tenant") == e["tenant"],
                    "PUT %s with X-Order %s, X-Tenant %s: got %s %s %r" % (want, e["id"], e["tenant"], method, path,
                                                                         headers))
            # The sink's own span is the far end's parent: the trace id is the emit's, the span id new.
            tp = (low.get("traceparent") or "").split("-")
            t.check(len(tp) == 4 and tp[1] == "%032x" % (e["id"] + 1) and tp[2] != "%016x" % (e["id"] + 1),
                    "the trace context forwarded by default, as a child of the sink's span: %r" % low.get("traceparent"))
            t.check("x-secret" not in low and not any(k.startswith("nats-") for k in low),
                    "no header that is not listed (X-Secret, Nats-Msg-Id): %r" % headers)
        t.eq(sorted(h.json()["id"] for h in far.requests()), list(range(30)), "each routed once")
    finally:
        g.stop()
        far.close()


def test_config(t, nats):
    tmp = TempDir()
    check_config_errors(t, tmp, nats, "http_out", [
        ("sink e { use http_out; source ev.a; url http://x/; reply_to ev.b; batch_max 10; }",
         "reply_to: publishes one answer per message"),
        ("sink e { use http_out; source ev.a; url http://x/; reply_to 'ev.*'; }", "is not a subject"),
        ("sink e { use http_out; source ev.a; url http://x/; forward_headers X-A Nats-Msg-Id; }",
         "forward_headers: \"Nats-Msg-Id\" is the bus's own"),
        ("sink e { use http_out; source ev.a; url http://x/; header X-A 1; forward_headers x-a; }",
         "is set by the header key too"),
    ], "-t")


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    try:
        test_config(t, nats)
        test_forward(t, nats)
        test_reply_to(t, nats)
        test_too_big(t, nats)
    finally:
        nats.stop()
    t.done()


if __name__ == "__main__":
    main()
