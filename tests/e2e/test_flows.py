"""Flows on the consumer core against a real nats-server and a real HTTP sink:
exact payloads end to end, retries then the dead-letter queue, undecodable input, a
sink that is down for a while."""
import json
import os
import time

from gustlib import SOURCE_DIR, BUILD, Checks, Gust, HttpSink, NatsServer, TempDir, nats_publish, wait_for

ORDER = {"id": "SO#1001", "email": "Jane.Doe@ACME.com", "total_price": "347.00", "t": 1764400000000,
         "shipping_address": {"country": "France"},
         "line_items": [{"sku": "A-12", "quantity": "2", "unit_price_cents": 9900},
                        {"sku": "B-07", "quantity": "1", "unit_price_cents": 14900},
                        {"sku": "C-33", "quantity": "4", "unit_price_cents": 450}]}
EXPECTED = {"order_ref": "1001", "customer_email": "jane.doe@acme.com", "total_eur": 347, "country": "FR",
            "positions": [{"sku": "A-12", "qty": 2, "unit_eur": 99}, {"sku": "B-07", "qty": 1, "unit_eur": 149},
                          {"sku": "C-33", "qty": 4, "unit_eur": 4.5}], "t": 1764400000000}

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 3; retry_delay 100ms; }
flow orders { script %(src)s/scripts/bench_orders.lua; source ev.orders; }
sink crm { use http_out; source ev.orders.out; url http://127.0.0.1:%(sink)d/hit; timeout 1s; }
flow picky { script %(tmp)s/picky.lua; }
"""

PICKY = """
-- throws on events marked bad; passes the others on
return {
  source = "ev.picky",
  on_event = function(ev)
    if ev.bad then error("refusing event " .. ev.n) end
    emit("ev.picky.out", { n = ev.n })
  end,
}
"""


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("picky.lua", PICKY)
    nats = NatsServer(tmp)
    up = {"on": True}
    sink = HttpSink(status=lambda body: 200 if up["on"] else 503)
    conf = CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "src": SOURCE_DIR,
                   "sink": sink.port, "tmp": tmp.path}
    g = Gust(tmp, conf)
    try:
        # ingest -> flow -> http_out -> sink: the exact payload of bench/WORKLOAD.md.
        status, _, _ = g.request("POST", "/ingest/orders", json.dumps(ORDER).encode())
        t.eq(status, 202, "ingest")
        got = wait_for(lambda: sink.received(), 10, "the sink to receive the order")
        t.eq([json.loads(b) for b in got], [EXPECTED], "exact payload at the sink")

        # A flow that throws on some events: those are retried max_deliver (3) times, then
        # dead-lettered once with the Lua error; the rest of their batch goes through.
        batch = [("ev.picky", json.dumps({"n": i, "bad": i in (3, 7)}).encode()) for i in range(10)]
        nats_publish(nats.port, batch)
        def dlq_picky():
            return [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq.picky"]
        dead = wait_for(lambda: len(dlq_picky()) >= 2 and dlq_picky(), 15, "two dead letters")
        t.eq(sorted(json.loads(d["payload"])["n"] for d in dead), [3, 7], "the two bad events are dead")
        for d in dead:
            t.eq(d["attempts"], 3, "attempts in the envelope")
            t.eq(d["unit"], "picky", "unit in the envelope")
            t.eq(d["original_subject"], "ev.picky", "original subject")
            t.check("refusing event" in d["error"] and "picky.lua" in d["error"], "Lua error with location: " + d["error"])
            t.check("traceback" in d["error"], "traceback in the error")
            t.check("dead_at" in d and "first_seen" in d, "timestamps")
        outs = sorted(json.loads(m[2])["n"] for m in nats.read_stream() if m[1] == "ev.picky.out")
        t.eq(outs, [0, 1, 2, 4, 5, 6, 8, 9], "the good events of the batch were emitted once each")
        time.sleep(1)
        t.eq(len(dlq_picky()), 2, "each bad event is dead-lettered exactly once")

        # Malformed JSON straight into the stream: dead-lettered at once (attempts 1).
        nats_publish(nats.port, [("ev.orders", b'{"id": "SO#1", broken'), ("ev.orders", b"\xff\xfe")])
        def dlq_orders():
            return [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq.orders"]
        dead = wait_for(lambda: len(dlq_orders()) >= 2 and dlq_orders(), 10, "undecodable events dead-lettered")
        t.eq([d["attempts"] for d in dead], [1, 1], "undecodable: one attempt")
        t.eq(dead[0].get("payload"), '{"id": "SO#1", broken', "payload kept as text")
        t.eq(dead[1].get("payload_base64"), "//4=", "non-UTF-8 payload kept as base64")

        # The sink is down for a while, then up: every message is delivered.
        before = len(sink.received())
        up["on"] = False
        for i in range(20):
            o = dict(ORDER, id="SO#%d" % (5000 + i))
            t.eq(g.request("POST", "/ingest/orders", json.dumps(o).encode())[0], 202, "ingest while sink is down")
        time.sleep(2)
        t.eq(len(sink.received()), before, "nothing delivered while the sink is down")
        up["on"] = True
        wait_for(lambda: len(sink.received()) >= before + 20, 30, "delivery after the sink is back")
        refs = sorted(json.loads(b)["order_ref"] for b in sink.received()[before:])
        t.eq(sorted(set(refs)), sorted(str(5000 + i) for i in range(20)), "all 20 delivered after the outage")

        status, body, _ = g.request("GET", "/units")
        units = {u["name"]: u for u in json.loads(body)["units"]}
        t.eq(sorted(units), ["crm", "orders", "picky"], "/units lists the units")
        t.eq(units["picky"]["dead_letters"], 2, "/units counts dead letters")
        t.check(units["crm"]["events_failed"] > 0 and units["crm"]["last_error"], "/units shows the sink's failures")
        status, body, _ = g.request("GET", "/metrics")
        t.check('gust_unit_dead_letters_total{unit="picky",kind="flow"} 2' in body.decode(), "per-unit metrics")
        t.eq(g.stop(), 0, "clean stop")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        sink.close()
        nats.stop()
        if t.failed:
            print(g.log()[-5000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
