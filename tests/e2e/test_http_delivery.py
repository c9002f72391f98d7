"""http_out delivering to real APIs (issue 27, items 1-3 and 6): batches, rate limits,
templates, the outage pause.

- batch_max 100, batch_linger 20ms, json_array: 2 000 events arrive as JSON arrays of at
  most 100 in no more than 100 requests, every id once; ndjson the same as lines.
- batch_wrap '{"records": [...]}' puts each batch's array in a wrapper.
- A batch the far end refuses (400) is sent again event by event: only the bad events
  are dead-lettered, every other one is delivered once.
- rate 200/s: between 180 and 220 requests a second over 6 s (without the limiter the
  sink sends thousands a second).
- rate_key "{payload.tenant}": one 20/s bucket per tenant, side by side.
- Templates: 30 routed PUTs, each to /orders/<its country, percent-encoded> with
  X-Order: <its id>; an event without the field, and one whose id would inject a header
  line, are dead-lettered (exactly those), with the reason.
- Outage pause: events at 300/s while the far end answers 503 for 10 s cost at most 100
  requests (one probe at a time, backing off), and /units shows the sink paused; then
  every one of the 3 000 is delivered.

The far end is our own HTTP/1.1 server (keep-alive, pipelined requests answered in
order), recording every request."""
import json
import os
import time
import urllib.parse

from gustlib import BUILD, Checks, FarEnd, Gust, NatsServer, TempDir, nats_publish, wait_for

