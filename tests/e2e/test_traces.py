"""Trace context and OTLP export (issue 28, items 4-5), against a real nats-server, a real
HTTP far end and our own OTLP/HTTP JSON receiver: a traceparent on ingest reaches
http_out's request with the same trace id; the receiver gets the ingest, flow and sink
spans of that trace, each the child of the one before; with otlp and no traceparent,
ingest starts a trace; with the collector down, ingest still answers 202 and the drop
counter grows; without otlp, a traceparent is carried on and an event without one is
stored without headers. Webhooks keep the trace context as ingest does."""
import base64
import json

from gustlib import Checks, FarEnd, Gust, NatsServer, TempDir, check_config_errors, js_api, kill_all, wait_for

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
%(otlp)s
plugin http_out;
flow enrich { script %(script)s; source ev.in; }
sink far { use http_out; source ev.out; url http://127.0.0.1:%(far)d/x; }
webhook hook { path /hooks/t; subject ev.hooked; }
flow calc { script %(calc)s; source ev.calc; }
"""


def spans(otlp):
    out = []
    for r in otlp.requests():
        headers, body = r.headers, r.body
        assert headers.get("content-type") == "application/json", headers
        for rs in json.loads(body)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out.extend(ss["spans"])
    return out


def stored_headers(nats, subject):
    """The NATS headers of the last event stored on subject, as text ('' when none)."""
    seq = [m[0] for m in nats.read_stream() if m[1] == subject][-1]
    msg = js_api(nats.port, "STREAM.MSG.GET.GUST", {"seq": seq})["message"]
    return base64.b64decode(msg["hdrs"]).decode() if msg.get("hdrs") else ""


def metric(g, name):
    for line in g.request("GET", "/metrics")[1].decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    far, otlp = FarEnd(), FarEnd()
    calc = tmp.file("calc.lua", 'return { on_event = function(ev) reply({ answer = ev.n * 2 }) end }')
    script = tmp.file("enrich.lua", 'return { on_event = function(ev) emit("ev.out", { n = ev.n, seen = true }) end }')
    procs = []
    try:
        check_config_errors(t, tmp, nats, "http_out", [
            ("otlp { endpoint http://127.0.0.1:4318/v1/traces; sample 2; }", "invalid ratio '2' for 'sample' (a decimal from 0 to 1"),
            ("otlp { endpoint https://collector/v1/traces; }", "endpoint must be a URL of scheme http in otlp"),
            ("otlp { sample 0.5; }", "otlp: endpoint is required"),
        ], "-t")
        g = Gust(tmp, CONF % {"nats": nats.url, "far": far.port, "script": script, "calc": calc,
                              "otlp": "otlp { endpoint http://127.0.0.1:%d/v1/traces; sample 1.0; }" % otlp.port})
        procs.append(g)
        tp = "00-%s-%s-01" % (TRACE, PARENT)
        status, _, _ = g.request("POST", "/ingest/in", body=b'{"n": 1}',
                                 headers={"traceparent": tp, "tracestate": "vendor=x"})
        t.eq(status, 202, "ingest with a traceparent")
        wait_for(lambda: far.requests(), 15, "http_out's request")
        got = far.requests()[0].headers.get("traceparent", "")
        t.check(got.startswith("00-%s-" % TRACE) and got.endswith("-01") and PARENT not in got,
                "http_out sends a child traceparent of the same trace: %r" % got)
        stored = stored_headers(nats, "ev.in")
        t.check("traceparent: 00-%s-" % TRACE in stored and "tracestate: vendor=x" in stored,
                "the stored event keeps the trace context: %r" % stored)

        def chain():
            mine = {s["name"]: s for s in spans(otlp) if s["traceId"] == TRACE}
            return mine if {"ingest", "flow enrich", "sink far"} <= set(mine) else None
        wait_for(chain, 15, "the ingest, flow and sink spans at the OTLP receiver")
        s = chain()
        t.eq(s["ingest"].get("parentSpanId"), PARENT, "the ingest span's parent is the caller's")
        t.eq(s["flow enrich"].get("parentSpanId"), s["ingest"]["spanId"], "the flow span's parent is ingest's")
        t.eq(s["sink far"].get("parentSpanId"), s["flow enrich"]["spanId"], "the sink span's parent is the flow's")
        t.eq(got.split("-")[2], s["sink far"]["spanId"], "http_out's request is a child of the sink span")
        t.check(all(len(x["spanId"]) == 16 and x["spanId"] == x["spanId"].lower() for x in s.values()),
                "span ids are 16 lowercase hex digits")
        attrs = {a["key"]: a["value"] for a in s["flow enrich"]["attributes"]}
        t.eq(attrs.get("messaging.destination.name"), {"stringValue": "ev.in"}, "the flow span's subject")
        t.check("gust.stream_seq" in attrs, "the flow span's stream seq")

        # A webhook keeps it too, as a child of its own span.
        t.eq(g.request("POST", "/hooks/t", body=b'{"n": 9}', headers={"traceparent": tp})[0], 202, "webhook")
        hooked = stored_headers(nats, "ev.hooked")
        t.check("traceparent: 00-%s-" % TRACE in hooked and PARENT not in hooked, "a webhook keeps it: %r" % hooked)

        status, body, _ = g.request("POST", "/call/calc", body=b'{"n": 21}', headers={"traceparent": tp})
        t.eq((status, json.loads(body)), (200, {"answer": 42}), "/call with a traceparent")
        t.check("traceparent: 00-%s-" % TRACE in stored_headers(nats, "ev.calc"), "/call keeps it")
        wait_for(lambda: {"call", "flow calc"} <= {x["name"] for x in spans(otlp) if x["traceId"] == TRACE}, 15,
                 "the call and flow calc spans")

        # No traceparent, otlp on with sample 1.0: ingest starts a trace.
        t.eq(g.request("POST", "/ingest/in", body=b'{"n": 2}')[0], 202, "ingest without a traceparent")
        t.check("traceparent: 00-" in stored_headers(nats, "ev.in"), "with otlp, ingest starts a trace")

        # The collector down: ingest goes on, spans are dropped and counted.
        otlp.close()
        before = metric(g, "gust_otlp_spans_dropped_total")
        for i in range(3):
            t.eq(g.request("POST", "/ingest/in", body=b'{"n": 3}', headers={"traceparent": tp})[0], 202,
                 "ingest with the collector down")
        wait_for(lambda: metric(g, "gust_otlp_spans_dropped_total") > before, 15, "the drop counter grows")
        t.eq(g.stop(), 0, "gust stops with the collector down")

        # Without otlp: a traceparent is carried on; an event without one stays bare.
        g2 = Gust(tmp, CONF % {"nats": nats.url, "far": far.port, "script": script, "calc": calc, "otlp": ""})
        procs.append(g2)
        t.eq(g2.request("POST", "/ingest/in", body=b'{"n": 4}')[0], 202, "ingest without otlp")
        t.eq(stored_headers(nats, "ev.in"), "", "without otlp nor traceparent, no header is stored")
        wait_for(lambda: len(far.requests()) >= 6, 15, "the far end's requests")
        t.check("traceparent" not in far.requests()[-1].headers, "and http_out sends none")
        g2.request("POST", "/ingest/in", body=b'{"n": 5}', headers={"traceparent": tp})
        t.check("traceparent: 00-%s-" % TRACE in stored_headers(nats, "ev.in"), "without otlp, it is carried on")
        wait_for(lambda: len(far.requests()) >= 7, 15, "the far end's request")
        t.check(far.requests()[-1].headers.get("traceparent", "").startswith("00-%s-" % TRACE),
                "and reaches http_out's request")
        t.check("otlp" not in g2.log(), "no exporter without an otlp block")
    except BaseException:
        kill_all(procs, nats, failed=True)
        far.close()
        raise
    kill_all(procs, nats, failed=t.failed > 0)
    far.close()
    t.done()


if __name__ == "__main__":
    main()