PLUGINS = os.path.join(BUILD, "plugins")

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 2; retry_delay 100ms; retry_max_delay 500ms; }
%(sink)s
"""


def far_end():
    """Answers 400 to a body holding an event with "bad": true (alone or in an array), 200
    otherwise; 503 to everything while `down` is set."""
    def answer(req):
        if far.down:
            return 503
        return (400, "bad event\n") if b'"bad": true' in req.body or b'"bad":true' in req.body else 200
    far = FarEnd(answer)
    far.down = False
    return far


def start(tmp, nats, far, sink):
    return Gust(tmp, CONF % {"plugins": PLUGINS, "nats": nats.url,
                             "sink": sink.replace("FAR", far.url)})


def dead_letters(nats, unit):
    return [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq." + unit]


def test_batches(t, nats, fmt):
    far = far_end()
    tmp = TempDir()
    subject = "ev.orders.%s" % fmt
    g = start(tmp, nats, far, "sink b { use http_out; source %s; url FAR/bulk; batch_max 100; "
              "batch_linger 20ms; batch_format %s; }" % (subject, fmt))
    try:
        nats_publish(nats.port, [(subject, json.dumps({"id": i}).encode()) for i in range(2000)])
        ids = lambda: sum(len(parse(h.body, fmt)) for h in far.requests())
        wait_for(lambda: ids() >= 2000, 60, "%s: 2000 events delivered" % fmt)
        time.sleep(0.5)
        sizes = [len(parse(h.body, fmt)) for h in far.requests()]
        got = sorted(e["id"] for h in far.requests() for e in parse(h.body, fmt))
        print("%s: %d requests, sizes %s" % (fmt, len(far.requests()), sizes[:30]))
        t.check(len(far.requests()) <= 100, "%s: at most 100 requests for 2000 events: %d" % (fmt, len(far.requests())))
        t.check(max(sizes) <= 100, "%s: at most 100 events a request: %d" % (fmt, max(sizes)))
        t.eq(got, list(range(2000)), "%s: every id once" % fmt)
        ctype = far.requests()[0].headers.get("Content-Type")
        t.eq(ctype, "application/json", "%s: the content type" % fmt)
    finally:
        g.stop()
        far.close()


def parse(body, fmt):
    if fmt == "ndjson":
        assert body.endswith(b"\n"), body[-20:]
        return [json.loads(line) for line in body.split(b"\n") if line]
    v = json.loads(body)
    assert isinstance(v, list), body[:40]
    return v


def test_wrap(t, nats):
    far = far_end()
    tmp = TempDir()
    g = start(tmp, nats, far, "sink bw { use http_out; source ev.wrap; url FAR/bulk; batch_max 10; "
              "batch_linger 50ms; batch_wrap '{\"records\": [...], \"n\": 1}'; }")
    try:
        nats_publish(nats.port, [("ev.wrap", json.dumps({"id": i}).encode()) for i in range(30)])
        wait_for(lambda: sum(len(json.loads(h.body)["records"]) for h in far.requests()) >= 30, 30,
                 "30 events wrapped")
        bodies = [json.loads(h.body) for h in far.requests()]
        t.check(all(set(b) == {"records", "n"} and len(b["records"]) <= 10 for b in bodies),
                "batch_wrap: each body is the wrapper around its batch: %r" % bodies[0])
        t.eq(sorted(e["id"] for b in bodies for e in b["records"]), list(range(30)), "batch_wrap: every id once")
    finally:
        g.stop()
        far.close()


def test_batch_refused(t, nats):
    far = far_end()
    tmp = TempDir()
    g = start(tmp, nats, far, "sink br { use http_out; source ev.refuse; url FAR/bulk; batch_max 50; "
              "batch_linger 20ms; }")
    bad = {7, 120, 299}
    try:
        nats_publish(nats.port, [("ev.refuse", json.dumps({"id": i, "bad": i in bad}).encode())
                                 for i in range(300)])
        wait_for(lambda: len(dead_letters(nats, "br")) >= 3, 60, "three dead letters")
        time.sleep(1)
        dl = sorted(json.loads(d["payload"])["id"] for d in dead_letters(nats, "br"))
        t.eq(dl, sorted(bad), "only the bad events are dead-lettered")
        t.check(all("http 400" in d["error"] and "bad event" in d["error"] for d in dead_letters(nats, "br")),
                "the far end's answer in the dead letter: %r" % dead_letters(nats, "br")[0]["error"])
        # The far end answered 200 exactly to the requests holding no bad event.
        accepted = [json.loads(h.body) for h in far.requests()]
        ok = [e["id"] for batch in accepted if not any(x["bad"] for x in batch) for e in batch]
        t.eq(sorted(ok), [i for i in range(300) if i not in bad], "every good event accepted once")
        singles = [h for h in far.requests() if len(json.loads(h.body)) == 1]
        t.check(len(singles) >= 50, "a refused batch is sent again event by event (batches of one): %d"
                % len(singles))
    finally:
        g.stop()
        far.close()


def test_rate(t, nats):
    far = far_end()
    tmp = TempDir()
    g = start(tmp, nats, far, "sink r { use http_out; source ev.rate; url FAR/x; rate 200/s; }")
    try:
        nats_publish(nats.port, [("ev.rate", json.dumps({"id": i}).encode()) for i in range(1700)])
        wait_for(lambda: len(far.requests()) >= 1600, 60, "1600 requests")
        # The first second's burst (200 at once) is left out: from the 300th request to the
        # 1500th, 1200 requests, 6 s at 200/s.
        times = [h.t for h in far.requests()]
        rate = 1200 / (times[1499] - times[299])
        print("rate: %.1f requests/s over %.2f s" % (rate, times[1499] - times[299]))
        t.check(180 <= rate <= 220, "rate 200/s measured between 180 and 220/s: %.1f" % rate)
        wait_for(lambda: len(far.requests()) >= 1700, 30, "every event")
        got = sorted(json.loads(h.body)["id"] for h in far.requests())
        t.eq(got, list(range(1700)), "every event once (none redelivered while waiting for the rate)")
    finally:
        g.stop()
        far.close()


def test_rate_key(t, nats):
    far = far_end()
    tmp = TempDir()
    g = start(tmp, nats, far, 'sink rk { use http_out; source ev.rkey; url FAR/x; rate 20/s; rate_key "{payload.tenant}"; }')
    try:
        nats_publish(nats.port, [("ev.rkey", json.dumps({"id": i, "tenant": "t%d" % (i % 3)}).encode())
                                 for i in range(180)])
        wait_for(lambda: len(far.requests()) >= 180, 60, "180 requests")
        t0 = far.requests()[0].t
        total = far.requests()[-1].t - t0
        spans = {}
        for tenant in ("t0", "t1", "t2"):
            times = [h.t for h in far.requests() if json.loads(h.body)["tenant"] == tenant]
            spans[tenant] = times[59] - times[20]  # past its burst of 20: 39 tokens at 20/s
        print("rate_key: all in %.2f s, per tenant after the burst %r" % (total, spans))
        t.check(all(1.6 <= v <= 3.0 for v in spans.values()), "rate_key: each tenant at 20/s: %r" % spans)
        # One bucket for all would take (180 - 20) / 20 = 8 s.
        t.check(total < 5, "rate_key: the tenants' buckets run side by side: %.2f s" % total)
        t.eq(sorted(json.loads(h.body)["id"] for h in far.requests()), list(range(180)), "rate_key: every event once")
    finally:
        g.stop()
        far.close()


def test_templates(t, nats):
    far = far_end()
    tmp = TempDir()
    g = start(tmp, nats, far, 'sink t { use http_out; source ev.tpl; url "FAR/orders/{payload.country}?src={subject}"; '
              'method PUT; header X-Order "{payload.id}"; header "X-Fixed: yes"; }')
    countries = ["FR", "DE", "United Kingdom", "a/b?c"]
    try:
        events = [{"id": i, "country": countries[i % 4]} for i in range(30)]
        msgs = [("ev.tpl", json.dumps(e).encode()) for e in events]
        msgs.append(("ev.tpl", json.dumps({"id": 30}).encode()))  # no country
        msgs.append(("ev.tpl", json.dumps({"id": "x\r\nX-Evil: 1", "country": "FR"}).encode()))
        nats_publish(nats.port, msgs)
        wait_for(lambda: len(far.requests()) >= 30 and len(dead_letters(nats, "t")) >= 2, 60,
                 "30 PUTs and two dead letters")
        time.sleep(0.5)
        t.eq(len(far.requests()), 30, "30 requests")
        for r in far.requests():
            method, path, headers, e = r.method, r.path, r.headers, r.json()
            want = "/orders/%s?src=ev.tpl" % urllib.parse.quote(e["country"], safe="")
            t.check(method == "PUT" and path == want and headers.get("X-Order") == str(e["id"]) and
                    headers.get("X-Fixed") == "yes",
                    "PUT %s with X-Order %s: got %s %s %r" % (want, e["id"], method, path, headers.get("X-Order")))
        t.eq(sorted(json.loads(h.body)["id"] for h in far.requests()), list(range(30)), "each routed once")
        dl = {json.loads(d["payload"])["id"]: d["error"] for d in dead_letters(nats, "t")}
        t.eq(sorted(map(str, dl)), ["30", "x\r\nX-Evil: 1"], "exactly the two bad events dead-lettered")
        print("dead letters: %r" % dl)
        t.check("payload.country" in dl.get(30, ""), "the missing field named: %r" % dl.get(30))
        t.check("line break" in dl.get("x\r\nX-Evil: 1", ""), "the header injection refused: %r"
                % dl.get("x\r\nX-Evil: 1"))
        t.check(not any("X-Evil" in h.headers for h in far.requests()), "no injected header reached the far end")
    finally:
        g.stop()
        far.close()


def plugin_counters(g, unit):
    units = json.loads(g.request("GET", "/units")[1])["units"]
    return [u for u in units if u["name"] == unit][0].get("plugin", {})


def test_outage(t, nats):
    far = far_end()
    far.down = True
    tmp = TempDir()
    g = start(tmp, nats, far, "sink o { use http_out; source ev.outage; url FAR/o; }")
    try:
        t0 = time.monotonic()
        for k in range(100):  # 300/s for 10 s
            nats_publish(nats.port, [("ev.outage", json.dumps({"id": k * 30 + i}).encode()) for i in range(30)])
            time.sleep(max(0, t0 + (k + 1) * 0.1 - time.monotonic()))
        paused = plugin_counters(g, "o")
        during = len(far.requests())
        far.down = False
        print("outage: %d requests in %.1f s; counters %r" % (during, time.monotonic() - t0, paused))
        t.check(during <= 100, "a 10 s outage at 300 events/s costs at most 100 requests: %d" % during)
        t.check(paused.get("outage") == 1 and paused.get("outages", 0) >= 1 and paused.get("probes", 0) >= 1,
                "/units shows the sink paused: %r" % paused)
        ok = lambda: {h.json()["id"] for h in far.requests() if h.status == 200}
        wait_for(lambda: len(ok()) >= 3000, 60, "every event delivered after the outage")
        t.eq(sorted(ok()), list(range(3000)), "every event delivered")
        t.eq(plugin_counters(g, "o").get("outage"), 0, "the pause ends")
        metrics = g.request("GET", "/metrics")[1].decode()
        t.check('gust_plugin_value{unit="o",name="outages"}' in metrics, "the pause in /metrics")
    finally:
        g.stop()
        far.close()


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    only = os.environ.get("GUST_TEST_ONLY", "")
    try:
        if only in ("", "batch"):
            test_batches(t, nats, "json_array")
            test_batches(t, nats, "ndjson")
            test_wrap(t, nats)
            test_batch_refused(t, nats)
        if only in ("", "rate"):
            test_rate(t, nats)
        if only in ("", "tpl"):
            test_templates(t, nats)
            test_rate_key(t, nats)
        if only in ("", "outage"):
            test_outage(t, nats)
    finally:
        nats.stop()
    t.done()


if __name__ == "__main__":
    main()
